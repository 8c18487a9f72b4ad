"""Tokens: who a request comes from and which policies it carries (spec part 5).

A token has an id (the secret a client sends), an accessor (a public handle),
policies, a time to live and a parent. The root token holds the ``root``
policy and never expires. Tokens expire by the sandbox clock; revoking a token
revokes the tokens it created, except orphans.

Tokens are leases: a token with a time to live is registered with the lease
manager (``service.leases``, when the service has one) as
``auth/token/create/<hash of the id>``. The lease then decides the token's
expiry, so renewing either renews both; revoking either revokes both, and
revoking a token also revokes the leases of the secrets it was given.
"""

from __future__ import annotations

import functools
import hashlib
import math
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..._time import parse_duration
from .._clock import Clock
from .._plain import RecordTable, StoredRecord
from .errors import InvalidRequest, bad_request, permission_denied
from .mounts import SYSTEM_MAX_TTL

if TYPE_CHECKING:
    from .leases import Lease, LeaseStore

__all__ = [
    "DEFAULT_TTL",
    "LEASE_PREFIX",
    "MAX_TTL",
    "Token",
    "TokenStore",
]

# The server's default and maximum lease durations (768h = 32 days): the system's.
DEFAULT_TTL = MAX_TTL = SYSTEM_MAX_TTL
LEASE_PREFIX = "auth/token/create/"

_ALPHABET = string.ascii_letters + string.digits


def _random_id(length: int = 24) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


@dataclass
class Token(StoredRecord):
    """One token. Its ``id`` is the secret and never appears in ``repr``.

    A :class:`~.._plain.StoredRecord`: assigning a field marks the token changed for ``--state``.
    """

    id: str = field(repr=False)
    accessor: str
    policies: list[str]
    creation_time: datetime
    ttl: int = 0  # seconds granted at creation or last renewal; 0 never expires
    renewable: bool = False
    display_name: str = "token"
    entity_id: str = ""
    namespace: str = ""
    meta: dict[str, str] = field(default_factory=dict)
    parent_accessor: str = ""
    path: str = "auth/token/create"
    lease: Lease | None = field(default=None, repr=False)
    # Renewals when the service runs without a lease manager.
    _renewed_at: datetime | None = field(default=None, repr=False)

    @property
    def is_root(self) -> bool:
        return "root" in self.policies

    @property
    def orphan(self) -> bool:
        return not self.parent_accessor

    @property
    def lease_key(self) -> str:
        """The last segment of the token's lease id: a hash of the id, never the id itself."""
        return hashlib.sha256(self.id.encode()).hexdigest()[:32]

    @property
    def lease_id(self) -> str:
        return LEASE_PREFIX + self.lease_key

    @property
    def last_renewal(self) -> datetime | None:
        return self.lease.last_renewal_time if self.lease is not None else self._renewed_at

    @property
    def expire_time(self) -> datetime | None:
        if not self.ttl:
            return None
        if self.lease is not None:
            return self.lease.expire_time
        return (self._renewed_at or self.creation_time) + timedelta(seconds=self.ttl)

    def remaining(self, now: datetime) -> int:
        """Seconds left to live (0 for a token that never expires)."""
        expiry = self.expire_time
        if expiry is None:
            return 0
        return max(0, math.ceil((expiry - now).total_seconds()))

    def expired(self, now: datetime) -> bool:
        expiry = self.expire_time
        return expiry is not None and now >= expiry


def _policy_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(p, str) for p in value):
        items = value
    else:
        raise bad_request("'policies' must be a list of strings or a comma-separated string")
    return [p.strip().lower() for p in items if p.strip()]


