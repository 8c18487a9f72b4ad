"""RabbitMQ on loopback from the Debian package, with the management plugin.

    with RabbitMQ() as mq:
        mq.management_url         # http://127.0.0.1:<port>, the management HTTP API
        mq.user, mq.password      # an administrator

The node gets its own name, cookie, Erlang port mapper port, data and config in
a temporary folder, so it clashes with no other node on the machine. As root it
runs as an unprivileged system user (see ``_common.unprivileged_prefix``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

import httpx

from ._common import (
    INSTALL_HINT,
    Launcher,
    ServerMissing,
    free_port,
    stop_process,
    system_glob,
    unprivileged_prefix,
    wait_until,
)

ADMIN_USER = "toolkit-admin"
# The first start of a node (database creation, plugin expansion) takes a while.
START_TIMEOUT = 180


def rabbitmq_server_script() -> Path:
    """The package's ``rabbitmq-server`` script itself (not the wrapper that switches user)."""
    found = system_glob("/usr/lib/rabbitmq/lib/rabbitmq_server-*/sbin/rabbitmq-server")
    if not found:
        raise ServerMissing(f"RabbitMQ (rabbitmq-server) is not installed: {INSTALL_HINT}")
    return Path(found[-1])


class RabbitMQ(Launcher):
    """A real RabbitMQ node in a temporary folder, stopped and removed on exit."""

    folder_prefix = "rabbitmq-"

    def __init__(self) -> None:
        super().__init__()
        self.script = rabbitmq_server_script()
        self.port = 0
        self.management_port = 0
        self.user = ADMIN_USER
        self.password = secrets.token_hex(16)
        self.node = f"toolkit-{secrets.token_hex(4)}@localhost"
        self._process: subprocess.Popen[bytes] | None = None
        self._epmd: subprocess.Popen[bytes] | None = None

    @property
    def management_url(self) -> str:
        return f"http://127.0.0.1:{self.management_port}"

    @property
    def log(self) -> Path:
        assert self.folder is not None, "not started"
        return self.folder / "server.log"

    def management(self, user: str | None = None, password: str | None = None) -> httpx.Client:
        """A client of the management HTTP API, as the administrator unless told otherwise."""
        auth = (user or self.user, self.password if password is None else password)
        return httpx.Client(base_url=f"{self.management_url}/api", auth=auth, timeout=30)

    # -- lifecycle ---------------------------------------------------------------
    def _launch(self) -> None:
        assert self.folder is not None
        self.port, self.management_port = free_port(), free_port()
        dist_port, epmd_port = free_port(), free_port()
        config = self.folder / "rabbitmq.conf"
        config.write_text(
            "\n".join(
                [
                    f"listeners.tcp.default = 127.0.0.1:{self.port}",
                    f"management.tcp.port = {self.management_port}",
                    "management.tcp.ip = 127.0.0.1",
                    f"default_user = {self.user}",
                    f"default_pass = {self.password}",
                    "default_user_tags.administrator = true",
                    "log.console = true",
                    "log.console.level = warning",
                    "log.file = false",
                ]
            )
            + "\n"
        )
        (self.folder / "enabled_plugins").write_text("[rabbitmq_management].\n")
        cookie = self.folder / ".erlang.cookie"
        cookie.write_text(secrets.token_hex(16))
        cookie.chmod(0o400)
        prefix = unprivileged_prefix(self.folder)
        env = {
            "HOME": str(self.folder),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "RABBITMQ_NODENAME": self.node,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(dist_port),
            "ERL_EPMD_PORT": str(epmd_port),
            "ERL_EPMD_ADDRESS": "127.0.0.1",
            "RABBITMQ_CONFIG_FILE": str(config),
            "RABBITMQ_ADVANCED_CONFIG_FILE": str(self.folder / "advanced.config"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(self.folder / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(self.folder / "mnesia"),
            "RABBITMQ_LOG_BASE": str(self.folder / "log"),
            "RABBITMQ_CONF_ENV_FILE": str(self.folder / "rabbitmq-env.conf"),
            "RABBITMQ_PID_FILE": str(self.folder / "rabbitmq.pid"),
        }
        with self.log.open("wb") as log:
            # Our own port mapper in the foreground, so that stopping the node leaves no daemon.
            self._epmd = subprocess.Popen(
                [
                    *prefix,
                    shutil.which("epmd") or "epmd",
                    "-port",
                    str(epmd_port),
                    "-address",
                    "127.0.0.1",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
            self._process = subprocess.Popen(
                [*prefix, str(self.script)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=self.folder,
                start_new_session=True,
            )
        wait_until(
            self._answers,
            timeout=START_TIMEOUT,
            what="RabbitMQ",
            process=self._process,
            log=self.log,
        )

    def _answers(self) -> bool:
        with self.management() as http:
            return http.get("overview", timeout=2).status_code == 200

    def _shutdown(self) -> None:
        if self._process is not None:
            stop_process(self._process, timeout=30)
            self._process = None
        if self._epmd is not None:
            stop_process(self._epmd)
            self._epmd = None

    def __repr__(self) -> str:
        return f"<RabbitMQ 127.0.0.1:{self.port}>" if self._process else "<RabbitMQ stopped>"
