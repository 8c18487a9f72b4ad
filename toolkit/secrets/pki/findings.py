"""What is wrong with a mount's certificates: :func:`certificate_findings`."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from ..._coverage import carries_coverage
from ...findings import Finding, findings_frame


@carries_coverage("findings.certificate_findings")
def certificate_findings(
    issuers: pd.DataFrame,
    roles: pd.DataFrame,
    certificates: pd.DataFrame,
    *,
    mount: str,
    now: datetime,
    expiring_within: timedelta = timedelta(days=30),
) -> pd.DataFrame:
    """Findings from a mount's issuers (:meth:`PKI.issuers_frame`), roles
    (:meth:`PKI.roles_frame`) and stored certificates (:meth:`PKI.certificates_frame`).

    - **high**: a role whose ``issuer_ref`` (``default`` included) is a self-signed
      root: every leaf it issues keeps the root's key in daily use; an issuer that
      expires within ``expiring_within`` (everything under it stops verifying).
    - **medium**: a role whose ``issuer_ref`` names no issuer; a certificate, not
      revoked, that expires within ``expiring_within``.
    - **low**: expired certificates still stored (one finding, with the count): a tidy
      would remove them.
    """
    found: list[Finding] = []
    by_ref: dict[str, Any] = {}
    for issuer_id, row in issuers.iterrows():
        by_ref[str(issuer_id)] = row
        if isinstance(row.get("issuer_name"), str) and row["issuer_name"]:
            by_ref[row["issuer_name"]] = row
        if pd.notna(row.get("is_default")) and bool(row.get("is_default")):
            by_ref["default"] = row
    horizon = now + expiring_within
    for issuer_id, row in issuers.iterrows():
        name = _named(row.get("issuer_name")) or issuer_id
        if pd.notna(row["not_after"]) and row["not_after"] <= horizon:
            found.append(
                Finding(
                    "high",
                    "certificates",
                    f"{mount}/issuer/{name}",
                    f"the issuer expires {row['not_after']:%Y-%m-%d}: what it signed stops verifying",
                )
            )
    for role, row in roles.iterrows():
        ref = _named(row.get("issuer_ref")) or "default"
        issuer = by_ref.get(ref)
        where = f"{mount}/roles/{role}"
        if issuer is None:
            found.append(
                Finding("medium", "certificates", where, f"issuer_ref {ref!r} names no issuer")
            )
        elif bool(issuer["self_signed"]):
            found.append(
                Finding(
                    "high",
                    "certificates",
                    where,
                    f"issues straight from the root {issuer.get('issuer_name') or ref}: "
                    "sign leaves with an intermediate and keep the root offline",
                )
            )
    live = certificates[
        ~certificates["revoked"].astype(bool) & ~certificates["expired"].astype(bool)
    ]
    for serial, row in live[live["not_after"] <= horizon].iterrows():
        found.append(
            Finding(
                "medium",
                "certificates",
                f"{mount}/cert/{serial}",
                f"{row['subject']} expires {row['not_after']:%Y-%m-%d}",
            )
        )
    stale = int(certificates["expired"].astype(bool).sum())
    if stale:
        found.append(
            Finding(
                "low",
                "certificates",
                f"{mount}/certs",
                f"{stale} expired certificate(s) still stored: a tidy removes them",
            )
        )
    return findings_frame(found)


def _named(value: Any) -> str:
    """A name from a frame's cell; "" for a missing one (``pd.NA`` has no truth value)."""
    return value if isinstance(value, str) else ""
