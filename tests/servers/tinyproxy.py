"""tinyproxy, the forward proxy from Debian, on a free loopback port with its own configuration.

    with Tinyproxy() as proxy:
        proxy.address             # http://127.0.0.1:<port>, for HTTP_PROXY / HTTPS_PROXY
        proxy.log_text()          # its log: one line per request it carried (CONNECT included)

It runs in the foreground (``-d``) under this launcher, allows only
127.0.0.1, and logs at ``Info``, which names every request and tunnel it
opened. As root it runs as the tests' unprivileged user (``setpriv``).
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from ._common import (
    INSTALL_HINT,
    Launcher,
    ServerMissing,
    free_port,
    stop_process,
    system_path,
    system_which,
    unprivileged_prefix,
    wait_until,
)

__all__ = ["Tinyproxy"]


class Tinyproxy(Launcher):
    """A real tinyproxy in a temporary folder, stopped and removed on exit."""

    folder_prefix = "tinyproxy-"

    def __init__(self) -> None:
        super().__init__()
        binary = system_which("tinyproxy") or str(system_path("/usr/bin/tinyproxy"))
        if not Path(binary).exists():
            raise ServerMissing(f"tinyproxy is not installed: {INSTALL_HINT}")
        self.binary = binary
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        assert self.folder is not None
        return self.folder / "tinyproxy.log"

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def _launch(self) -> None:
        assert self.folder is not None
        self.port = free_port()
        root = os.geteuid() == 0
        lines = [
            f"Port {self.port}",
            "Listen 127.0.0.1",
            "Timeout 30",
            f'LogFile "{self.log}"',
            "LogLevel Info",
            "MaxClients 32",
            "Allow 127.0.0.1",
            # No ConnectPort lines: CONNECT may reach any port (the test servers' free ones).
            "DisableViaHeader Yes",
        ]
        config = self.folder / "tinyproxy.conf"
        config.write_text("\n".join(lines) + "\n")
        self.log.touch()
        prefix = unprivileged_prefix(self.folder) if root else []
        self.process = subprocess.Popen(
            [*prefix, self.binary, "-d", "-c", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=open(self.folder / "stderr.log", "wb"),  # noqa: SIM115 - the process owns it
            start_new_session=True,
        )
        wait_until(
            self._listening,
            timeout=15,
            what="tinyproxy",
            process=self.process,
            log=self.folder / "stderr.log",
        )

    def _listening(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
            return True

    def _shutdown(self) -> None:
        if self.process is not None:
            stop_process(self.process)
            self.process = None
