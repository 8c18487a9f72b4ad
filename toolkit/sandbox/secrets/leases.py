"""Leases on issued secrets (spec part 2 "Lease", section 4.4), in plain Python.

:class:`LeaseStore` tracks every lease the sandbox's engines issue, on the
sandbox clock (``service.clock``). Engines call it; the ``sys/leases/*``
handlers in ``http/sys_leases.py`` are thin over it.

Public API (callers hold ``service.lock``, as every handler does)::

    lease = service.leases.create("database/creds/readonly", ttl=3600, max_ttl=86400,
                                  on_revoke=drop_user, data={"username": "v-ro-1"})
    service.leases.get(lease_id)               # Lease, or None when unknown / expired
    service.leases.renew(lease_id, 600)        # new expiry, capped by max_ttl
    service.leases.revoke(lease_id)            # True when a lease was revoked
    service.leases.revoke_prefix("database/creds/readonly")
    service.leases.revoke_force("database/")   # ignores backend errors
    service.leases.revoke_by_token(token_id)
    service.leases.tidy(is_token_valid)        # revokes leases of dead tokens
    service.leases.lookup_prefix("database/creds/")   # ["app/", "readonly/"]
    service.leases.count_irrevocable()         # ({"database/": 3}, 3)
    service.leases.list_irrevocable(limit=10_000)

Rules:

- A lease id is ``<path prefix>/<random suffix>``; its leading segments are
  the mount and the role (``database/creds/readonly/Xy12...``). The mount is the
  first segment (two for ``auth/<method>/``), written with a trailing ``/``.
- A lease expires on its own at ``expire_time``. Expiry is applied lazily: every
  call first revokes the leases that are due, popping them from a heap keyed by
  expire time, so a call costs ``O(k log n)`` for ``k`` leases due rather than a
  scan of all ``n``. Prefix listing and prefix revocation walk a tree of id
  segments, so they touch only the leases under the prefix.
- Revoking runs the lease's ``on_revoke(lease)`` callback, where an engine drops
  the database user, checks in the library account, and so on. When it raises,
  the lease stays and becomes *irrevocable*: it is kept with the error, counted
  by ``count_irrevocable`` and listed by ``list_irrevocable``, and removed only by
  a later successful revocation or by ``revoke_force``.
- Renewal: ``increment`` seconds from now (0 means the lease's original ttl),
  never past ``issue_time + max_ttl`` (``max_ttl`` None means the system maximum
  of 768 hours). Non-renewable and irrevocable leases refuse renewal.
- Revocation in the sandbox always completes before the call returns; the
  ``sync`` flag of the HTTP API only changes the status code it answers.
- Tokens with a time to live hold a lease under ``auth/token/create/`` that the
  token store creates, with an ``on_revoke`` that revokes the token; revoking
  that lease here revokes the token. ``sys/leases/renew`` refuses them (tokens
  renew through their own endpoint).

``examined`` counts the heap entries and tree nodes each call touches, so tests
can check that the cost of a request does not grow with the number of leases.
"""

from __future__ import annotations

import heapq
import secrets
import string
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..._spec.leases import split_lease_id
from .._clock import Clock
from .._plain import RecordTable, StoredRecord
from .errors import InvalidRequest
from .mounts import SYSTEM_MAX_TTL

__all__ = ["Lease", "LeaseStore", "mount_of"]


_SUFFIX_ALPHABET = string.ascii_letters + string.digits

RevokeCallback = Callable[["Lease"], None]


def mount_of(lease_id: str) -> str:
    """The mount a lease id belongs to: ``database/creds/x/1`` -> ``database/``."""
    return split_lease_id(lease_id)[0]


@dataclass(eq=False)
class Lease(StoredRecord):
    """One lease. Times are aware UTC datetimes from the sandbox clock.

    A :class:`~.._plain.StoredRecord`: assigning a field marks the lease changed for ``--state``.
    """

    lease_id: str
    issue_time: datetime
    expire_time: datetime
    ttl_granted: int
    max_ttl: int | None
    renewable: bool
    last_renewal_time: datetime | None = None
    irrevocable: bool = False
    revoke_error: str = ""
    token: str | None = field(default=None, repr=False)
    on_revoke: RevokeCallback | None = field(default=None, repr=False)
    data: Any = field(default=None, repr=False)
    _heap_seq: int = field(default=-1, repr=False)

    @property
    def mount(self) -> str:
        return mount_of(self.lease_id)

    @property
    def max_expire_time(self) -> datetime:
        """The latest instant a renewal may reach."""
        cap = self.max_ttl if self.max_ttl is not None else SYSTEM_MAX_TTL
        return self.issue_time + timedelta(seconds=cap)

    def ttl(self, now: datetime) -> int:
        """Whole seconds remaining at ``now`` (0 once expired)."""
        return max(0, int((self.expire_time - now).total_seconds()))


