"""The secrets server's state: one object holding every area's state class."""

from __future__ import annotations

import threading
from typing import Any, cast

from ..._spec.acl import ACL, decide
from .._clock import Clock
from .audit import AuditDevices
from .backends import EngineRegistry
from .errors import AccessDenied, InvalidRequest, PathNotFound, capability_denied
from .identity import IdentityStore
from .leases import LeaseStore
from .logins import LoginStore
from .mounts import Mount, MountTable
from .namespaces import NamespaceStore
from .password_policies import PasswordPolicyStore
from .plugins import PluginCatalog
from .policies import PolicyStore
from .rekey import RekeyOperation
from .seal import SealState
from .token_roles import StoredTokenRole, TokenRequest, glob_match
from .tokens import Token, TokenStore
from .wrapping import WrappingStore

__all__ = ["SecretsService"]


class SecretsService:
    """Everything the sandbox's secrets server knows, with no HTTP in it."""

    def __init__(
        self,
        *,
        clock: Clock,
        root_token: str,
        engines: EngineRegistry,
        key_shares: int = 5,
        key_threshold: int = 3,
        recovery_seal: bool = False,
    ) -> None:
        self.clock = clock
        self.root_token = root_token
        # The engines this server can mount (``engines.ENGINES``: each one's descriptor).
        self.engines = engines
        # One lock for the whole service: handlers run one at a time under it,
        # so concurrent requests see each change whole.
        self.lock = threading.RLock()
        # ``recovery_seal``: an auto-unseal seal that stores the root key; the
        # shares are then recovery shares (spec 4.3, "seals with stored keys").
        self.seal = SealState(key_shares, key_threshold, recovery=recovery_seal)
        self.rekey = RekeyOperation(self.seal)
        self.recovery_rekey = RekeyOperation(self.seal, recovery=True)
        # Whether the legacy ``sys/rekey/{init,update,verify}`` endpoints answer.
        # OpenBao 2.5 and later disable them by default (405 "unsupported
        # operation"); set False to serve only ``sys/rotate/root/*`` like it.
        self.legacy_rekey = True
        self.key_shares = key_shares
        self.key_threshold = key_threshold
        self.policies = PolicyStore()
        self.password_policies = PasswordPolicyStore()
        self.leases = LeaseStore(clock)
        self.plugins = PluginCatalog(engines.catalog_names())
        self.tokens = TokenStore(clock, root_token, lease_manager=self._lease_manager)
        self.identity = IdentityStore(clock)
        self.token_roles: dict[str, StoredTokenRole] = {}
        # File audit devices, configured at start (``--audit-file``).
        self.audit = AuditDevices()
        self.wrapping = WrappingStore(clock)
        self.logins = LoginStore(self.tokens, entity_for=self.login_entity)
        self.mounts = MountTable(engines.default_mounts())
        # Child namespaces and the administrative one (``sys/namespaces``).
        self.namespaces = NamespaceStore()
        for mount in list(self.mounts.engines.values()):
            engines.attach_backend(self, mount)

    # Stored state (``--state``): everything but the lock and the engines, which are code;
    # whoever resumes a stored service hands it its engines again (``Sandbox``).
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("lock", "engines")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()
        self.engines = EngineRegistry()
        if "namespaces" not in state:
            # A state stored before namespaces existed: it had none.
            self.namespaces = NamespaceStore()
        if "identity" not in state:
            # A state stored before the identity store existed: no entities, no token roles.
            self.identity = IdentityStore(self.clock)
            self.token_roles = {}
        if "audit" not in state:
            self.audit = AuditDevices()
            self.wrapping = WrappingStore(self.clock)

    def in_namespace(self, path: str) -> SecretsService:
        """The service as a request in namespace ``path`` sees it: the root itself, or a
        :class:`NamespaceScope` whose policies, password policies, mounts and leases are
        that child namespace's own (404 ``namespace not found`` for an unknown one)."""
        if self.namespaces.get(path) is None:
            if self.namespaces.exists(path):
                return self
            raise PathNotFound("namespace not found")
        return cast("SecretsService", NamespaceScope(self, path))

    # -- engine mounts --------------------------------------------------------------
    def enable_engine(self, path: str, kind: str, **settings: Any) -> Mount:
        """Mount a fresh engine of type ``kind`` at ``path`` (``POST sys/mounts/:path``)."""
        if kind not in self.engines and self.plugins.get("secret", kind) is not None:
            self.plugins.runnable("secret", kind)  # a registered plugin: refused, as it cannot run
        self.engines.get(kind)
        mount = self.mounts.enable(path, kind, **settings)
        self.engines.attach_backend(self, mount)
        return mount

    def disable_engine(self, path: str) -> None:
        """Unmount the engine at ``path``, revoking its leases first (``DELETE sys/mounts/:path``)."""
        mount = self.mounts.engine(path)
        if mount is None:
            return
        # As on the real server: a lease the engine cannot revoke stops the unmount.
        self.leases.revoke_prefix(mount.path.rstrip("/"))
        self.mounts.disable(path)

    # -- tokens and access --------------------------------------------------------
    def _lease_manager(self) -> LeaseStore | None:
        return getattr(self, "leases", None)

    def authenticate(self, token_id: str | None) -> Token:
        """The caller's token; 403 ``permission denied`` when missing, unknown or expired,
        or when its entity is disabled (as OpenBao refuses it)."""
        token = self.tokens.authenticate(token_id)
        if token.entity_id and not token.is_root:
            entity = self.identity.entity(token.entity_id)
            if entity is not None and entity.disabled:
                raise AccessDenied("permission denied")
        return token

    def login_entity(self, method: str, alias_name: str) -> str:
        """The entity id of a login on the auth method mounted at ``method/``: found
        through its alias (a user name, an AppRole role id), or created with it."""
        mount = self.mounts.auth.get(method + "/")
        if mount is None:
            return ""
        return self.identity.login(mount.accessor, mount.type, f"auth/{mount.path}", alias_name).id

    def disable_login_method(self, kind: str) -> None:
        """Forget a login method's users, roles and the entity aliases made on it
        (``DELETE sys/auth/:path``); its mount stays, the sandbox's methods being fixed."""
        if kind == "token":
            raise InvalidRequest("token credential backend cannot be disabled")
        self.logins.clear(kind)
        mount = self.mounts.auth.get(kind + "/")
        if mount is not None:
            self.identity.forget_mount(mount.accessor)

    def create_token(
        self,
        parent: Token,
        request: TokenRequest,
        *,
        role: StoredTokenRole | None = None,
        orphan: bool = False,
        privileged: bool = False,
    ) -> tuple[Token, list[str]]:
        """A token created by ``parent`` (``auth/token/create*``): an ``entity_alias``
        (through a role that allows it) ties it to the alias's entity on the token mount."""
        entity_id = ""
        if request.entity_alias:
            if role is None:
                raise InvalidRequest(
                    "'entity_alias' is only allowed in combination with token role"
                )
            alias = request.entity_alias.lower()
            if alias not in role.allowed_entity_aliases and not glob_match(
                role.allowed_entity_aliases, alias
            ):
                raise InvalidRequest("invalid 'entity_alias' value")
            entity_id = self.login_entity("token", request.entity_alias)
            entity = self.identity.entity(entity_id)
            if entity is not None and entity.disabled:
                raise AccessDenied("entity from given entity alias is disabled")
        return self.tokens.create(
            parent, request, privileged=privileged, role=role, orphan=orphan, entity_id=entity_id
        )

    def token_policies(self, token: Token) -> list[str]:
        """The token's own policies and its entity's identity policies (its own and its
        groups'), as they stand now."""
        if not token.entity_id or token.is_root:
            return list(token.policies)
        entity = self.identity.entity(token.entity_id)
        if entity is None:
            return list(token.policies)
        return sorted({*token.policies, *self.identity.policies_of(entity.id)})

    def acl_for(self, token: Token) -> ACL:
        """The merged ACL of the token's and its entity's policies, templated paths filled
        from the entity. A template filled with a forbidden value (``/``, ``*``, ``+``)
        refuses the whole ACL, as OpenBao does: 403 naming the policy and the path."""
        names = self.token_policies(token)
        identity = self.identity.identity_of(token.entity_id) if token.entity_id else None
        acl = self.policies.acl(names, identity)
        if acl.refusal is not None:
            name, refused = acl.refusal
            raise AccessDenied(
                f'error parsing templated policy "{name}": failed to parse policy: '
                f'path "{refused.pattern}": template substitution contains forbidden '
                f'value: "{refused.value}"'
            )
        return acl

    def authorize(
        self,
        token: Token,
        path: str,
        capability: str,
        *,
        sudo: bool = False,
        granting: bool = False,
    ) -> tuple[str, ...]:
        """Raise 403 ``permission denied`` unless ``token`` holds ``capability`` on ``path``;
        else, when ``granting`` is asked (an audit device logs it), the granting policies:
        those of the deciding pattern that grant ``capability`` (``root`` for the root
        token); else ().

        ``sudo`` asks for the ``sudo`` capability as well (endpoints marked sudo). A
        token whose ACL cannot be built (a forbidden templated value) is refused as
        OpenBao refuses it: 400 ``Forbidden``.
        """
        try:
            acl = self.acl_for(token)
        except AccessDenied:
            raise InvalidRequest("Forbidden") from None
        if not acl.allows(path, capability, sudo=sudo):
            raise capability_denied()
        if not granting:
            return ()
        if acl.root:
            return ("root",)
        decision = decide(acl.sources, path, capability)
        return tuple(
            sorted({r.policy for r in acl.sources
                    if r.pattern == decision.pattern and capability in r.capabilities})
        )  # fmt: skip

    @property
    def sealed(self) -> bool:
        """Whether the seal is closed (authenticated calls then answer 503)."""
        return self.seal.sealed

    def write_init_file(self, path: str) -> None:
        """Write the initial shares (unseal, or recovery) and root token as ``sys/init``
        answers them (0600)."""
        self.seal.write_init_file(path, self.root_token)


class NamespaceScope:
    """A child namespace's view of the service, made per request and never stored.

    Its own: ACL and password policy stores, the mount table (system mounts
    only: engines are mounted in the root alone) and the leases (none: an empty
    store, since nothing in a child namespace issues one). Everything else
    (tokens, logins, the seal, ACL checks of the caller's root-namespace token)
    is the root service's.
    """

    def __init__(self, root: SecretsService, path: str) -> None:
        namespace = root.namespaces.get(path)
        assert namespace is not None
        self.root = root
        self.namespace = namespace
        self.policies = namespace.policies
        self.password_policies = namespace.password_policies
        self.mounts = namespace.mounts
        self.leases = LeaseStore(root.clock)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.root, name)

    def enable_engine(self, path: str, kind: str, **settings: Any) -> Mount:
        raise InvalidRequest(
            "the sandbox mounts secrets engines in the root namespace only (see its docs)"
        )

    def disable_engine(self, path: str) -> None:
        # Only system mounts are here: the table refuses those, and anything else is absent.
        self.mounts.disable(path)
