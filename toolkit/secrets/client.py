"""The secrets-server client: one object, one attribute per API area."""

from __future__ import annotations

from typing import Any

from .._client import ServiceClient
from .._config import secrets_settings
from .._http import RetryPolicy
from ._base import unwrap
from .broker import Broker
from .database import Database
from .directory import Directory
from .keymgmt import KeyManagement
from .leases import Leases
from .password_policies import PasswordPolicies
from .pki import PKI
from .plugins import Plugins
from .policies import Policies
from .rekey import Rekey
from .seal import Seal
from .tokens import Tokens

__all__ = ["SecretsClient"]


class SecretsClient(ServiceClient):
    """A client of the secrets-management server API (spec 001), base path ``/v1``.

    ``address``, ``token`` and ``namespace`` default to ``VAULT_ADDR``,
    ``VAULT_TOKEN``, ``VAULT_NAMESPACE`` (or ``BAO_*``). The token is sent as
    ``X-Service-Token`` (the spec's header) and ``X-Vault-Token`` (what
    OpenBao and Vault read); the namespace as ``X-Vault-Namespace``.

    Areas: :attr:`password_policies`, :attr:`policies`, :attr:`rekey`, :attr:`recovery_rekey`,
    :attr:`seal`, :attr:`leases`, :attr:`plugins`, :attr:`tokens`; the
    engines at their default mounts: :attr:`keymgmt`, :attr:`ad`,
    :attr:`database`, :attr:`broker`, :attr:`pki` (each has ``.at(mount)``
    for an engine mounted elsewhere).
    """

    def __init__(
        self,
        address: str | None = None,
        token: str | None = None,
        *,
        namespace: str | None = None,
        timeout: float = 30.0,
        verify: bool | None = None,
        ca_file: str | None = None,
        max_concurrency: int = 8,
        pipeline: int = 8,
        retry: RetryPolicy | None = None,
        transport: Any = None,
    ) -> None:
        settings = secrets_settings(
            address, token, namespace=namespace, ca_file=ca_file, verify=verify
        )
        self.namespace = settings.namespace
        headers = {"X-Service-Token": settings.token, "X-Vault-Token": settings.token}
        if settings.namespace:
            headers["X-Vault-Namespace"] = settings.namespace
        super().__init__(
            settings,
            "/v1",
            headers,
            timeout=timeout,
            max_concurrency=max_concurrency,
            pipeline=pipeline,
            retry=retry,
            transport=transport,
        )
        self.password_policies = PasswordPolicies(self.http)
        self.policies = Policies(self.http)
        self.rekey = Rekey(self.http)
        # The recovery shares of a seal that stores the root key (auto-unseal).
        self.recovery_rekey = Rekey(self.http, target="recovery")
        self.seal = Seal(self.http)
        self.leases = Leases(self.http)
        self.plugins = Plugins(self.http)
        self.tokens = Tokens(self.http)
        self.keymgmt = KeyManagement(self.http)
        self.ad = Directory(self.http)
        self.database = Database(self.http)
        self.broker = Broker(self.http)
        self.pki = PKI(self.http)

    def mounts(self) -> dict[str, dict[str, Any]]:
        """The mounted secrets engines, by path (``secret/``, ...). ``GET /sys/mounts``."""
        data = unwrap(self.http.json("GET", "/sys/mounts"))
        return {k: dict(v) for k, v in data.items() if k.endswith("/") and isinstance(v, dict)}

    def enable_engine(
        self,
        path: str,
        engine_type: str,
        *,
        description: str = "",
        default_lease_ttl: str | int | None = None,
        max_lease_ttl: str | int | None = None,
        options: dict[str, str] | None = None,
    ) -> None:
        """Mount a secrets engine of ``engine_type`` at ``path``. ``POST /sys/mounts/:path``."""
        config = {
            k: v
            for k, v in (("default_lease_ttl", default_lease_ttl), ("max_lease_ttl", max_lease_ttl))
            if v is not None
        }
        body: dict[str, Any] = {"type": engine_type, "description": description, "config": config}
        if options:
            body["options"] = options
        self.http.json("POST", "/sys/mounts/" + path.strip("/"), json=body)

    def disable_engine(self, path: str) -> None:
        """Unmount the engine at ``path``, revoking its leases. ``DELETE /sys/mounts/:path``."""
        self.http.json("DELETE", "/sys/mounts/" + path.strip("/"))

    def tune_mount(
        self,
        path: str,
        *,
        default_lease_ttl: str | int | None = None,
        max_lease_ttl: str | int | None = None,
    ) -> None:
        """Change a mount's lease ttls. ``POST /sys/mounts/:path/tune``."""
        body = {
            k: v
            for k, v in (("default_lease_ttl", default_lease_ttl), ("max_lease_ttl", max_lease_ttl))
            if v is not None
        }
        self.http.json("POST", "/sys/mounts/" + path.strip("/") + "/tune", json=body)