class _Node:
    """One segment of the lease id tree."""

    __slots__ = ("children", "is_lease", "listing")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.is_lease = False
        # The node's LIST answer, kept until a lease under it is added or removed (a
        # folder of 400,000 leases is listed again by every audit, and sorting it
        # was most of the sandbox's time in the scale benchmark).
        self.listing: list[str] | None = None


class LeaseStore:
    """Every lease of the secrets server, expiring on the sandbox clock."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        # One stored row per lease (``--state``); the indexes below are rebuilt on load.
        self._leases: RecordTable[Lease] = RecordTable("leases")
        self._heap: list[tuple[datetime, int, str]] = []
        self._seq = 0
        self._tree = _Node()
        self._irrevocable: dict[str, Lease] = {}
        self._by_token: dict[str, set[str]] = {}
        self._expiring = False
        self.examined = 0
        # Every ``sys/leases/revoke`` asked, and every revocation performed, by lease id:
        # tests count them to prove a revocation was sent and done exactly once.
        self.revoke_requests: Counter[str] = Counter()
        self.revocations: Counter[str] = Counter()

    def __len__(self) -> int:
        self._expire_due()
        return len(self._leases)

    # Stored state (``--state``): the clock and the leases; the heap, the id tree and
    # the by-token and irrevocable indexes follow from the leases and are rebuilt
    # (``after_load``), so storing a new lease writes that lease and nothing else.
    def __getstate__(self) -> dict[str, object]:
        return {"_clock": self._clock, "_leases": self._leases}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["_clock"])  # type: ignore[misc]
        self._leases = state["_leases"]

    def after_load(self) -> None:
        """Rebuild the indexes from the stored leases."""
        for lease in sorted(self._leases.values(), key=lambda le: le._heap_seq):
            self._tree_add(lease.lease_id)
            if lease.token:
                self._by_token.setdefault(lease.token, set()).add(lease.lease_id)
            if lease.irrevocable:
                self._irrevocable[lease.lease_id] = lease
            else:
                self._schedule(lease)

    def __repr__(self) -> str:
        return f"<LeaseStore {len(self._leases)} leases, {len(self._irrevocable)} irrevocable>"

    # -- creating --------------------------------------------------------------
    def create(
        self,
        path_prefix: str,
        *,
        ttl: int,
        max_ttl: int | None = None,
        renewable: bool = True,
        on_revoke: RevokeCallback | None = None,
        data: Any = None,
        token: str | None = None,
        suffix: str | None = None,
        issue_time: datetime | None = None,
        last_renewal_time: datetime | None = None,
    ) -> Lease:
        """Register a lease under ``path_prefix`` (e.g. ``database/creds/readonly``).

        ``ttl`` is capped by ``max_ttl`` and counts from the last renewal, else
        from issue; ``token`` is the id of the token that asked for the secret
        (tidy revokes the lease once that token is gone); ``suffix``,
        ``issue_time`` and ``last_renewal_time`` fix the id and backdate the
        lease (demo data). A backdated lease already past its expiry is revoked
        on the next call.
        """
        self._expire_due()
        prefix = path_prefix.strip("/")
        if not prefix:
            raise ValueError("a lease needs a path prefix such as 'database/creds/readonly'")
        if ttl < 0 or (max_ttl is not None and max_ttl < 0):
            raise ValueError("lease ttl and max_ttl cannot be negative")
        now = self._clock.now()
        issued = issue_time or now
        if max_ttl is not None:
            ttl = min(ttl, max_ttl)
        suffix = suffix or "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(24))
        lease_id = f"{prefix}/{suffix}"
        if lease_id in self._leases:
            raise ValueError(f"lease {lease_id!r} already exists")
        lease = Lease(
            lease_id=lease_id,
            issue_time=issued,
            expire_time=min(
                (last_renewal_time or issued) + timedelta(seconds=ttl),
                issued + timedelta(seconds=max_ttl if max_ttl is not None else SYSTEM_MAX_TTL),
            ),
            ttl_granted=ttl,
            max_ttl=max_ttl,
            renewable=renewable,
            last_renewal_time=last_renewal_time,
            token=token,
            on_revoke=on_revoke,
            data=data,
        )
        self._leases[lease_id] = lease
        self._tree_add(lease_id)
        if token:
            self._by_token.setdefault(token, set()).add(lease_id)
        self._schedule(lease)
        return lease

    # -- reading ---------------------------------------------------------------
    def get(self, lease_id: str) -> Lease | None:
        """The lease, or None when it is unknown or has expired and been revoked."""
        self._expire_due()
        return self._leases.get(lease_id)

    def now(self) -> datetime:
        return self._clock.now()

    def lookup_prefix(self, prefix: str) -> list[str]:
        """Direct children of ``prefix``: lease suffixes, and folders ending in ``/``.

        The empty prefix lists the top level (the mounts). Endpoint:
        ``LIST sys/leases/lookup/:prefix``.
        """
        self._expire_due()
        node = self._find(prefix)
        if node is None:
            return []
        if node.listing is None:
            children = node.children
            self.examined += len(children)
            keys: list[str] = []
            for name in sorted(children):
                child = children[name]
                if child.is_lease:
                    keys.append(name)
                if child.children:
                    keys.append(name + "/")
            node.listing = keys
        return list(node.listing)

    def leases_under(self, prefix: str) -> list[Lease]:
        """Every lease whose id starts with the folder ``prefix``, or the lease ``prefix`` itself."""
        self._expire_due()
        return [self._leases[i] for i in self._ids_under(prefix)]

    # -- renewing --------------------------------------------------------------
    def renew(self, lease_id: str, increment: int = 0) -> Lease:
        """Extend the lease by ``increment`` seconds from now (0: its original ttl).

        The new expiry is capped at ``issue_time + max_ttl``. Raises 400
        ``lease not found`` for an unknown or expired lease, 400 when the lease is
        not renewable or irrevocable. Endpoint: ``sys/leases/renew``.
        """
        self._expire_due()
        if increment < 0:
            raise InvalidRequest("increment cannot be negative")
        lease = self._leases.get(lease_id)
        if lease is None:
            raise InvalidRequest("lease not found")
        if lease.irrevocable:
            raise InvalidRequest(f"lease is irrevocable and cannot be renewed: {lease_id}")
        if not lease.renewable:
            raise InvalidRequest("lease is not renewable")
        now = self._clock.now()
        wanted = increment or lease.ttl_granted
        # A live lease expires no later than its cap, so the cap is still ahead of now.
        lease.expire_time = min(now + timedelta(seconds=wanted), lease.max_expire_time)
        lease.last_renewal_time = now
        self._schedule(lease)
        return lease

    # -- revoking --------------------------------------------------------------
    def revoke(self, lease_id: str) -> bool:
        """Revoke one lease now; False when there was none (nothing to do).

        When the engine's revocation fails the lease stays, marked irrevocable,
        and a 400 names the reason. Endpoint: ``sys/leases/revoke``.
        """
        self._expire_due()
        self.revoke_requests[lease_id] += 1
        lease = self._leases.get(lease_id)
        if lease is None:
            return False
        if not self._revoke(lease):
            raise InvalidRequest(f"failed to revoke lease {lease_id}: {lease.revoke_error}")
        return True

    def revoke_prefix(self, prefix: str) -> int:
        """Revoke every lease under ``prefix`` (or the lease ``prefix`` names); the count.

        Stops at the first lease whose revocation fails (it becomes irrevocable)
        with a 400 naming it. Endpoint: ``sys/leases/revoke-prefix/:prefix``.
        """
        self._expire_due()
        ids = self._ids_under(prefix)
        for index, lease_id in enumerate(ids):
            lease = self._leases[lease_id]
            if not self._revoke(lease):
                raise InvalidRequest(
                    f"failed to revoke {lease_id!r} ({index + 1} / {len(ids)}): "
                    f"{lease.revoke_error}",
                )
        return len(ids)

    def revoke_force(self, prefix: str) -> int:
        """Revoke every lease under ``prefix``, removing it even when the engine fails.

        Irrevocable leases go too. Endpoint: ``sys/leases/revoke-force/:prefix``.
        """
        self._expire_due()
        ids = self._ids_under(prefix)
        for lease_id in ids:
            lease = self._leases[lease_id]
            if not self._revoke(lease):
                self._remove(lease)
        return len(ids)

    def revoke_by_token(self, token: str) -> int:
        """Revoke every lease issued to ``token`` (when the token is revoked); the count."""
        self._expire_due()
        count = 0
        for lease_id in sorted(self._by_token.get(token, ())):
            lease = self._leases.get(lease_id)
            if lease is not None and self._revoke(lease):
                count += 1
        return count

    def tidy(self, is_token_valid: Callable[[str], bool]) -> int:
        """Revoke the leases whose issuing token is gone or expired; the count.

        Leases issued without a token (by the server itself) are kept. This
        scans every token with leases, as the real tidy does. Endpoint:
        ``sys/leases/tidy``.
        """
        self._expire_due()
        count = 0
        for token in sorted(self._by_token):
            if is_token_valid(token):
                continue
            count += self.revoke_by_token(token)
        return count

    # -- irrevocable leases ----------------------------------------------------
    def count_irrevocable(self) -> tuple[dict[str, int], int]:
        """Irrevocable leases per mount, and in total. Endpoint: ``sys/leases/count``."""
        self._expire_due()
        counts: dict[str, int] = {}
        for lease in self._irrevocable.values():
            counts[lease.mount] = counts.get(lease.mount, 0) + 1
        return counts, len(self._irrevocable)

    def list_irrevocable(self, limit: int | None = None) -> tuple[list[Lease], int]:
        """Up to ``limit`` irrevocable leases (None: all), and how many there are.

        Ordered by mount, then lease id. Endpoint: ``GET sys/leases?type=irrevocable``.
        """
        self._expire_due()
        ordered = sorted(self._irrevocable.values(), key=lambda le: (le.mount, le.lease_id))
        total = len(ordered)
        return (ordered if limit is None else ordered[:limit]), total

    # -- internals -------------------------------------------------------------
    def _schedule(self, lease: Lease) -> None:
        self._seq += 1
        lease._heap_seq = self._seq
        heapq.heappush(self._heap, (lease.expire_time, self._seq, lease.lease_id))
        # Renewals leave stale entries behind; rebuild before they dominate.
        if len(self._heap) > 2 * len(self._leases) + 64:
            self._heap = [
                (le.expire_time, le._heap_seq, le.lease_id)
                for le in self._leases.values()
                if not le.irrevocable
            ]
            heapq.heapify(self._heap)

    def _expire_due(self) -> None:
        if self._expiring:
            return  # a revocation callback calling back in; the outer pass continues
        self._expiring = True
        try:
            now = self._clock.now()
            while self._heap and self._heap[0][0] <= now:
                _, seq, lease_id = heapq.heappop(self._heap)
                self.examined += 1
                lease = self._leases.get(lease_id)
                if lease is None or lease.irrevocable or lease._heap_seq != seq:
                    continue  # revoked already, or renewed since this entry was pushed
                self._revoke(lease)
        finally:
            self._expiring = False

    def _revoke(self, lease: Lease) -> bool:
        """Run the engine's revocation; remove the lease, or mark it irrevocable."""
        if lease.on_revoke is not None:
            try:
                lease.on_revoke(lease)
            except Exception as exc:  # an engine's failure, kept as the lease's error
                lease.irrevocable = True
                lease.revoke_error = str(exc) or type(exc).__name__
                self._irrevocable[lease.lease_id] = lease
                return False
        self._remove(lease)
        self.revocations[lease.lease_id] += 1
        return True

    def _remove(self, lease: Lease) -> None:
        self._leases.pop(lease.lease_id, None)
        self._irrevocable.pop(lease.lease_id, None)
        lease._heap_seq = -1
        if lease.token:
            ids = self._by_token.get(lease.token)
            if ids is not None:
                ids.discard(lease.lease_id)
                if not ids:
                    del self._by_token[lease.token]
        self._tree_remove(lease.lease_id)

    def _tree_add(self, lease_id: str) -> None:
        node = self._tree
        for part in lease_id.split("/"):
            node.listing = None
            node = node.children.setdefault(part, _Node())
        node.is_lease = True

    def _tree_remove(self, lease_id: str) -> None:
        path: list[tuple[_Node, str]] = []
        node = self._tree
        for part in lease_id.split("/"):
            child = node.children.get(part)
            if child is None:
                return
            path.append((node, part))
            node = child
        node.is_lease = False
        for parent, _ in path:
            parent.listing = None
        for parent, part in reversed(path):
            child = parent.children[part]
            if child.is_lease or child.children:
                break
            del parent.children[part]

    def _find(self, prefix: str) -> _Node | None:
        node = self._tree
        for part in prefix.strip("/").split("/") if prefix.strip("/") else []:
            self.examined += 1
            child = node.children.get(part)
            if child is None:
                return None
            node = child
        return node

    def _ids_under(self, prefix: str) -> list[str]:
        """The lease ``prefix`` itself when it is one, else every lease in the folder."""
        stripped = prefix.strip("/")
        if not prefix.endswith("/") and stripped in self._leases:
            return [stripped]
        node = self._find(stripped)
        if node is None:
            return []
        base = stripped + "/" if stripped else ""
        return sorted(base + rest for rest in self._walk(node, ""))

    def _walk(self, node: _Node, path: str) -> Iterator[str]:
        for name, child in node.children.items():
            self.examined += 1
            full = path + name
            if child.is_lease:
                yield full
            if child.children:
                yield from self._walk(child, full + "/")