class TokenStore:
    """Every live token, by id, with the rules for issuing and revoking them.

    ``lease_manager`` is a callable answering the service's lease manager (or
    None when it has none), asked each time so the two can be built in any order.
    """

    def __init__(
        self,
        clock: Clock,
        root_token: str,
        *,
        lease_manager: Callable[[], LeaseStore | None] = lambda: None,
    ) -> None:
        self.clock = clock
        # One stored row per token (``--state``).
        self._tokens: RecordTable[Token] = RecordTable("tokens")
        self._lease_manager = lease_manager
        self.root = self.add(root_token, ["root"], ttl=0, display_name="root")

    def _store(self, token: Token, max_ttl: int | None = None) -> Token:
        self._tokens[token.id] = token
        leases = self._lease_manager()
        if token.ttl and leases is not None:
            token.lease = leases.create(
                LEASE_PREFIX.rstrip("/"),
                ttl=token.ttl,
                max_ttl=max_ttl,
                renewable=token.renewable,
                suffix=token.lease_key,
                issue_time=token.creation_time,
                # A partial of a bound method, not a closure: the state is stored as data.
                on_revoke=functools.partial(self._lease_ended_for, token.id),
            )
        return token

    def add(
        self,
        token_id: str,
        policies: list[str],
        *,
        ttl: int = DEFAULT_TTL,
        renewable: bool = True,
        display_name: str = "token",
        parent: Token | None = None,
        entity_id: str = "",
        meta: dict[str, str] | None = None,
        max_ttl: int | None = None,
        path: str = "auth/token/create",
    ) -> Token:
        """Store a token with a known id (the root token, demo tokens, logins); no checks.

        ``max_ttl`` caps its renewals (the server's maximum when None); ``path`` is
        where it was issued (``auth/userpass/login/alice``).
        """
        token = Token(
            id=token_id,
            accessor=_random_id(),
            policies=sorted(set(policies)),
            creation_time=self.clock.now(),
            ttl=ttl,
            renewable=renewable and bool(ttl),
            display_name=display_name,
            entity_id=entity_id,
            meta=dict(meta or {}),
            parent_accessor=parent.accessor if parent else "",
            path=path,
        )
        return self._store(token, max_ttl)

    # -- lookup ---------------------------------------------------------------------
    def get(self, token_id: str | None) -> Token | None:
        """The live token with this id, or None; an expired token is revoked on sight."""
        if not token_id:
            return None
        token = self._tokens.get(token_id)
        if token is not None and token.expired(self.clock.now()):
            self.revoke(token)
            return None
        return token

    def authenticate(self, token_id: str | None) -> Token:
        """The caller's token; 403 ``permission denied`` when missing, unknown or expired."""
        token = self.get(token_id)
        if token is None:
            raise permission_denied()
        return token

    def live(self) -> list[Token]:
        """Every token not yet expired."""
        return [t for t in list(self._tokens.values()) if self.get(t.id) is not None]

    def accessors(self) -> list[str]:
        """The accessors of every live token (``LIST auth/token/accessors``)."""
        return [t.accessor for t in self.live()]

    def by_accessor(self, accessor: str) -> Token:
        """The live token of an accessor (``auth/token/lookup-accessor``).

        An accessor that names no live token is 400 ``invalid accessor``, as on
        the real server.
        """
        token = self._by_accessor(accessor) if accessor else None
        if token is None:
            raise bad_request("invalid accessor")
        return token

    def __getstate__(self) -> dict[str, Any]:
        # The accessor index is rebuilt on its first miss: never stored (``--state``).
        state = dict(self.__dict__)
        state.pop("_accessor_index", None)
        return state

    def _by_accessor(self, accessor: str) -> Token | None:
        """The live token holding ``accessor``: an index kept on the side (built again
        when it misses), so that a hundred thousand lookups do not scan every token each."""
        index: dict[str, str] | None = getattr(self, "_accessor_index", None)
        token_id = index.get(accessor) if index is not None else None
        if token_id is None:
            index = {t.accessor: t.id for t in self._tokens.values()}
            self._accessor_index = index
            token_id = index.get(accessor)
        token = self.get(token_id) if token_id is not None else None
        return token if token is not None and token.accessor == accessor else None

    # -- issuing ----------------------------------------------------------------------
    def create(
        self,
        parent: Token,
        body: dict[str, Any],
        *,
        parent_has_sudo: bool = False,
    ) -> Token:
        """Issue a child of ``parent`` from a ``POST /auth/token/create`` body.

        ``policies`` default to the parent's; a caller without root or sudo may
        only give a subset of its own policies, and only root or sudo may create
        an orphan (``no_parent``). ``default`` is added unless
        ``no_default_policy``. The time to live defaults to 768h and never
        outlives a parent that expires. Everything is checked before the token
        exists.
        """
        privileged = parent.is_root or parent_has_sudo
        requested = _policy_list(body.get("policies"))
        policies = list(parent.policies) if requested is None else requested
        if not body.get("no_default_policy") and "root" not in policies:
            policies.append("default")
        elif body.get("no_default_policy"):
            policies = [p for p in policies if p != "default"]
        if not privileged:
            outside = sorted(set(policies) - set(parent.policies) - {"default"})
            if outside:
                raise bad_request("child policies must be subset of parent")
        no_parent = body.get("no_parent", False)
        if not isinstance(no_parent, bool):
            raise bad_request("'no_parent' must be a boolean")
        if no_parent and not privileged:
            raise bad_request("root or sudo privileges required to create orphan token")
        try:
            ttl = parse_duration(body.get("ttl"), field="ttl")
        except ValueError as exc:
            raise bad_request(str(exc)) from None
        if ttl > MAX_TTL:
            ttl = MAX_TTL
        if not ttl and "root" not in policies:
            ttl = DEFAULT_TTL
        now = self.clock.now()
        if parent.ttl and not no_parent:
            # A child never outlives its parent.
            ttl = min(ttl or parent.remaining(now), parent.remaining(now))
        renewable = body.get("renewable", True)
        if not isinstance(renewable, bool):
            raise bad_request("'renewable' must be a boolean")
        meta = body.get("meta") or {}
        if not isinstance(meta, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in meta.items()
        ):
            raise bad_request("'meta' must be a map of strings to strings")
        display = body.get("display_name") or ""
        if not isinstance(display, str):
            raise bad_request("'display_name' must be a string")
        display_name = "token-" + display.lower() if display else "token"
        token_id = "s." + _random_id()
        return self.add(
            token_id,
            policies,
            ttl=ttl,
            renewable=renewable,
            display_name=display_name,
            parent=None if no_parent else parent,
            meta=meta,
        )

    def issue(
        self,
        policies: list[str],
        *,
        ttl: int,
        max_ttl: int,
        path: str,
        display_name: str,
        meta: dict[str, str] | None = None,
    ) -> Token:
        """An orphan token for a login: a fresh id, ``default`` added to ``policies``;
        ``ttl``/``max_ttl`` 0 mean the server's defaults."""
        ttl = min(ttl or DEFAULT_TTL, MAX_TTL)
        cap = min(max_ttl or MAX_TTL, MAX_TTL)
        return self.add(
            "s." + _random_id(),
            [*policies, "default"],
            ttl=min(ttl, cap),
            renewable=True,
            display_name=display_name,
            meta=meta,
            max_ttl=cap,
            path=path,
        )

    # -- renewing and revoking ----------------------------------------------------------
    def renew(self, token: Token, increment: Any = None) -> Token:
        """Extend a renewable token from now by ``increment`` (default: its original TTL).

        Endpoint: ``auth/token/renew-self``. With a lease manager the token's
        lease is renewed (and capped) by it.
        """
        if not token.renewable:
            raise bad_request("lease is not renewable")
        try:
            wanted = parse_duration(increment, field="increment")
        except ValueError as exc:
            raise bad_request(str(exc)) from None
        leases = self._lease_manager()
        if token.lease is not None and leases is not None:
            leases.renew(token.lease.lease_id, min(wanted, MAX_TTL))
        else:
            token._renewed_at = self.clock.now()
            token.ttl = min(wanted or token.ttl, MAX_TTL)
        return token

    def revoke(self, token: Token) -> list[Token]:
        """Revoke ``token`` and its non-orphan descendants; returns what was revoked.

        Their own leases go, and so do the leases of the secrets they were given.
        """
        if token is self.root:
            # The sandbox keeps its root token: revoking it would lock the operator out.
            raise InvalidRequest("the sandbox's root token cannot be revoked")
        revoked: list[Token] = []
        pending = [token]
        while pending:
            current = pending.pop()
            if self._tokens.pop(current.id, None) is None:
                continue
            revoked.append(current)
            pending.extend(
                t for t in self._tokens.values() if t.parent_accessor == current.accessor
            )
        leases = self._lease_manager()
        if leases is not None:
            for gone in revoked:
                if gone.lease is not None and leases.get(gone.lease.lease_id) is not None:
                    leases.revoke(gone.lease.lease_id)
                leases.revoke_by_token(gone.id)
        return revoked

    def _lease_ended_for(self, token_id: str, lease: object) -> None:
        """The lease manager revoked (or expired) a token's lease: the token goes too."""
        token = self._tokens.get(token_id)
        if token is not None:
            token.lease = None  # the lease is being removed; do not revoke it again
            self.revoke(token)

    def __repr__(self) -> str:
        return f"<TokenStore {len(self._tokens)} tokens>"
