"""The key rotation audit of the key management engine: each key version's age, and
the keys whose newest version is older than the rotation period
(:meth:`toolkit.secrets.keymgmt.KeyManagement.rotation_audit` reads the versions; these
functions judge them, and need no server).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from .._coverage import carries_coverage
from .._errors import InputError
from .._frames import Schema, build_frame
from ..findings import Finding, findings_frame

__all__ = ["ROTATION", "key_findings", "rotation_audit"]

ROTATION = Schema.of(
    "key version:int creation_time:datetime age:object state latest:bool overdue:bool",
)


def _period(period: timedelta | int) -> timedelta:
    span = period if isinstance(period, timedelta) else timedelta(days=period)
    if span <= timedelta(0):
        raise InputError(f"the rotation period must be positive, not {period!r}")
    return span


@carries_coverage("keymgmt.rotation_audit")
def rotation_audit(versions: pd.DataFrame, period: timedelta | int, now: datetime) -> pd.DataFrame:
    """The rows of :meth:`KeyManagement.rotation_audit` from a :meth:`key_versions_frame` frame."""
    span = _period(period)
    moment = pd.Timestamp(now)
    flat = versions.reset_index()
    rows = []
    records: list[Any] = flat.to_dict("records")
    newest: dict[str, int] = {}
    for rec in records:
        newest[rec["key"]] = max(newest.get(rec["key"], 0), int(rec["version"]))
    for rec in sorted(records, key=lambda r: (str(r["key"]), int(r["version"]))):
        created = rec["creation_time"]
        age: timedelta | None = None if pd.isna(created) else (moment - created).to_pytimedelta()
        latest = int(rec["version"]) == newest[rec["key"]]
        rows.append(
            {
                "key": rec["key"],
                "version": int(rec["version"]),
                "creation_time": created,
                "age": age,
                "state": "enabled" if bool(rec["enabled"]) else "disabled",
                "latest": latest,
                "overdue": bool(latest and age is not None and age > span),
            }
        )
    frame = build_frame(rows, ROTATION).set_index(["key", "version"])
    frame.attrs["period"] = span
    return frame


@carries_coverage("keymgmt.key_findings")
def key_findings(audit: pd.DataFrame, mount: str = "keymgmt") -> pd.DataFrame:
    """**medium** for each key whose newest version is older than the rotation period of a
    :func:`rotation_audit` frame; disabled versions never raise a finding of their own."""
    span: timedelta | None = audit.attrs.get("period")
    found = []
    overdue: list[Any] = (
        audit[audit["overdue"].fillna(False).astype(bool)].reset_index().to_dict("records")
    )
    for rec in overdue:
        days = rec["age"].days
        period = f" (period {span.days} days)" if span is not None else ""
        reason = (
            f"not rotated for {days} days: the newest version v{rec['version']} is overdue{period}"
        )
        where = f"{mount.strip('/')}/key/{rec['key']}"
        found.append(Finding("medium", "keymgmt", where, reason))
    return findings_frame(found)
