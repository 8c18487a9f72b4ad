"""Logins: the userpass, LDAP and AppRole auth methods (spec part 5's tokens, issued
to people and machines who prove who they are).

Plain state, no HTTP. Each method checks its credentials and asks the
:class:`~.tokens.TokenStore` for an orphan token with the policies it grants:

- **userpass**: users with a password and policies;
- **LDAP**: a list of directory users with a password and groups, groups
  mapping to policies. These are people logging in to the server, kept apart
  from the directory engine's service accounts (:mod:`.engines.ad`);
- **AppRole**: roles with a public ``role_id`` and secret ids issued on demand
  (optionally limited in uses and time), for machines.

Passwords and secret ids are kept as salted hashes, compared in constant time.
A failed login changes nothing (a secret id's use is spent only by a login
that succeeds). Mount paths are fixed at each method's type.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .errors import bad_request, not_found
from .tokens import Token, TokenStore

__all__ = ["AppRole", "LoginStore", "SecretId", "TokenSettings"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_INVALID_CREDENTIALS = "invalid username or password"


def _digest(secret: str, salt: bytes) -> bytes:
    return hashlib.pbkdf2_hmac("sha256", secret.encode(), salt, 10_000)


@dataclass
class _Password:
    """A salted hash of a password or secret id; never the value."""

    salt: bytes = field(repr=False)
    digest: bytes = field(repr=False)

    @classmethod
    def of(cls, secret: str) -> _Password:
        salt = secrets.token_bytes(16)
        return cls(salt, _digest(secret, salt))

    def matches(self, secret: str) -> bool:
        return hmac.compare_digest(self.digest, _digest(secret, self.salt))


@dataclass
class TokenSettings:
    """What the tokens a login issues carry: policies and times to live (seconds, 0: default)."""

    policies: list[str] = field(default_factory=list)
    ttl: int = 0
    max_ttl: int = 0
    no_default_policy: bool = False
    num_uses: int = 0
    period: int = 0
    explicit_max_ttl: int = 0
    # "default", "service", "batch", "default-service" or "default-batch".
    type: str = "default"
    bound_cidrs: list[str] = field(default_factory=list)
    # Written with the deprecated ``policies`` field: a read shows it back.
    legacy_policies: bool = False

    def check(self) -> None:
        """Refuse what OpenBao's token options refuse when a role or user is written."""
        for name, value in (
            ("token_ttl", self.ttl),
            ("token_max_ttl", self.max_ttl),
            ("token_period", self.period),
            ("token_num_uses", self.num_uses),
            ("token_explicit_max_ttl", self.explicit_max_ttl),
        ):
            if value < 0:
                raise bad_request(f"'{name}' cannot be negative")
        if self.type not in ("default", "service", "batch", "default-service", "default-batch"):
            raise bad_request(f"invalid 'token_type' value {self.type!r}")
        if self.type in ("batch", "default-batch"):
            if self.period:
                raise bad_request(
                    "'token_type' cannot be 'batch' or 'default_batch' when set to generate "
                    "periodic tokens"
                )
            if self.num_uses:
                raise bad_request(
                    "'token_type' cannot be 'batch' or 'default_batch' when set to generate "
                    "tokens with limited use count"
                )
        if self.ttl and self.max_ttl and self.ttl > self.max_ttl:
            raise bad_request("'token_ttl' cannot be greater than 'token_max_ttl'")


@dataclass
class _User:
    name: str
    password: _Password
    settings: TokenSettings
    groups: list[str] = field(default_factory=list)


@dataclass
class SecretId:
    """One issued secret id: known by its hash and its public accessor."""

    accessor: str
    secret: _Password = field(repr=False)
    creation_time: datetime
    ttl: int = 0  # seconds; 0 never expires
    uses_left: int = 0  # 0 unlimited
    metadata: dict[str, str] = field(default_factory=dict)

    def expired(self, now: datetime) -> bool:
        return bool(self.ttl) and now >= self.creation_time + timedelta(seconds=self.ttl)


@dataclass
class AppRole:
    """An AppRole: its ``role_id``, token settings and secret-id rules."""

    name: str
    role_id: str
    settings: TokenSettings
    bind_secret_id: bool = True
    secret_id_ttl: int = 0
    secret_id_num_uses: int = 0
    secret_ids: dict[str, SecretId] = field(default_factory=dict)  # by accessor


