"""The audit log joined with the live inventory: which principals the log never saw, and
the accessors hashed through the server's audit devices to match them
(see :mod:`toolkit.auditlog`)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._errors import InputError
from .log import HMAC_PREFIX, NOT_SEEN, SECRET_ID_CAVEAT, AuditLog

__all__ = ["audit_devices", "audit_hashes", "unused_frame"]


# -- the live inventory -----------------------------------------------------------------
def audit_devices(client: Any) -> list[str]:
    """The audit device paths (``GET sys/audit``, sudo), without their trailing ``/``."""
    from ..secrets._base import unwrap

    data = unwrap(client.http.json("GET", "/sys/audit"))
    return sorted(k.rstrip("/") for k, v in data.items() if isinstance(v, dict))


def audit_hashes(client: Any, device: str, values: Sequence[str]) -> dict[str, str]:
    """Each value's HMAC as ``device`` logs it: one ``sys/audit-hash/<device>`` a value.

    The call computes and stores nothing, so it is marked safe to repeat.
    """
    from .._http import Request
    from ..secrets._base import decode_json, unwrap

    path = f"/sys/audit-hash/{device.strip('/')}"
    calls = [Request("POST", path, json={"input": v}, idempotent=True) for v in values]
    hashes: dict[str, str] = {}
    for value, response in zip(values, client.http.many(calls), strict=True):
        hashed = unwrap(decode_json(response, "POST")).get("hash")
        if hashed:
            hashes[value] = str(hashed)
    return hashes


def unused_frame(
    log: AuditLog,
    client: Any,
    *,
    days: int = 90,
    devices: Sequence[str] | None = None,
    expected_networks: Sequence[str] | None = None,
    tokens: pd.DataFrame | None = None,
    roles: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The live tokens and auth roles joined with the log's last use.

    One row per live token accessor (:meth:`~toolkit.secrets.tokens.Tokens.inventory`), AppRole role,
    userpass user and certificate role (:class:`toolkit.sql_tables.SQLTables`'s
    ``auth_roles``): ``kind``, ``name``, ``mount``, ``last_login``,
    ``last_use``, ``requests``, ``state`` (``never used since the log
    begins``, ``unused for N days``, ``used``, or ``not matched`` when the
    accessors could not be hashed), ``unexpected_addresses`` (addresses outside
    ``expected_networks``), ``note``. ``attrs["coverage"]`` is the house's
    coverage record (:mod:`toolkit._coverage`): a refused ``sys/audit`` or
    ``sys/audit-hash``, tokens left unmatched, and whatever of the log could not
    be read (lines, times, compressed files cut short) are its gaps; with the log
    not read whole, no row is called never used or unused: it is ``not seen in
    what was read``. ``attrs["log"]`` says the period the log covers (first and
    last time), its lines, what could not be read, and any note.
    """
    from .._errors import APIError, PermissionDenied

    if days < 1:
        raise InputError(f"days must be at least 1, not {days}")
    networks = [ipaddress.ip_network(n, strict=False) for n in expected_networks or []]
    cover = log.span
    notes: list[str] = []
    # What the log could not be read of is this view's gap too: a use may be in it.
    record = log.coverage("unused_frame")
    record.read = 0
    if tokens is None:
        tokens = client.tokens.inventory()
    # Tokens the inventory could not look up are missing from it: not "unused".
    from .._coverage import coverage_of

    for inventory in coverage_of(tokens):
        record.gaps.extend(inventory.gaps)
    if roles is None:
        from ..sql_tables import SQLTables

        tables = SQLTables(client)
        roles = tables.sql("select * from auth_roles")
        for gap in tables.gaps_frame().itertuples():
            record.note_gap(str(gap.part), None, str(gap.reason))
    last = log.last_use_frame().set_index(["kind", "name"])
    per_address = log.addresses_frame()
    logged = set(last.index.get_level_values("name"))
    accessors = [str(a) for a in tokens.index]
    hashed_in_log = any(str(n).startswith(HMAC_PREFIX) for n in logged)
    matched: dict[str, str] = {a: a for a in accessors}
    tokens_matched = True
    if hashed_in_log and accessors:  # no live token: nothing to hash
        matched = {}
        try:
            names = list(devices) if devices else audit_devices(client)
        except (PermissionDenied, APIError) as exc:
            names = []
            record.note_gap(
                "sys/audit",
                getattr(exc, "status", None),
                f"audit devices not listed (sys/audit needs sudo: {exc}); pass devices=[...]",
            )
        for device in names:
            try:
                hashes = audit_hashes(client, device, accessors)
            except (PermissionDenied, APIError) as exc:
                record.note_gap(
                    f"sys/audit-hash/{device}",
                    getattr(exc, "status", None),
                    f"refused ({exc}): needs update there",
                )
                continue
            matched.update({a: h for a, h in hashes.items() if h in logged or a not in matched})
        # Hashed, but no live accessor's HMAC in the log at all: the join could not see
        # (another device's key, another server's log), so none is called "never used".
        seen_in_log = any(h in logged for h in matched.values())
        tokens_matched = seen_in_log or not accessors
        if not tokens_matched:
            why = (
                "no live token accessor's HMAC appears in the log (another audit device's "
                "key or another server's log?): tokens not called unused"
                if matched
                else "token accessors not matched: the log holds only their HMACs"
            )
            record.note_gap("auth/token/accessors", None, why)
    now = cover.last_time
    rows = []
    for accessor in accessors:
        key = matched.get(accessor)
        rows.append(_usage_row("token", accessor, "auth/token/", last, key, tokens_matched))
    for role in roles.itertuples():
        rows.append(_usage_row(str(role.kind), str(role.name), str(role.mount), last,
                               str(role.name), True))  # fmt: skip
    frame = pd.DataFrame(
        rows,
        columns=["kind", "name", "mount", "log_name", "last_login", "last_use", "requests",
                 "state", "note"],
    )  # fmt: skip
    for column in ("last_login", "last_use"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    frame["requests"] = frame["requests"].astype("Int64")
    seen = frame["last_login"].combine_first(frame["last_use"])
    cutoff = None if now is None else pd.Timestamp(now) - pd.Timedelta(days=days)
    stale = seen.notna() & (cutoff is not None) & (seen < cutoff) if cutoff is not None else False
    # An absence is said only of a log read whole: a line not read may hold the use.
    never, unused = (
        ("never used since the log begins", f"unused for {days} days")
        if cover.complete
        else (NOT_SEEN, f"not seen for {days} days in what was read (the log was not read whole)")
    )
    frame.loc[frame["state"].isna() & seen.isna(), "state"] = never
    frame.loc[frame["state"].isna() & stale, "state"] = unused
    frame["state"] = frame["state"].fillna("used")
    frame["unexpected_addresses"] = [
        _unexpected(per_address, kind, log_name, networks)
        for kind, log_name in zip(frame["kind"], frame["log_name"], strict=True)
    ]
    frame = frame.drop(columns="log_name")
    for column in ("kind", "name", "mount", "state", "note", "unexpected_addresses"):
        frame[column] = frame[column].astype("string")
    if not networks:
        notes.append("no expected_networks given: addresses not judged")
    record.note_read(len(frame))
    record.attach(frame)
    frame.attrs["log"] = {**cover.as_dict(), "notes": notes}
    return frame


def _usage_row(
    kind: str, name: str, mount: str, last: pd.DataFrame, log_name: str | None, matched: bool
) -> dict[str, Any]:
    row: dict[str, Any] = {"kind": kind, "name": name, "mount": mount, "log_name": log_name,
                           "last_login": None, "last_use": None, "requests": 0, "state": None,
                           "note": SECRET_ID_CAVEAT if kind == "approle role" else ""}  # fmt: skip
    if not matched or log_name is None:
        row.update(state="not matched", requests=None)
        return row
    if (kind, log_name) in last.index:
        found: Any = last.loc[(kind, log_name)]
        row.update(last_login=found["last_login"], last_use=found["last_use"],
                   requests=int(found["requests"]))  # fmt: skip
    return row


def _unexpected(per_address: pd.DataFrame, kind: str, log_name: Any, networks: list[Any]) -> str:
    if not networks or log_name is None or pd.isna(log_name):
        return ""
    column = "accessor" if kind == "token" else "role"
    mine = per_address[per_address[column] == log_name]["remote_address"].dropna().unique()
    outside = []
    for text in mine:
        try:
            address = ipaddress.ip_address(str(text))
        except ValueError:
            outside.append(str(text))
            continue
        if not any(address in n for n in networks):
            outside.append(str(text))
    return ", ".join(sorted(outside))
