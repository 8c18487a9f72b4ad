"""nginx from Debian (``nginx-light``) on loopback, as a TLS-terminating reverse proxy.

    with Nginx(["127.0.0.1:8201"], backup=["127.0.0.1:8200"]) as proxy:
        SecretsClient(proxy.address, token, ca_file=str(proxy.ca_file))
        proxy.restart()                 # killed hard, started again on the same port
        proxy.access_records()          # one dict per request nginx answered

The test's own process, with its own configuration, prefix, pid file, temporary
folders and logs, all in a temporary folder; as root it runs as the launchers'
unprivileged user. It serves https with a certificate for 127.0.0.1 signed by a
CA made for it (``proxy.ca_file``), or plain http with ``tls=False`` (a recording
front end for clients that take no CA file), and proxies to its upstream entries the way
production front ends are set up in front of OpenBao:

- HTTP/1.1 with keep-alive to the upstream (``proxy_http_version 1.1``, an empty
  ``Connection`` header, ``keepalive`` in the upstream block);
- ``proxy_next_upstream error timeout`` (nginx's default): a request that failed
  on one entry goes to the next, except a POST (or PATCH, LOCK) already sent;
- ``backup`` entries get requests only when the main ones failed, so the order
  of the entries is deterministic (the first entry is always tried first);
  ``max_fails=0`` keeps a failed main entry in rotation, so it is tried again as
  soon as it is back.

The access log records, per request, the upstream addresses tried and their
statuses (``"127.0.0.1:1, 127.0.0.1:2"``, ``"502, 200"``), which shows nginx's
retries to the next entry.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._common import (
    INSTALL_HINT,
    Launcher,
    ServerFailed,
    ServerMissing,
    free_port,
    stop_process,
    system_path,
    system_which,
    unprivileged_prefix,
    wait_until,
)

NGINX = "/usr/sbin/nginx"
_TEMP_FOLDERS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")

# One JSON object a line; escape=json keeps request lines with quotes valid JSON.
_LOG_FORMAT = (
    '{"method":"$request_method","uri":"$request_uri","status":"$status",'
    '"upstream_addr":"$upstream_addr","upstream_status":"$upstream_status",'
    '"connection":"$connection","connection_requests":"$connection_requests"}'
)


def nginx_binary() -> str:
    nginx = system_path(NGINX)
    found = str(nginx) if os.access(nginx, os.X_OK) else system_which("nginx")
    if not found:
        raise ServerMissing(f"nginx (Debian package nginx-light) is not installed: {INSTALL_HINT}")
    return found


class Nginx(Launcher):
    """A real nginx in front of ``upstreams`` (then ``backup``), stopped and removed on exit.

    Entries are ``host:port`` of plain-HTTP servers. ``keepalive`` is the number of
    idle upstream connections each worker keeps.
    """

    folder_prefix = "nginx-"

    def __init__(
        self,
        upstreams: Sequence[str],
        *,
        backup: Sequence[str] = (),
        keepalive: int = 32,
        read_timeout: float = 30,
        tls: bool = True,
    ) -> None:
        if not upstreams:
            raise ValueError("nginx needs at least one upstream entry")
        super().__init__()
        self.binary = nginx_binary()
        self.upstreams = list(upstreams)
        self.backup = list(backup)
        self.keepalive = keepalive
        self.read_timeout = read_timeout
        self.tls = tls
        self.port = 0
        self.starts = 0
        self._prefix: list[str] = []
        self._process: subprocess.Popen[bytes] | None = None

    # -- where it is -------------------------------------------------------------
    @property
    def address(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def ca_file(self) -> Path:
        """The CA that signed nginx's certificate: the clients' ``ca_file``."""
        assert self.folder is not None, "not started"
        return self.folder / "ca.pem"

    @property
    def error_log(self) -> Path:
        assert self.folder is not None, "not started"
        return self.folder / "error.log"

    @property
    def access_log(self) -> Path:
        assert self.folder is not None, "not started"
        return self.folder / "access.log"

    def access_records(self) -> list[dict[str, Any]]:
        """Every request nginx has logged (across restarts), oldest first."""
        try:
            lines = self.access_log.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return []
        # A hard kill can cut the last line short.
        records = []
        for line in lines:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return records

    # -- lifecycle ---------------------------------------------------------------
    def _launch(self) -> None:
        assert self.folder is not None
        from tests._sockets import certificate_files

        _, _, key = certificate_files(self.folder)  # ca.pem, server.pem, server-key.pem
        key.chmod(0o600)
        for name in _TEMP_FOLDERS:
            (self.folder / "temp" / name).mkdir(parents=True)
        self.port = free_port()
        (self.folder / "nginx.conf").write_text(self._config())
        self.error_log.touch()
        self.access_log.touch()
        self._prefix = unprivileged_prefix(self.folder)
        self._run()

    def _run(self) -> None:
        assert self.folder is not None
        with (self.folder / "stderr.log").open("ab") as out:
            self._process = subprocess.Popen(
                [
                    *self._prefix,
                    self.binary,
                    "-p",
                    f"{self.folder}/",
                    "-c",
                    str(self.folder / "nginx.conf"),
                    "-e",
                    str(self.error_log),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.starts += 1
        wait_until(
            self._listening, timeout=15, what="nginx", process=self._process, log=self.error_log
        )

    def _listening(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def kill(self) -> None:
        """Kill nginx hard (master and workers, SIGKILL): open connections break mid-request."""
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait(10)
        self._process = None

    def restart(self) -> None:
        """Kill nginx hard and start it again on the same port, with the same configuration."""
        self.kill()
        self._run()

    def _shutdown(self) -> None:
        if self._process is not None:
            stop_process(self._process)
            self._process = None

    def _config(self) -> str:
        assert self.folder is not None
        folder = self.folder
        servers = [f"    server {entry} max_fails=0;" for entry in self.upstreams]
        servers += [f"    server {entry} backup;" for entry in self.backup]
        temp = "\n".join(f"  {name}_temp_path {folder / 'temp' / name};" for name in _TEMP_FOLDERS)
        return f"""\
daemon off;
master_process on;
worker_processes 1;
pid {folder / "nginx.pid"};
error_log {self.error_log} info;
events {{
  worker_connections 1024;
}}
http {{
  log_format records escape=json '{_LOG_FORMAT}';
  access_log {self.access_log} records;
{temp}
  upstream openbao {{
{chr(10).join(servers)}
    keepalive {self.keepalive};
  }}
  server {{
{self._listen()}
    client_max_body_size 16m;
    location / {{
      proxy_pass http://openbao;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_next_upstream error timeout;
      proxy_connect_timeout 5s;
      proxy_read_timeout {self.read_timeout:g}s;
      proxy_send_timeout {self.read_timeout:g}s;
    }}
  }}
}}
"""

    def _listen(self) -> str:
        assert self.folder is not None
        if not self.tls:
            return f"    listen 127.0.0.1:{self.port};"
        return (
            f"    listen 127.0.0.1:{self.port} ssl;\n"
            f"    ssl_certificate {self.folder / 'server.pem'};\n"
            f"    ssl_certificate_key {self.folder / 'server-key.pem'};"
        )

    def __repr__(self) -> str:
        state = self.address if self._process else "stopped"
        return f"<Nginx {state} -> {', '.join(self.upstreams + self.backup)}>"


__all__ = ["Nginx", "ServerFailed", "nginx_binary"]
