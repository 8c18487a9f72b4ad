"""PostgreSQL on loopback from the Debian package: ``initdb`` and ``pg_ctl`` in a temporary folder.

    with Postgres() as pg:
        pg.url                    # postgresql://postgres:<password>@127.0.0.1:<port>/postgres
        pg.connect()              # a psycopg connection as the superuser

PostgreSQL refuses to run as root: as root, the launcher runs it as an
unprivileged system user (see ``_common.unprivileged_prefix``).
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path
from typing import Any

from ._common import (
    INSTALL_HINT,
    Launcher,
    ServerFailed,
    ServerMissing,
    free_port,
    log_tail,
    system_glob,
    unprivileged_prefix,
    wait_until,
)

SUPERUSER = "postgres"


def postgres_bin() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` that has ``initdb`` and ``pg_ctl``."""
    candidates = sorted(
        system_glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    if not candidates:
        raise ServerMissing(f"PostgreSQL (initdb, pg_ctl) is not installed: {INSTALL_HINT}")
    return Path(candidates[-1]).parent


class Postgres(Launcher):
    """A real PostgreSQL cluster in a temporary folder, stopped and removed on exit."""

    folder_prefix = "postgres-"

    def __init__(self) -> None:
        super().__init__()
        self.bin = postgres_bin()
        self.port = 0
        self.user = SUPERUSER
        self.password = secrets.token_hex(16)
        self._prefix: list[str] = []
        self._env: dict[str, str] = {}

    @property
    def host(self) -> str:
        return "127.0.0.1"

    @property
    def url(self) -> str:
        """The superuser's connection URL."""
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/postgres"

    @property
    def template_url(self) -> str:
        """The connection URL with OpenBao's ``{{username}}`` / ``{{password}}`` template."""
        return f"postgresql://{{{{username}}}}:{{{{password}}}}@{self.host}:{self.port}/postgres"

    def connect(self, user: str | None = None, password: str | None = None) -> Any:
        """A psycopg connection (autocommit) as ``user`` (the superuser by default)."""
        import psycopg

        return psycopg.connect(
            host=self.host,
            port=self.port,
            dbname="postgres",
            user=user or self.user,
            password=self.password if password is None else password,
            autocommit=True,
            connect_timeout=5,
        )

    def roles(self) -> set[str]:
        """The names of the login roles that exist right now."""
        with self.connect() as conn:
            rows = conn.execute("SELECT rolname FROM pg_roles WHERE rolcanlogin").fetchall()
        return {str(row[0]) for row in rows}

    # -- lifecycle ---------------------------------------------------------------
    def _run(self, *args: str) -> None:
        done = subprocess.run(
            [*self._prefix, *args], env=self._env, capture_output=True, stdin=subprocess.DEVNULL
        )
        if done.returncode != 0:
            output = (done.stdout + done.stderr).decode(errors="replace")
            log = log_tail(self.folder / "server.log") if self.folder else ""
            raise ServerFailed(f"{args[0]} failed ({done.returncode}):\n{output}\n{log}")

    def _launch(self) -> None:
        assert self.folder is not None
        data, sockets = self.folder / "data", self.folder / "sockets"
        sockets.mkdir()
        pwfile = self.folder / "pwfile"
        pwfile.write_text(self.password + "\n")
        self._prefix = unprivileged_prefix(self.folder)
        self._env = {
            "HOME": str(self.folder),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
        }
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(data),
            "-U",
            self.user,
            f"--pwfile={pwfile}",
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "--encoding=UTF8",
            "--no-sync",
        )
        pwfile.unlink()
        self.port = free_port()
        options = (
            f"-p {self.port} -k {sockets} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(self.folder / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )
        wait_until(self._answers, timeout=30, what="PostgreSQL", log=self.folder / "server.log")

    def _answers(self) -> bool:
        with self.connect() as conn:
            conn.execute("SELECT 1")
        return True

    def _shutdown(self) -> None:
        assert self.folder is not None
        if (self.folder / "data" / "postmaster.pid").exists():
            subprocess.run(
                [
                    *self._prefix,
                    str(self.bin / "pg_ctl"),
                    "-D",
                    str(self.folder / "data"),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
                env=self._env,
                capture_output=True,
                stdin=subprocess.DEVNULL,
            )

    def __repr__(self) -> str:
        return f"<Postgres 127.0.0.1:{self.port}>" if self.folder else "<Postgres stopped>"
