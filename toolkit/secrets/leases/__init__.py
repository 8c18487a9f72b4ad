"""Leases (spec section 4.4): the area and its features, one module each.

- :mod:`.area`: :class:`Leases`, the calls (``client.leases``);
- :mod:`._lookup`: the lookup tree walked, leases looked up and counted from LIST;
- :mod:`.radar`: the streamed, resumable scan, the time-left views and the radar;
- :mod:`.revocation`: revocations throttled and sent exactly once (the journal);
- :mod:`.rules`: the rules over lease frames (summary, counts, expiry, findings).

The features take the HTTP layer, never the area; the area's methods are thin
calls into them.
"""

from __future__ import annotations

from ..._spec.leases import split_lease_id
from ._lookup import LEASES, MOUNTS_UNCHECKED, count_leases
from .area import IRREVOCABLE, LEASE_ACTIONS, Leases
from .revocation import REVOKE_BATCHES, revoke_in_batches
from .rules import (
    EXPIRING,
    LEASE_COUNTS,
    LEASE_EXPIRY,
    LEASE_SUMMARY,
    MOUNT_COUNTS,
    PAST_DUE,
    counts_by_mount,
    expiry_findings,
    expiry_states,
    lease_count_findings,
    lease_summary,
    top_roles,
)

__all__ = [
    "EXPIRING",
    "IRREVOCABLE",
    "LEASES",
    "LEASE_ACTIONS",
    "LEASE_COUNTS",
    "LEASE_EXPIRY",
    "LEASE_SUMMARY",
    "MOUNTS_UNCHECKED",
    "MOUNT_COUNTS",
    "PAST_DUE",
    "REVOKE_BATCHES",
    "Leases",
    "count_leases",
    "counts_by_mount",
    "expiry_findings",
    "expiry_states",
    "lease_count_findings",
    "lease_summary",
    "revoke_in_batches",
    "split_lease_id",
    "top_roles",
]
