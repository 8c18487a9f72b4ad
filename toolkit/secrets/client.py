"""The secrets-server client: one object, one attribute per API area."""

from __future__ import annotations

import copy
import time
from datetime import UTC, datetime
from typing import Any, cast
from urllib.parse import urlsplit

from .._card import connection_card, format_seconds
from .._client import ExplainingLayer, ServiceClient
from .._config import hidden_token, secrets_settings
from .._errors import (
    InputError,
    MountNotFound,
    NamespaceNotFound,
    NotFound,
    PermissionDenied,
    TokenRefused,
    ToolkitError,
    Unauthorized,
    is_wrapped,
)
from .._http import RetryPolicy, decode_json
from .._http.layer import FAN_OUT_TIMEOUT
from .._http.response import Response
from .._masking import Sensitive
from .._records import Record
from .._spec.headers import NAMESPACE_HEADER, TOKEN_HEADERS
from ._base import listed_keys, refuse_missing, unwrap
from .access import Access
from .auth import Auth
from .engines import EngineAreas, area_slots, mounted_engines
from .leases import Leases
from .namespaces import Namespaces
from .password_policies import PasswordPolicies
from .plugins import Plugins
from .policies import Policies
from .rekey import Rekey
from .seal import Seal
from .standby import FollowStandby
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
        "fan_out_timeout",
        "retry",
        "connector",
    }
)


