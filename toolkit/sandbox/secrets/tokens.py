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
import re
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
from .token_roles import StoredTokenRole, TokenRequest, resolve_policies

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
    # "service" or "batch" (a batch token has no accessor, no lease, and is never renewed).
    type: str = "service"
    # Uses left (0 unlimited); -1 once the last use is under way (OpenBao shows it so).
    num_uses: int = 0
    explicit_max_ttl: int = 0
    period: int = 0
    role: str = ""
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


_CUSTOM_ID_WARNING = (
    "Supplying a custom ID for the token uses the weaker SHA1 hashing instead of the more "
    "secure SHA2-256 HMAC for token obfuscation. SHA1 hashed tokens on the wire leads to "
    "less secure lookups."
)


def _lesser(asked: int, of_role: int, warnings: list[str], what: str) -> int:
    """The role's value when none was asked, else the lesser of the two (with a warning)."""
    if not of_role:
        return asked
    if not asked:
        return of_role
    chosen = min(asked, of_role)
    warnings.append(
        f"{what} specified both during creation call and in role; "
        f"using the lesser value of {chosen} seconds"
    )
    return chosen


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
        if token.ttl and leases is not None and token.type != "batch":
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
        **options: Any,
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
            **options,
        )
        if token.type == "batch":
            token.accessor = ""
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
        if token is not None and token.num_uses < 0:
            # Its last use was the request before: it is gone now.
            self.revoke(token)
            token = None
        if token is None:
            raise permission_denied()
        self.use(token)
        return token

    def live(self) -> list[Token]:
        """Every token not yet expired."""
        return [t for t in list(self._tokens.values()) if self.get(t.id) is not None]

    def accessors(self) -> list[str]:
        """The accessors of every live token (``LIST auth/token/accessors``)."""
        return [t.accessor for t in self.live() if t.accessor]

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
        request: TokenRequest,
        *,
        privileged: bool = False,
        role: StoredTokenRole | None = None,
        orphan: bool = False,
        entity_id: str = "",
    ) -> tuple[Token, list[str]]:
        """Issue a child of ``parent`` (``auth/token/create``, ``create-orphan``,
        ``create/:role``) as OpenBao's token store does; answers it and the warnings.

        ``privileged``: the caller holds root or sudo on the endpoint. ``entity_id``:
        the entity an ``entity_alias`` resolved to. Everything is checked before the
        token exists.
        """
        privileged = privileged or parent.is_root
        if parent.type == "batch":
            raise bad_request("batch tokens cannot create more tokens")
        if parent.num_uses:
            raise bad_request("restricted use token cannot generate child tokens")
        kind = request.type
        if role is not None:
            if role.token_type in ("service", "batch"):
                kind = role.token_type
            elif role.token_type == "default-batch" and not kind:
                kind = "batch"
        renewable = request.renewable
        if kind == "batch":
            for reason, value in (
                ("explicit_max_ttl", request.explicit_max_ttl),
                ("num_uses", request.num_uses),
                ("period", request.period),
            ):
                if value:
                    raise bad_request(f'batch tokens cannot have "{reason}" set')
            renewable = False
        elif kind not in ("", "service"):
            raise bad_request("invalid 'token_type' value")
        if request.num_uses < 0:
            raise bad_request("number of uses cannot be negative")
        num_uses = request.num_uses
        path = "auth/token/create" if not orphan else "auth/token/create-orphan"
        if role is not None:
            path = f"auth/token/create/{role.name}"
            renewable = renewable and role.renewable
            if role.token_num_uses and (not num_uses or role.token_num_uses < num_uses):
                num_uses = role.token_num_uses
            if role.path_suffix:
                path += "/" + role.path_suffix
        warnings: list[str] = []
        if request.id and not privileged:
            raise bad_request("root or sudo privileges required to specify token id")
        policies = resolve_policies(request, role, parent.policies, privileged=privileged)
        if "root" in policies:
            if not parent.is_root:
                raise bad_request("root tokens may not be created without parent token being root")
            if kind == "batch":
                raise bad_request("batch tokens cannot be root tokens")
        if role is not None:
            has_parent = not role.orphan
        elif request.no_parent:
            if not privileged:
                raise bad_request("root or sudo privileges required to create orphan token")
            has_parent = False
        else:
            has_parent = not orphan
        if not entity_id and has_parent:
            entity_id = parent.entity_id
        explicit = request.explicit_max_ttl or 0
        if explicit < 0:
            raise bad_request("explicit_max_ttl must be positive")
        period = request.period or 0
        if period < 0:
            raise bad_request("period must be positive")
        if period and not privileged:
            raise bad_request("root or sudo privileges required to create periodic token")
        ttl = request.ttl or 0
        if ttl < 0:
            raise bad_request("ttl must be positive")
        if role is not None and kind != "batch":
            explicit = _lesser(explicit, role.token_explicit_max_ttl, warnings, "Explicit max TTL")
            period = _lesser(period, role.token_period, warnings, "Period")
        now = self.clock.now()
        if period:
            ttl = period if not explicit else min(period, explicit)
        elif ttl or "root" not in policies:
            ttl = min(ttl or DEFAULT_TTL, MAX_TTL)
            if explicit:
                ttl = min(ttl, explicit)
        if has_parent and parent.ttl:
            # A child never outlives its parent.
            ttl = min(ttl or parent.remaining(now), parent.remaining(now))
        if not ttl:
            renewable = False
        if request.id:
            warnings.append(_CUSTOM_ID_WARNING)
            if request.id in self._tokens:
                raise bad_request("cannot create a token with a duplicate ID")
        display_name = "token"
        if request.display_name:
            display_name = re.sub(r"[^a-zA-Z0-9-]", "-", "token-" + request.display_name)
            display_name = display_name.rstrip("-")
        prefix = "b." if kind == "batch" else "s."
        token = self.add(
            request.id or prefix + _random_id(),
            policies,
            ttl=ttl,
            renewable=renewable,
            display_name=display_name,
            parent=parent if has_parent else None,
            meta=request.meta,
            entity_id=entity_id,
            max_ttl=explicit or None,
            path=path,
            type=kind or "service",
            num_uses=num_uses,
            explicit_max_ttl=explicit,
            period=period,
            role=role.name if role is not None else "",
        )
        return token, warnings

    def issue(
        self,
        policies: list[str],
        *,
        ttl: int,
        max_ttl: int,
        path: str,
        display_name: str,
        meta: dict[str, str] | None = None,
        entity_id: str = "",
        no_default_policy: bool = False,
        num_uses: int = 0,
        period: int = 0,
        explicit_max_ttl: int = 0,
        kind: str = "service",
    ) -> Token:
        """An orphan token for a login: a fresh id, ``default`` added to ``policies``
        unless ``no_default_policy``; ``ttl``/``max_ttl`` 0 mean the server's defaults;
        a ``period`` makes it periodic, ``kind`` ``batch`` a batch token."""
        cap = min(max_ttl or MAX_TTL, MAX_TTL)
        if explicit_max_ttl:
            cap = min(cap, explicit_max_ttl)
        ttl = min(period or ttl or DEFAULT_TTL, MAX_TTL)
        names = sorted({*policies, *(() if no_default_policy else ("default",))})
        prefix = "b." if kind == "batch" else "s."
        return self.add(
            prefix + _random_id(),
            names,
            ttl=ttl if period else min(ttl, cap),
            renewable=kind != "batch",
            display_name=display_name,
            meta=meta,
            max_ttl=explicit_max_ttl or (None if period else cap),
            path=path,
            entity_id=entity_id,
            type=kind,
            num_uses=num_uses,
            period=period,
            explicit_max_ttl=explicit_max_ttl,
        )

    # -- using, renewing and revoking ----------------------------------------------------
    def use(self, token: Token) -> None:
        """Count one use of a token limited in uses (each authenticated request is one).

        The last use leaves the count at -1, as OpenBao shows it; the next request
        with the token finds it revoked.
        """
        if token.num_uses > 1:
            token.num_uses -= 1
        elif token.num_uses == 1:
            token.num_uses = -1

    def renew(self, token: Token, increment: Any = None) -> Token:
        """Extend a renewable token from now by ``increment`` (default: its original TTL);
        a periodic token by its period, whatever the increment; never past an explicit
        maximum.

        Endpoints: ``auth/token/renew-self``, ``auth/token/renew``. With a lease
        manager the token's lease is renewed (and capped) by it.
        """
        if token.type == "batch":
            raise bad_request("batch tokens cannot be renewed")
        if not token.renewable:
            raise bad_request("lease is not renewable")
        try:
            wanted = parse_duration(increment, field="increment")
        except ValueError as exc:
            raise bad_request(str(exc)) from None
        if token.period:
            wanted = token.period
        leases = self._lease_manager()
        if token.lease is not None and leases is not None:
            leases.renew(token.lease.lease_id, min(wanted, MAX_TTL))
        else:
            token._renewed_at = self.clock.now()
            token.ttl = min(wanted or token.ttl, MAX_TTL)
        return token

    def revoke_orphan(self, token: Token) -> None:
        """Revoke ``token`` alone: its children become orphans (``auth/token/revoke-orphan``)."""
        if token.type == "batch":
            raise bad_request("batch tokens cannot be revoked")
        for child in self._tokens.values():
            if child.parent_accessor == token.accessor:
                child.parent_accessor = ""
        self.revoke(token)

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