def _check_name(kind: str, name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise bad_request(f"invalid {kind} name {name!r}")
    return name


class LoginStore:
    """The three login methods' users, directory users and roles, and their logins."""

    def __init__(
        self,
        tokens: TokenStore,
        entity_for: Callable[[str, str], str] = lambda method, alias: "",
    ) -> None:
        self._tokens = tokens
        # The entity id of a login: (method, alias name) -> entity id (the identity store).
        self._entity_for = entity_for
        self.users: dict[str, _User] = {}
        self.ldap_users: dict[str, _User] = {}
        self.ldap_groups: dict[str, list[str]] = {}
        self.roles: dict[str, AppRole] = {}

    def __repr__(self) -> str:
        return (
            f"<LoginStore {len(self.users)} userpass users, {len(self.ldap_users)} "
            f"LDAP users, {len(self.roles)} AppRoles>"
        )

    def clear(self, method: str) -> None:
        """Forget every user or role of a login method (its mount was disabled)."""
        if method == "userpass":
            self.users.clear()
        elif method == "ldap":
            self.ldap_users.clear()
            self.ldap_groups.clear()
        elif method == "approle":
            self.roles.clear()

    # -- userpass ---------------------------------------------------------------------
    def put_user(self, name: str, password: str, settings: TokenSettings) -> None:
        """Create or update a userpass user (``auth/userpass/users/:name``); an update
        without a password keeps the one it had."""
        name = _check_name("user", name).lower()
        existing = self.users.get(name)
        if not password and existing is None:
            raise bad_request("missing password")
        settings.check()
        hashed = _Password.of(password) if password else existing.password  # type: ignore[union-attr]
        self.users[name] = _User(name, hashed, settings)

    def userpass_login(self, username: str, password: str) -> Token:
        """``auth/userpass/login/:username``: 400 on a wrong name or password."""
        user = self.users.get(username.lower())
        if user is None or not user.password.matches(password):
            raise bad_request(_INVALID_CREDENTIALS)
        return self._issue(
            user.settings,
            "userpass",
            f"login/{user.name}",
            user.name,
            {"username": user.name},
            alias=user.name,
        )

    # -- LDAP -------------------------------------------------------------------------
    def put_ldap_user(self, name: str, password: str, groups: list[str]) -> None:
        """A directory user who may log in (demo data: the sandbox has no directory server)."""
        name = _check_name("user", name).lower()
        self.ldap_users[name] = _User(name, _Password.of(password), TokenSettings(), list(groups))

    def put_ldap_group(self, name: str, policies: list[str]) -> None:
        """``auth/ldap/groups/:name``: the policies a directory group's members get."""
        self.ldap_groups[_check_name("group", name).lower()] = list(policies)

    def ldap_login(self, username: str, password: str) -> Token:
        """``auth/ldap/login/:username``: bound as the user, policies from the groups."""
        user = self.ldap_users.get(username.lower())
        if user is None or not password or not user.password.matches(password):
            raise bad_request("ldap operation failed: failed to bind as user")
        policies = sorted(
            {p for group in user.groups for p in self.ldap_groups.get(group.lower(), [])}
        )
        return self._issue(
            TokenSettings(policies),
            "ldap",
            f"login/{user.name}",
            user.name,
            {"username": user.name},
            alias=user.name,
        )

    # -- AppRole ----------------------------------------------------------------------
    def put_role(
        self,
        name: str,
        settings: TokenSettings,
        *,
        bind_secret_id: bool = True,
        secret_id_ttl: int = 0,
        secret_id_num_uses: int = 0,
        role_id: str | None = None,
    ) -> AppRole:
        """Create or update a role (``auth/approle/role/:name``); its role id stays."""
        key = _check_name("role", name).lower()
        if secret_id_ttl < 0 or secret_id_num_uses < 0:
            raise bad_request("secret_id_ttl and secret_id_num_uses cannot be negative")
        settings.check()
        existing = self.roles.get(key)
        role = AppRole(
            key,
            role_id or (existing.role_id if existing else str(uuid.uuid4())),
            settings,
            bind_secret_id,
            secret_id_ttl,
            secret_id_num_uses,
            existing.secret_ids if existing else {},
        )
        self.roles[key] = role
        return role

    def role(self, name: str) -> AppRole:
        role = self.roles.get(name.lower())
        if role is None:
            raise not_found(f"role {name!r} does not exist")
        return role

    def delete_role(self, name: str) -> None:
        self.roles.pop(name.lower(), None)

    def generate_secret_id(
        self, name: str, metadata: dict[str, str] | None = None, secret: str | None = None
    ) -> tuple[str, SecretId]:
        """A new secret id for role ``name`` (``POST auth/approle/role/:name/secret-id``):
        the value, shown once, and its record."""
        role = self.role(name)
        value = secret or str(uuid.uuid4())
        issued = SecretId(
            accessor=str(uuid.uuid4()),
            secret=_Password.of(value),
            creation_time=self._tokens.clock.now(),
            ttl=role.secret_id_ttl,
            uses_left=role.secret_id_num_uses,
            metadata=dict(metadata or {}),
        )
        role.secret_ids[issued.accessor] = issued
        return value, issued

    def secret_ids(self, name: str) -> list[SecretId]:
        """The live secret ids of role ``name`` (expired ones are dropped on sight)."""
        role = self.role(name)
        now = self._tokens.clock.now()
        for accessor, issued in list(role.secret_ids.items()):
            if issued.expired(now):
                del role.secret_ids[accessor]
        return list(role.secret_ids.values())

    def find_secret_id(
        self, name: str, *, value: str | None = None, accessor: str | None = None
    ) -> SecretId | None:
        """A live secret id of role ``name``, by its value or its accessor."""
        for issued in self.secret_ids(name):
            if accessor is not None and hmac.compare_digest(issued.accessor, accessor):
                return issued
            if value is not None and issued.secret.matches(value):
                return issued
        return None

    def destroy_secret_id(self, name: str, issued: SecretId) -> None:
        self.role(name).secret_ids.pop(issued.accessor, None)

    def set_role_id(self, name: str, role_id: str) -> None:
        """``POST auth/approle/role/:name/role-id``: a role id of the operator's choosing."""
        role = self.role(name)
        if not role_id:
            raise bad_request("missing role_id")
        if any(r.role_id == role_id and r is not role for r in self.roles.values()):
            raise bad_request("role_id already in use")
        role.role_id = role_id

    def approle_login(self, role_id: str, secret_id: str | None) -> Token:
        """``auth/approle/login``: 400 ``invalid role or secret ID`` on any mismatch."""
        role = next(
            (r for r in self.roles.values() if hmac.compare_digest(r.role_id, role_id)), None
        )
        if role is None:
            raise bad_request("invalid role or secret ID")
        meta = {"role_name": role.name}
        if role.bind_secret_id:
            if not secret_id:
                raise bad_request("missing secret_id")
            now = self._tokens.clock.now()
            for accessor, issued in list(role.secret_ids.items()):
                if issued.expired(now):
                    del role.secret_ids[accessor]
            found = next((s for s in role.secret_ids.values() if s.secret.matches(secret_id)), None)
            if found is None:
                raise bad_request("invalid role or secret ID")
            token = self._issue(
                role.settings, "approle", "login", "approle", meta, alias=role.role_id
            )
            if found.uses_left:
                found.uses_left -= 1
                if not found.uses_left:
                    del role.secret_ids[found.accessor]
            return token
        return self._issue(role.settings, "approle", "login", "approle", meta, alias=role.role_id)

    # -- issuing ----------------------------------------------------------------------
    def _entity_of(self, method: str, alias: str) -> str:
        # A state stored before the identity store existed has no finder: no entity.
        entity_for = self.__dict__.get("_entity_for")
        return entity_for(method, alias) if entity_for is not None else ""

    def _issue(
        self,
        settings: TokenSettings,
        method: str,
        tail: str,
        who: str,
        meta: dict[str, str],
        *,
        alias: str,
    ) -> Token:
        display = method if method == who else f"{method}-{who}"
        return self._tokens.issue(
            list(settings.policies),
            ttl=settings.ttl,
            max_ttl=settings.max_ttl,
            path=f"auth/{method}/{tail}",
            display_name=display,
            meta=meta,
            entity_id=self._entity_of(method, alias),
            no_default_policy=settings.no_default_policy,
            num_uses=settings.num_uses,
            period=settings.period,
            explicit_max_ttl=settings.explicit_max_ttl,
            kind="batch" if settings.type in ("batch", "default-batch") else "service",
        )