class SecretsClient(EngineAreas, ServiceClient):
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

    Areas: :attr:`access` (who can do what), :attr:`auth`, :attr:`password_policies`, :attr:`policies`, :attr:`rekey`,
    :attr:`recovery_rekey`,
    :attr:`seal`, :attr:`leases`, :attr:`plugins`, :attr:`tokens`,
    :attr:`namespaces` (the namespace walk; :meth:`in_namespace` for one); the
    engines of :class:`~.engines.EngineAreas`, each at its default mount and named for it
    (``client.pki``, ``client.ad``, ...: ``ENGINE_AREAS`` lists them; each has
    ``.at(mount)`` for an engine mounted elsewhere).
    """

    def __init__(
        self,
        address: str | None = None,
        token: str | Sensitive | None = None,
        *,
        namespace: str | None = None,
        timeout: float = 30.0,
        verify: bool | None = None,
        ca_file: str | None = None,
        fan_out_timeout: float = FAN_OUT_TIMEOUT,
        client_cert: str | None = None,
        client_key: str | None = None,
        server_name: str | None = None,
        max_concurrency: int = 8,
        retry: RetryPolicy | None = None,
        connector: Any = None,
        require_token: bool = True,
    ) -> None:
        token = hidden_token(token)  # no frame of a failed construction holds it plain
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
        headers: dict[str, str | Sensitive] = {}
        if settings.token:
            headers = dict.fromkeys(TOKEN_HEADERS, Sensitive(settings.token, "token"))
        if settings.namespace:
            headers[NAMESPACE_HEADER] = settings.namespace
        super().__init__(
            settings,
            "/v1",
            headers,
            timeout=timeout,
            fan_out_timeout=fan_out_timeout,
            max_concurrency=max_concurrency,
            retry=retry,
            connector=connector,
            redirects=FollowStandby(),
            token_headers=TOKEN_HEADERS,
        )
        self._client_cert = settings.client_cert
        self.last_login: Record | None = None
        # What this run learnt of its token: its expiry (from any lookup-self
        # answer), and when the server last accepted it or a look-up gave no verdict
        # (monotonic seconds).
        # (A namespace view shares this record with its client.)
        self._token_state = _TokenState()
        self.http.response_hooks.append(self._note_token)
        self.http.check_404 = refuse_missing
        self._make_areas()

    def _make_areas(self) -> None:
        """One object an API area, each on :attr:`http` (a namespace view's own, too)."""
        self.auth = Auth(self.http, client_certificate=self._client_cert)
        self.access = Access(self.http)
        self.password_policies = PasswordPolicies(self.http)
        self.policies = Policies(self.http)
        self.rekey = Rekey(self.http)
        # The recovery shares of a seal that stores the root key (auto-unseal).
        self.recovery_rekey = Rekey(self.http, target="recovery")
        self.seal = Seal(self.http)
        self.leases = Leases(self.http)
        self.plugins = Plugins(self.http)
        self.tokens = Tokens(self.http)
        for slot in area_slots(type(self)).values():
            slot.make(self)
        self.namespaces: Namespaces[SecretsClient] = Namespaces(self.http, self.in_namespace)

    def in_namespace(self, path: str) -> SecretsClient:
        """The same client, its calls sent in namespace ``path`` (``X-Vault-Namespace``).

        ``path`` is the full path from the root namespace (``"team-a/sub"``; ``""``
        or ``"root"`` is the root). The view shares this client's connections,
        token and settings; closing it closes nothing of this client's.
        """
        key = path.strip().strip("/")
        key = "" if key == "root" else key
        view = copy.copy(self)
        view.namespace = key + "/" if key else None
        # A copy of this client's layer, so an ExplainingLayer too.
        view.http = cast(
            ExplainingLayer, self.http.with_headers({NAMESPACE_HEADER: view.namespace})
        )
        view.last_login = None
        view._bind_explain()
        view._make_areas()
        return view

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
        return mounted_engines(self.http)

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

    # -- who and where: health, authentication, the connection card -------------------
    def health(self) -> Record:
        """The server's health. ``GET /sys/health`` (no token needed).

        Fields as the server gives them: ``initialized``, ``sealed``, ``standby``,
        ``version``, ``cluster_name``, ``server_time_utc``, ... A sealed, standby or
        uninitialised server answers with a status that says so, and that answer is
        returned, not raised; a server that does not answer raises
        :class:`~toolkit.ConnectError`.
        """
        response = self.http.request("GET", "/sys/health", ok_statuses=_HEALTH_STATUSES)
        return Record(unwrap(decode_json(response)), kind="health")

    # -- errors an operator can act on ------------------------------------------------
    def _note_token(self, response: Response) -> None:
        """Keep the token's expiry from any ``lookup-self`` answer (a response hook)."""
        if response.status_code != 200 or not response.url.endswith("/auth/token/lookup-self"):
            return
        state = self._token_state
        state.accepted_at = time.monotonic()
        try:
            expire = unwrap(response.json()).get("expire_time")
        except ValueError:
            return
        if isinstance(expire, str) and expire:
            try:
                when = datetime.fromisoformat(expire.replace("Z", "+00:00"))
            except ValueError:
                return
            state.expiry = when if when.tzinfo else when.replace(tzinfo=UTC)

    def explain(self, exc: ToolkitError) -> ToolkitError:
        """A 403 becomes :class:`TokenRefused` (log in again) or stays a missing
        permission (ask for a policy granting the capability on the path); a 404
        ``namespace not found`` becomes :class:`NamespaceNotFound`, ``no handler for
        route`` :class:`MountNotFound`, each naming what does not exist."""
        exc = super().explain(exc)
        if isinstance(exc, NotFound) and type(exc) is NotFound:
            return self._not_found(exc)
        if type(exc) in (PermissionDenied, Unauthorized):
            assert isinstance(exc, PermissionDenied | Unauthorized)
            return self._denied(exc)
        return exc

    def _api_path(self, url: str) -> str:
        path = urlsplit(url).path
        prefix = urlsplit(self.address).path.rstrip("/") + "/v1/"
        return path[len(prefix) :] if path.startswith(prefix) else path.lstrip("/")

    def _not_found(self, exc: NotFound) -> NotFound:
        text = exc.message.lower()
        if "namespace not found" in text:
            where = (self.namespace or "").rstrip("/") or "root"
            better = exc.restated(
                NamespaceNotFound,
                [f"namespace {where!r} does not exist (or this token may not see it)"],
                hint=(
                    "check VAULT_NAMESPACE / namespace=...: "
                    "`client.namespaces.list_namespaces()` in the parent lists the ones that exist"
                ),
            )
            better.namespace = where
            return better
        if "no handler for route" in text:
            return mount_not_found(exc, self._api_path(exc.url), self.namespace)
        if "unsupported path" in text and not exc.hint:
            mount = self._api_path(exc.url).split("/", 1)[0]
            exc.hint = (
                f"is {mount + '/'!r} a mount of this engine? "
                "`client.mounts()` lists the mounted engines and their types"
            )
        return exc

    def _denied(self, exc: PermissionDenied | Unauthorized) -> ToolkitError:
        path = self._api_path(exc.url)
        # The server's wording tells first: a token it accepts but that lacks the
        # capability gets "1 error occurred: * permission denied"; a token it does
        # not accept, a bare "permission denied" (spec README), confirmed by one
        # lookup-self (other 403s are worded plainly too).
        lacks = any(isinstance(e, str) and is_wrapped(e) for e in exc.errors)
        if not lacks and (path == "auth/token/lookup-self" or not self._token_still_accepted()):
            expiry = self._token_state.expiry
            expired = expiry is not None and expiry <= self.http.server_now()
            what = (
                f"the token expired at {expiry:%Y-%m-%d %H:%M:%S} UTC"
                if expired and expiry is not None
                else (
                    "the server does not accept the token (invalid, revoked or expired; "
                    "or a token that may not look itself up)"
                )
            )
            source = (
                f" in place of the one from {self.token_source}"
                if self.token_source not in ("", "argument")
                else ""
            )
            refused = exc.restated(
                TokenRefused,
                [what, *exc.messages],
                hint=(
                    f"log in again and use the new token{source} "
                    "(`bao login`, VAULT_TOKEN, or SecretsClient.login(...))"
                ),
            )
            refused.expired = expired
            return refused
        capability = _capability(exc.method, exc.url)
        where = f" in namespace {self.namespace.rstrip('/')!r}" if self.namespace else ""
        needed = [capability, "sudo"] if path.startswith(_SUDO_PATHS) else [capability]
        granted = ", ".join(f'"{c}"' for c in needed)
        exc.hint = (
            f"the token is valid but lacks {' and '.join(map(repr, needed))} on {path!r}{where}: "
            f'ask for a policy granting path "{path}" {{ capabilities = [{granted}] }}'
        )
        return exc

    def _token_still_accepted(self) -> bool:
        """Whether the server accepts the token: ``lookup-self`` once, unless it answered
        200 in the last :data:`_TOKEN_VERDICT_SECONDS` (a walk that meets many 403s
        looks the token up once)."""
        state = self._token_state
        seen = state.accepted_at
        lapsed = state.expiry is not None and state.expiry <= self.http.server_now()
        if not lapsed and seen is not None and time.monotonic() - seen < _TOKEN_VERDICT_SECONDS:
            return True
        try:
            return self.is_authenticated()
        except ToolkitError:
            # No verdict: say what the server said, a missing permission, and do not
            # ask again (with its retries) for every refusal of the same walk.
            state.accepted_at = time.monotonic()
            return True

    def is_authenticated(self) -> bool:
        """True when the server accepts the token. ``GET /auth/token/lookup-self``.

        False when it is refused (401 or 403); anything else (no answer, a sealed
        server) raises, since it says nothing about the token.
        """
        try:
            self.http.request("GET", "/auth/token/lookup-self")
        except (Unauthorized, PermissionDenied):
            return False
        return True

    def connection(self) -> Record:
        """Where this client points and what the server says of it and of the token.

        ``address``, ``namespace``, ``state``, ``version``, ``cluster``, ``seal``,
        ``authenticated``, and the token's ``display_name``, ``policies``, ``ttl``
        and ``expire_time`` (never the token). From ``GET /sys/health``,
        ``GET /sys/seal-status`` and ``GET /auth/token/lookup-self``. Never raises:
        what could not be read is said in ``problem``.
        """
        facts: dict[str, Any] = {
            "address": self.address,
            "namespace": self.namespace or "root (none set)",
        }
        try:
            health = self.health()
        except ToolkitError as exc:
            return Record({**facts, "state": "unreachable", "problem": str(exc)}, kind="connection")
        sealed = bool(health.get("sealed"))
        facts["state"] = "sealed" if sealed else "standby" if health.get("standby") else "active"
        facts["version"] = health.get("version")
        facts["cluster"] = health.get("cluster_name")
        try:
            facts["seal"] = _describe_seal(self.seal.status())
        except ToolkitError as exc:
            facts["seal"] = f"sealed: {sealed} (seal status not read: {exc})"
        if sealed:
            # A sealed server refuses every authenticated call: nothing to learn of the token.
            facts["authenticated"] = "unknown while sealed"
            return Record(facts, kind="connection")
        try:
            token = unwrap(self.http.json("GET", "/auth/token/lookup-self"))
        except (Unauthorized, PermissionDenied):
            facts["authenticated"] = False
        except ToolkitError as exc:
            facts["authenticated"] = "unknown"
            facts["problem"] = f"token not looked up: {exc}"
        else:
            facts["authenticated"] = True
            facts["display_name"] = token.get("display_name")
            facts["policies"] = listed_keys(token.get("policies"), "policies")
            facts["ttl"] = format_seconds(token.get("ttl"))
            facts["expire_time"] = token.get("expire_time")
        return Record(facts, kind="connection")

    def _repr_html_(self) -> str:
        return connection_card(
            f"Secrets server {self.address}", self.address, self.connection, "active"
        )

    def __repr__(self) -> str:
        if "http" not in vars(self):
            return super().__repr__()  # half-built
        where = f" namespace={self.namespace!r}" if self.namespace else ""
        return f"<SecretsClient {self.address}{where}>"


class _TokenState:
    """What a client learnt of its token in this run (never the token itself)."""

    def __init__(self) -> None:
        self.expiry: datetime | None = None
        self.accepted_at: float | None = None


# Paths OpenBao protects with ``sudo`` on top of the method's capability (those the
# audits meet): the hint asks for both.
_SUDO_PATHS = (
    "auth/token/accessors",
    "sys/leases/lookup",
    "sys/leases/revoke-prefix",
    "sys/leases/revoke-force",
    "sys/audit",
    "sys/raw",
    "sys/rotate",
    "sys/seal",
    "sys/step-down",
    "sys/plugins/catalog",
    "sys/rekey",
    "sys/config/auditing",
)

# How long a token the server accepted is taken as accepted without asking again.
_TOKEN_VERDICT_SECONDS = 10.0


def _capability(method: str, url: str) -> str:
    """The ACL capability a request needs (what a policy must grant)."""
    if method == "LIST" or "list=true" in url:
        return "list"
    return {"GET": "read", "HEAD": "read", "DELETE": "delete", "PATCH": "patch"}.get(
        method, "update"
    )


def mount_not_found(exc: NotFound, path: str, namespace: str | None) -> MountNotFound:
    """``no handler for route``: nothing is mounted at ``path``'s first segments."""
    mount = path.split("/", 1)[0] + "/"
    if path.startswith(("sys/", "auth/")):
        mount = "/".join(path.split("/")[:2]) + "/"
    where = f" in namespace {namespace.rstrip('/')!r}" if namespace else ""
    better = exc.restated(
        MountNotFound,
        [f"nothing is mounted at {mount!r}{where} ({exc.message})"],
        hint="check the mount's name: `client.mounts()` lists the mounted engines",
    )
    better.mount = mount
    return better


# sys/health's answers for a server that is up but not active: standby (429),
# disaster-recovery and performance standby (472, 473), uninitialised (501), sealed (503).
_HEALTH_STATUSES = frozenset({429, 472, 473, 501, 503})


def _describe_seal(status: Record) -> str:
    """``unsealed (shamir, 3 of 5)`` or ``sealed: 1 of 3 shares given``."""
    kind = status.get("type") or "shamir"
    threshold, shares = status.get("t"), status.get("n")
    if status.get("sealed"):
        return f"sealed: {status.get('progress', 0)} of {threshold} shares given ({kind})"
    return f"unsealed ({kind}, {threshold} of {shares})"
