"""The secrets-server client: one object, one attribute per API area."""

from __future__ import annotations

from typing import Any

from .._client import ServiceClient
from .._config import secrets_settings
from .._errors import InputError
from .._http import RetryPolicy
from .._records import Record
from ._base import unwrap
from .auth import Auth
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

__all__ = ["LOGIN_METHODS", "SecretsClient"]

LOGIN_METHODS = ("approle", "userpass", "ldap", "jwt", "kubernetes", "oidc", "cert")
_CLIENT_OPTIONS = frozenset(
    {
        "namespace",
        "timeout",
        "verify",
        "ca_file",
        "client_cert",
        "client_key",
        "server_name",
        "max_concurrency",
        "pipeline",
        "retry",
        "transport",
    }
)


class SecretsClient(ServiceClient):
    """A client of the secrets-management server API (spec 001), base path ``/v1``.

    ``address``, ``token`` and ``namespace`` default to ``VAULT_ADDR``,
    ``VAULT_TOKEN``, ``VAULT_NAMESPACE`` (or ``BAO_*``). The token is sent as
    ``X-Service-Token`` (the spec's header) and ``X-Vault-Token`` (what
    OpenBao and Vault read); the namespace as ``X-Vault-Namespace``.

    Without a token argument it comes from ``VAULT_TOKEN`` / ``BAO_TOKEN``, else
    the CLI's ``~/.vault-token``; :meth:`for_login` makes a client with none, to
    log in with :attr:`auth` (AppRole, userpass, LDAP, JWT, Kubernetes, OIDC,
    certificates), and :meth:`login` does both. Client certificates come from
    ``client_cert`` / ``client_key`` (``VAULT_CLIENT_CERT`` / ``VAULT_CLIENT_KEY``)
    and the name checked on the server's certificate from ``server_name``
    (``VAULT_TLS_SERVER_NAME``).

    Areas: :attr:`auth`, :attr:`password_policies`, :attr:`policies`, :attr:`rekey`,
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
        client_cert: str | None = None,
        client_key: str | None = None,
        server_name: str | None = None,
        max_concurrency: int = 8,
        pipeline: int = 8,
        retry: RetryPolicy | None = None,
        transport: Any = None,
        require_token: bool = True,
    ) -> None:
        settings = secrets_settings(
            address,
            token,
            namespace=namespace,
            ca_file=ca_file,
            verify=verify,
            client_cert=client_cert,
            client_key=client_key,
            server_name=server_name,
            require_token=require_token,
        )
        self.namespace = settings.namespace
        self.token_source = settings.token_source
        headers: dict[str, str] = {}
        if settings.token:
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
        self.auth = Auth(self.http, client_certificate=settings.client_cert)
        self.last_login: Record | None = None
        self.password_policies = PasswordPolicies(self.http)
        self.policies = Policies(self.http)
        self.rekey = Rekey(self.http)
        self.seal = Seal(self.http)
        self.leases = Leases(self.http)
        self.plugins = Plugins(self.http)
        self.tokens = Tokens(self.http)
        self.keymgmt = KeyManagement(self.http)
        self.ad = Directory(self.http)
        self.database = Database(self.http)
        self.broker = Broker(self.http)
        self.pki = PKI(self.http)

    @classmethod
    def for_login(cls, address: str | None = None, **options: Any) -> SecretsClient:
        """A client that holds no token yet, to log in with :attr:`auth`
        (``client.auth.approle(...)``, ``client.auth.userpass(...)``, ...).

        ``options`` are the constructor's (TLS files, namespace, timeout, ...).
        """
        return cls(address, None, require_token=False, **options)

    @classmethod
    def login(cls, method: str, address: str | None = None, /, **fields: Any) -> SecretsClient:
        """A client logged in with ``method`` (``"approle"``, ``"userpass"``, ``"ldap"``,
        ``"jwt"``, ``"kubernetes"``, ``"oidc"``, ``"cert"``) and that method's
        ``fields``; client options (``namespace``, ``ca_file``, ``client_cert``,
        ...) may be given among them. The login record is ``client.last_login``."""
        login = getattr(Auth, method, None) if method in LOGIN_METHODS else None
        if login is None:
            raise InputError(f"unknown login method {method!r}: one of {', '.join(LOGIN_METHODS)}")
        client_options = {k: fields.pop(k) for k in list(fields) if k in _CLIENT_OPTIONS}
        client = cls.for_login(address, **client_options)
        try:
            client.last_login = login(client.auth, **fields)
        except BaseException:
            client.close()
            raise
        return client

    def close(self) -> None:
        """Stop the token's background renewal (if any), then the connections."""
        self.auth.stop_renewing()
        super().close()

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
