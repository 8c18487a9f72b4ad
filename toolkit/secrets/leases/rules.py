"""The rules over lease frames: summaries, counts by mount, the findings, expiry states.

Pure functions of the frames the :class:`~toolkit.secrets.leases.Leases` views
return (no request is sent here): :func:`lease_summary` of a looked-up frame,
:func:`counts_by_mount`, :func:`top_roles` and :func:`lease_count_findings` of
a LIST-only count, :func:`expiry_states` and :func:`expiry_findings` of a
looked-up frame judged at a given time.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd

from ..._coverage import carries_coverage
from ..._errors import InputError
from ..._frames import Schema, build_frame
from ...findings import Finding, findings_frame

__all__ = [
    "EXPIRING",
    "LEASE_COUNTS",
    "LEASE_EXPIRY",
    "LEASE_SUMMARY",
    "MOUNT_COUNTS",
    "PAST_DUE",
    "counts_by_mount",
    "expiry_findings",
    "expiry_states",
    "lease_count_findings",
    "lease_summary",
    "top_roles",
]

LEASE_SUMMARY = Schema.of(
    "mount count:int expiring_1h:int expiring_24h:int min_ttl:int median_ttl:float",
    index="mount",
)
LEASE_COUNTS = Schema.of("mount role kind count:int")
MOUNT_COUNTS = Schema.of("mount kind count:int roles:int", index="mount")
LEASE_EXPIRY = Schema.of(
    "lease_id state mount role expire_time:datetime overdue_seconds:int ttl:int",
    index="lease_id",
)
PAST_DUE = "past due"
EXPIRING = "expiring soon"


@carries_coverage("lease_rules.lease_summary")
def lease_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per mount of a :meth:`~toolkit.secrets.leases.Leases.leases_by_mount` frame: ``count``, leases expiring
    within 1 hour and 24 hours (by ``ttl``), ``min_ttl`` and ``median_ttl``."""
    rows = []
    for mount, group in frame.groupby("mount", sort=True, observed=True):
        ttl = group["ttl"].astype("Int64")
        rows.append(
            {
                "mount": mount,
                "count": len(group),
                "expiring_1h": int((ttl <= 3600).sum()),
                "expiring_24h": int((ttl <= 86400).sum()),
                "min_ttl": int(ttl.min()) if len(ttl.dropna()) else None,
                "median_ttl": float(ttl.median()) if len(ttl.dropna()) else None,
            }
        )
    return build_frame(rows, LEASE_SUMMARY)


@carries_coverage("lease_rules.counts_by_mount")
def counts_by_mount(counts: pd.DataFrame) -> pd.DataFrame:
    """Per mount of a :func:`~toolkit.secrets.leases.count_leases` frame: ``kind``, ``count``, ``roles`` (how many);
    index ``mount``, most leases first."""
    rows = [
        {
            "mount": mount,
            "kind": group["kind"].iloc[0],
            "count": int(group["count"].sum()),
            "roles": int((group["role"].fillna("") != "").sum()),
        }
        for mount, group in counts.groupby("mount", sort=True)
    ]
    frame = build_frame(rows, MOUNT_COUNTS)
    return frame.sort_values("count", ascending=False, kind="stable")


@carries_coverage("lease_rules.top_roles")
def top_roles(counts: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The ``n`` engine roles holding the most leases, from a :func:`~toolkit.secrets.leases.count_leases` frame."""
    if n < 1:
        raise InputError(f"n must be at least 1, not {n}")
    roles = counts[(counts["kind"] == "secret") & (counts["role"].fillna("") != "")]
    return roles.nlargest(n, "count", keep="first").reset_index(drop=True)


@carries_coverage("lease_rules.lease_count_findings")
def lease_count_findings(counts: pd.DataFrame, *, threshold: int = 1000) -> pd.DataFrame:
    """The lease-explosion finder: a role (or an auth mount) holding more than ``threshold``
    leases is **high**; more than a tenth of it, **low**, so growth shows before it hurts."""
    if threshold < 1:
        raise InputError(f"threshold must be at least 1, not {threshold}")
    found = []
    rows: list[Any] = counts.to_dict("records")
    for row in rows:
        count = int(row["count"])
        role = "" if pd.isna(row["role"]) else str(row["role"])
        what = f"{row['mount']}{role}"
        kind = "role" if row["kind"] == "secret" and role else "mount"
        if count > threshold:
            reason = f"{count} leases under one {kind} (over {threshold}): a lease explosion"
            found.append(Finding("high", "leases", what, reason))
        elif count > threshold // 10:
            reason = f"{count} leases under one {kind} (over a tenth of {threshold})"
            found.append(Finding("low", "leases", what, reason))
    return findings_frame(found)


@carries_coverage("lease_rules.expiry_states")
def expiry_states(
    leases: pd.DataFrame, *, now: datetime | None = None, within: int | timedelta = 3600
) -> pd.DataFrame:
    """The leases of a :meth:`~toolkit.secrets.leases.Leases.leases_by_mount` frame that need a look, in two kinds
    kept apart.

    - ``past due``: the expiry time has passed and the server still holds the
      lease (its revocation is failing: irrevocable, or a stuck backend);
    - ``expiring soon``: expires within ``within`` (seconds or a timedelta).

    Index ``lease_id``; columns ``state``, ``mount``, ``role``,
    ``expire_time``, ``overdue_seconds`` (past due only), ``ttl``; past-due
    first, then by expiry. ``now`` defaults to the current UTC time.
    """
    window = within.total_seconds() if isinstance(within, timedelta) else float(within)
    if window < 0:
        raise InputError(f"within must not be negative, not {within}")
    moment = pd.Timestamp(now or datetime.now(UTC))
    expire = leases["expire_time"]
    past = expire.notna() & (expire <= moment)
    soon = expire.notna() & ~past & (expire <= moment + pd.Timedelta(seconds=window))
    rows = []
    for state, mask in ((PAST_DUE, past), (EXPIRING, soon)):
        part = leases[mask].sort_values("expire_time", kind="stable")
        for lease_id, row in part.iterrows():
            overdue = (
                int((moment - row["expire_time"]).total_seconds()) if state == PAST_DUE else None
            )
            rows.append(
                {
                    "lease_id": lease_id,
                    "state": state,
                    "mount": row["mount"],
                    "role": row["role"],
                    "expire_time": row["expire_time"],
                    "overdue_seconds": overdue,
                    "ttl": row["ttl"],
                }
            )
    return build_frame(rows, LEASE_EXPIRY)


@carries_coverage("lease_rules.expiry_findings")
def expiry_findings(states: pd.DataFrame) -> pd.DataFrame:
    """Findings of an :func:`expiry_states` frame, one per (state, mount, role):
    past-due leases are **high**, leases expiring soon **info**."""
    found = []
    for (state, mount, role), group in states.groupby(
        ["state", "mount", "role"], sort=True, dropna=False
    ):
        where = f"{mount}{role}" if isinstance(role, str) and role else str(mount)
        if state == PAST_DUE:
            worst = int(group["overdue_seconds"].max())
            reason = f"{len(group)} leases past due (up to {worst}s): revocation is failing"
            found.append(Finding("high", "leases", where, reason))
        else:
            found.append(Finding("info", "leases", where, f"{len(group)} leases expiring soon"))
    return findings_frame(found)
