"""Leases (spec section 4.4): lookup, renew, revoke, tidy, counts, and the views.

:meth:`Leases.leases_by_mount` walks the lookup tree (``LIST
sys/leases/lookup/:prefix``; folders end in ``/``) level by level, listing the
folders of a level concurrently, then looks up every lease concurrently, and
builds one frame in one pass. :meth:`Leases.renew_leases` and
:meth:`Leases.revoke_leases` act on many leases and report each one, never
stopping at a failure.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd

from .._errors import APIError, InputError, ToolkitError, one_line
from .._frames import Col, Schema, build_frame, frame_from_columns
from .._gc import collector_paused
from .._http import HTTPLayer, Request, decode_json, segments
from .._progress import progress
from .._records import Record, integer
from .._time import parse_time
from ..findings import Finding, combine, findings_frame
from ._base import (
    GONE,
    Area,
    list_keys_of,
    listed_keys,
    lookup_requests,
    records_of,
    require_mounts,
    unwrap,
    warnings_of,
)

__all__ = [
    "LEASES",
    "LEASE_ACTIONS",
    "LEASE_COUNTS",
    "LEASE_EXPIRY",
    "LEASE_SUMMARY",
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

LEASES = Schema.of(
    "lease_id",
    Col("mount"),
    Col("role"),
    Col("issue_time", "datetime"),
    Col("expire_time", "datetime"),
    Col("last_renewal_time", "datetime"),
    Col("ttl", "int"),
    Col("renewable", "bool"),
    index="lease_id",
)
LEASE_SUMMARY = Schema.of(
    "mount",
    Col("count", "int"),
    Col("expiring_1h", "int"),
    Col("expiring_24h", "int"),
    Col("min_ttl", "int"),
    Col("median_ttl", "float"),
    index="mount",
)
LEASE_ACTIONS = Schema.of(
    "lease_id",
    Col("action"),
    Col("detail"),
    index="lease_id",
)
# A list of names.
Names = list[str]

IRREVOCABLE = Schema.of(
    "lease_id",
    Col("mount"),
    Col("expire_time", "datetime"),
    Col("error"),
    index="lease_id",
)


def split_lease_id(lease_id: str, mounts: Sequence[str] = ()) -> tuple[str, str]:
    """The mount and role of a lease id.

    The mount is the longest of ``mounts`` the id starts with, else the first
    segment (two for ``auth/<method>/``), with a trailing ``/``. The role is
    the segment after the engine's endpoint word: ``database/creds/readonly/Xy``
    is mount ``database/``, role ``readonly``; ``ad/library/helpdesk/check-out/Xy``
    role ``helpdesk``; with a single segment before the suffix, that segment.
    """
    mount = ""
    for candidate in mounts:
        if lease_id.startswith(candidate) and len(candidate) > len(mount):
            mount = candidate
    parts = lease_id.split("/")
    if not mount:
        mount = f"auth/{parts[1]}/" if parts[0] == "auth" and len(parts) > 2 else parts[0] + "/"
    middle = [p for p in lease_id[len(mount) :].split("/")[:-1] if p]
    return mount, middle[1] if len(middle) > 1 else (middle[0] if middle else "")


class Leases(Area):
    """``sys/leases/*``: one lease at a time, and in bulk."""

    @staticmethod
    def summary(frame: pd.DataFrame) -> pd.DataFrame:
        """Per mount of a :meth:`leases_by_mount` frame: counts, expiring within 1 hour
        and 24 hours, shortest and median ttl (:func:`lease_summary`; no request)."""
        return lease_summary(frame)

    # -- one lease -------------------------------------------------------------
    def lookup(self, lease_id: str) -> Record:
        """A lease's times. ``POST /sys/leases/lookup`` with ``lease_id`` (a read: repeatable).

        Fields ``id``, ``issue_time``, ``expire_time``, ``last_renewal_time``
        (the real server's ``last_renewal`` is read as this), ``renewable``,
        ``ttl``; times are aware UTC datetimes.
        """
        if not lease_id:
            raise InputError("lease_id is required")
        data = unwrap(
            self._http.json(
                "POST", "/sys/leases/lookup", json={"lease_id": lease_id}, idempotent=True
            )
        )
        return Record(_lease_fields(data, lease_id), kind="lease")

    def list_leases(self, prefix: str) -> list[str]:
        """Keys under ``prefix`` (leases, and folders ending in ``/``).

        ``LIST /sys/leases/lookup/:prefix`` (sudo).
        """
        return self._list(_lookup_path(prefix))

    def renew(self, lease_id: str, increment: int = 0) -> Record:
        """Extend a lease by ``increment`` seconds. ``POST /sys/leases/renew``.

        Returns ``lease_id``, ``renewable``, ``lease_duration`` and the server's
        ``warnings`` (a list; a renewal capped at the lease's max ttl says so there).
        """
        if not lease_id:
            raise InputError("lease_id is required")
        if increment < 0:
            raise InputError(f"increment must not be negative, not {increment}")
        payload = self._http.json(
            "POST",
            "/sys/leases/renew",
            json={"lease_id": lease_id, "increment": increment},
            check="look the lease up (leases.lookup) to see its expire_time",
        )
        data = payload if isinstance(payload, Mapping) else {}
        return Record(
            {
                "lease_id": data.get("lease_id") or lease_id,
                "renewable": data.get("renewable"),
                "lease_duration": data.get("lease_duration"),
                "warnings": warnings_of(payload),
            },
            kind="lease-renewal",
        )

    def revoke(self, lease_id: str, *, sync: bool = True) -> None:
        """Revoke a lease (``sync=False`` queues it). ``POST /sys/leases/revoke``.

        Sent again when its outcome is unknown: revoking a lease already gone
        answers 204, so a repetition changes nothing.
        """
        if not lease_id:
            raise InputError("lease_id is required")
        self._http.json(
            "POST",
            "/sys/leases/revoke",
            json={"lease_id": lease_id, "sync": sync},
            idempotent=True,
        )

    def revoke_prefix(self, prefix: str, *, sync: bool = True) -> None:
        """Revoke every lease under ``prefix``. ``POST /sys/leases/revoke-prefix/:prefix`` (sudo)."""
        path = _prefix(prefix)
        self._http.json(
            "POST",
            f"/sys/leases/revoke-prefix/{path}",
            json={"sync": sync},
            check="list the leases under the prefix (leases.list_leases)",
        )

    def revoke_force(self, prefix: str) -> None:
        """Revoke everything under ``prefix``, ignoring backend errors.

        ``POST /sys/leases/revoke-force/:prefix`` (sudo). Use only when the
        backend can no longer revoke: secrets may stay valid on it.
        """
        self._http.json(
            "POST",
            f"/sys/leases/revoke-force/{_prefix(prefix)}",
            check="list the leases under the prefix (leases.list_leases)",
        )

    def tidy(self) -> Names:
        """Remove dangling lease entries. ``POST /sys/leases/tidy``; returns the warnings."""
        return warnings_of(self._http.json("POST", "/sys/leases/tidy"))

    def count_irrevocable(self, *, include_child_namespaces: bool = False) -> Record:
        """``GET /sys/leases/count?type=irrevocable``: ``lease_count`` and ``counts`` per mount."""
        params = {"type": "irrevocable", "include_child_namespaces": include_child_namespaces}
        data = unwrap(self._http.json("GET", "/sys/leases/count", params=_query(params)))
        return Record(
            {
                "lease_count": integer(data.get("lease_count"), "lease_count"),
                "counts": dict(data.get("counts") or {}),
            },
            kind="lease-count",
        )

    def irrevocable_frame(
        self, limit: int | str | None = None, *, include_child_namespaces: bool = False
    ) -> pd.DataFrame:
        """Irrevocable leases. ``GET /sys/leases?type=irrevocable``.

        ``limit`` caps the list (``"none"`` for all; unset, the server's 10,000).
        Index ``lease_id``; columns ``mount``, ``expire_time``, ``error``;
        ``frame.attrs`` holds ``lease_count`` and the server's ``warnings``.
        """
        params: dict[str, Any] = {
            "type": "irrevocable",
            "include_child_namespaces": include_child_namespaces,
        }
        if limit is not None:
            params["limit"] = str(limit)
        payload = self._http.json("GET", "/sys/leases", params=_query(params))
        data = unwrap(payload)
        raw = data.get("leases") or []
        items: list[Mapping[str, Any]] = []
        if isinstance(raw, Mapping):  # per mount point
            for mount, leases in raw.items():
                items.extend({"mount": mount, **lease} for lease in records_of(leases, "leases"))
        else:
            items = list(records_of(raw, "leases"))
        rows = [
            {
                "lease_id": item.get("lease_id") or item.get("id"),
                "mount": item.get("mount")
                or item.get("mount_id")
                or split_lease_id(str(item.get("lease_id") or ""))[0],
                "expire_time": item.get("expire_time"),
                "error": item.get("error"),
            }
            for item in items
        ]
        frame = build_frame(rows, IRREVOCABLE)
        frame.attrs["lease_count"] = integer(data.get("lease_count"), "lease_count", len(rows))
        frame.attrs["warnings"] = warnings_of(payload)
        return frame

    # -- mounts ------------------------------------------------------------------
    def list_mounts(self) -> Names:
        """Mount paths of the secrets engines and auth methods (``sys/mounts``, ``sys/auth``)."""
        found: list[str] = []
        for path, prefix in (("/sys/mounts", ""), ("/sys/auth", "auth/")):
            try:
                data = unwrap(self._http.json("GET", path))
            except APIError:
                continue
            found.extend(prefix + k for k in data if k.endswith("/"))
        return found

    # -- views -----------------------------------------------------------------
    def lease_ids(self, prefix: str = "") -> Names:
        """Every lease id under ``prefix`` (all when empty), walking the lookup tree.

        The folders of each level are listed concurrently.
        """
        level = [_folder(prefix)]
        found: list[str] = []
        while level:
            listed = list_keys_of(self._http, [_lookup_path(p) for p in level])
            folders, level = level, []
            for folder, keys in zip(folders, listed, strict=True):
                for key in keys:
                    (level if key.endswith("/") else found).append(folder + key)
        return found

    def leases_by_mount(
        self,
        prefix: str | None = None,
        mounts: Iterable[str] | None = None,
        *,
        show_progress: bool = False,
    ) -> pd.DataFrame:
        """Every lease under ``prefix`` (or under ``mounts``, or all), looked up.

        Walks the lookup tree, then looks up every lease concurrently. Index
        ``lease_id``; columns ``mount``, ``role``, ``issue_time``,
        ``expire_time``, ``last_renewal_time`` (UTC datetimes), ``ttl`` (seconds
        left), ``renewable``; sorted by mount then expiry. A lease that expires
        between listing and lookup is left out. ``show_progress`` shows a bar
        over the lookups. A mount (or a prefix's mount) that nothing is mounted at
        raises :class:`~toolkit.MountNotFound`: the lookup tree answers an unknown
        prefix as an empty folder.
        """
        if prefix is not None and mounts is not None:
            raise InputError("pass prefix or mounts, not both")
        mounts = None if mounts is None else list(mounts)
        require_mounts(self._http, mounts if mounts is not None else [prefix] if prefix else [])
        starts = [_folder(m) for m in mounts] if mounts is not None else [prefix or ""]
        ids: list[str] = []
        for start in starts:
            ids.extend(self.lease_ids(start))
        return self.lookup_leases(
            ids, mounts=starts if mounts is not None else None, show_progress=show_progress
        )

    def lookup_leases(
        self,
        ids: Iterable[str],
        mounts: Iterable[str] | None = None,
        *,
        show_progress: bool = False,
    ) -> pd.DataFrame:
        """The leases ``ids`` (a list, or a frame's index), looked up concurrently.

        ``POST /sys/leases/lookup`` for each (a read: repeatable). The frame of :meth:`leases_by_mount`;
        an id the server does not know (expired, revoked, mistyped) is left out.
        ``mounts`` are the mount paths to split ids by (default: the server's).
        """
        todo = list(dict.fromkeys(ids))
        mount_paths = list(mounts) if mounts is not None else self._known_mounts()

        # The collector stays off until every temporary of the lookups is gone: the
        # requests, the answers' documents and the columns are all freed by
        # reference counting, and resuming while they were still alive made the
        # next allocation walk all of them.
        with collector_paused():
            calls = lookup_requests("/sys/leases/lookup", "lease_id", todo)
            answers = progress(
                self._http.many(calls),
                desc="looking up leases",
                total=len(todo),
                enabled=show_progress,
            )
            kept: list[str] = []
            datas: list[dict[str, Any]] = []
            for lease_id, response in zip(todo, answers, strict=True):
                if response.status_code in GONE:  # expired or revoked since the listing
                    continue
                kept.append(lease_id)
                datas.append(unwrap(decode_json(response, "POST")))
            del calls, answers
            # Times stay text here: the frame parses each column at once.
            columns = _lease_columns(datas, kept, _text)
            del datas
            columns["mount"], columns["role"] = _mounts_and_roles(kept, mount_paths)
            frame = frame_from_columns(columns, LEASES)
            del columns, kept
            return frame.sort_values(["mount", "expire_time"], kind="stable")

    def _known_mounts(self) -> Names:
        try:
            return self.list_mounts()
        except ToolkitError:
            return []

    # -- counts and throttled revocation (module functions below hold the logic) --------
    def lease_counts(self, prefix: str = "", mounts: Iterable[str] | None = None) -> pd.DataFrame:
        """How many leases each mount and role holds, from ``LIST`` alone: :func:`count_leases`.

        ``LIST /sys/leases/lookup/:prefix`` (sudo), walked; no lease is looked
        up. ``mounts`` are the mount paths to split by (default: the server's).
        """
        mount_paths = list(mounts) if mounts is not None else self._known_mounts()
        return count_leases(self._http, prefix, mount_paths)

    def revoke_in_batches(
        self,
        ids: Iterable[str],
        *,
        rate: float,
        batch_size: int = 100,
        dry_run: bool = True,
        sync: bool = True,
    ) -> pd.DataFrame:
        """Revoke leases in batches at most ``rate`` a second: :func:`revoke_in_batches`.

        ``POST /sys/leases/revoke`` each; ``dry_run`` (the default) sends nothing.
        """
        return revoke_in_batches(
            self._http, ids, rate=rate, batch_size=batch_size, dry_run=dry_run, sync=sync
        )

    def expiry(
        self, leases: pd.DataFrame | None = None, *, within: int | timedelta = 3600
    ) -> pd.DataFrame:
        """Past-due and soon-expiring leases, kept apart: :func:`expiry_states`, judged by
        the server's clock (its ``Date``), of ``leases`` or of :meth:`leases_by_mount`."""
        frame = self.leases_by_mount() if leases is None else leases
        return expiry_states(frame, now=self._http.server_now(), within=within)

    def findings(
        self,
        *,
        threshold: int = 1000,
        within: int | timedelta = 3600,
        leases: pd.DataFrame | None = None,
    ) -> pd.DataFrame:
        """The lease findings: :func:`lease_count_findings` of :meth:`lease_counts` (LIST
        only), then :func:`expiry_findings` of :meth:`expiry` (which looks every lease up,
        unless ``leases`` is given)."""
        counts = lease_count_findings(self.lease_counts(), threshold=threshold)
        return combine(counts, expiry_findings(self.expiry(leases, within=within)))

    # -- bulk --------------------------------------------------------------------
    def renew_leases(
        self,
        ids: Iterable[str],
        increment: int = 0,
        *,
        dry_run: bool = True,
        show_progress: bool = True,
    ) -> pd.DataFrame:
        """Renew each lease by ``increment`` seconds, concurrently.

        With ``dry_run`` (the default) nothing is sent. One row per lease:
        ``action`` (``would renew``, ``renewed``, ``failed``) and ``detail`` (the
        new duration and the server's warnings, such as a renewal capped at the
        lease's max ttl; or the server's error). A failure never stops the rest.
        """
        if increment < 0:
            raise InputError(f"increment must not be negative, not {increment}")

        def act(lease_id: str) -> dict[str, Any]:
            record = self.renew(lease_id, increment)
            detail = "; ".join([f"lease_duration {record.lease_duration}s", *record.warnings])
            return {"action": "renewed", "detail": detail}

        return self._bulk(ids, act, "renew", dry_run, show_progress)

    def revoke_leases(
        self,
        ids: Iterable[str],
        *,
        dry_run: bool = True,
        sync: bool = True,
        show_progress: bool = True,
    ) -> pd.DataFrame:
        """Revoke each lease, concurrently; with ``dry_run`` (the default) nothing is sent.

        One row per lease: ``action`` (``would revoke``, ``revoked``, ``failed``)
        and ``detail``. A failure never stops the rest.
        """

        def act(lease_id: str) -> dict[str, Any]:
            self.revoke(lease_id, sync=sync)
            return {"action": "revoked", "detail": ""}

        return self._bulk(ids, act, "revoke", dry_run, show_progress)

    def _bulk(
        self, ids: Iterable[str], act: Any, verb: str, dry_run: bool, show_progress: bool
    ) -> pd.DataFrame:
        todo = list(dict.fromkeys(ids))
        if dry_run:
            rows = [{"lease_id": i, "action": f"would {verb}", "detail": ""} for i in todo]
            return build_frame(rows, LEASE_ACTIONS)

        def safe(lease_id: str) -> dict[str, Any]:
            try:
                return {"lease_id": lease_id, **act(lease_id)}
            except ToolkitError as exc:
                detail = f"{exc.status}: {exc.message}" if isinstance(exc, APIError) else str(exc)
                return {"lease_id": lease_id, "action": "failed", "detail": detail}

        results = progress(
            self._http.map(safe, todo),
            desc=f"{verb} leases",
            total=len(todo),
            enabled=show_progress,
        )
        return build_frame(list(results), LEASE_ACTIONS)


def lease_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per mount of a :meth:`Leases.leases_by_mount` frame: ``count``, leases expiring
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


def _lease_fields(
    data: Mapping[str, Any], lease_id: str, times: Callable[[Any], Any] | None = None
) -> dict[str, Any]:
    """One lease's fields from its lookup's ``data`` (times parsed unless ``times`` says)."""
    return {k: v[0] for k, v in _lease_columns([data], [lease_id], times or _time).items()}


def _lease_columns(
    datas: Sequence[Mapping[str, Any]], ids: Sequence[str], time: Callable[[Any], Any]
) -> dict[str, list[Any]]:
    """The lease fields of many lookups' ``data``, a list a field (``ids`` as listed)."""
    return {
        "lease_id": [d.get("id") or i for d, i in zip(datas, ids, strict=True)],
        "issue_time": [time(d.get("issue_time")) for d in datas],
        "expire_time": [time(d.get("expire_time")) for d in datas],
        "last_renewal_time": [
            time(d.get("last_renewal_time", d.get("last_renewal"))) for d in datas
        ],
        "renewable": [d.get("renewable") for d in datas],
        "ttl": [d.get("ttl") for d in datas],
    }


def _mounts_and_roles(ids: Sequence[str], mounts: Sequence[str]) -> tuple[list[str], list[str]]:
    """:func:`split_lease_id` of each id, split once a folder (they share mount and role)."""
    by_folder: dict[str, tuple[str, str]] = {}
    cacheable = all(not m or m.endswith("/") for m in mounts)
    found: list[tuple[str, str]] = []
    for lease_id in ids:
        folder = lease_id[: lease_id.rfind("/") + 1]
        where = by_folder.get(folder) if cacheable and folder else None
        if where is None:
            where = split_lease_id(lease_id, mounts)
            if cacheable and folder:
                by_folder[folder] = where
        found.append(where)
    return [m for m, _ in found], [r for _, r in found]


def _text(value: Any) -> Any:
    return value or None


def _time(value: Any) -> datetime | None:
    return parse_time(value) if isinstance(value, str | datetime) and value else None


def _folder(prefix: str) -> str:
    prefix = prefix.lstrip("/")
    return prefix if not prefix or prefix.endswith("/") else prefix + "/"


# The walks list the folders the server named: a key such as ``../../auth/`` is
# refused by the same rule as a prefix given, before anything is sent.
_FOLDER = "prefix (or a folder the server listed under it)"


def _lookup_path(prefix: str) -> str:
    """``/sys/leases/lookup/<folder>/``: the folder's names by the one rule (root: empty)."""
    folder = _folder(prefix)
    return "/sys/leases/lookup/" + (segments(folder, _FOLDER) + "/" if folder else "")


def _prefix(prefix: str) -> str:
    if not prefix or not prefix.strip("/"):
        raise InputError("a prefix is required (revoking everything is not offered)")
    return segments(prefix, "prefix") + ("/" if prefix.endswith("/") else "")


def _query(params: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()}


# -- counts from LIST alone, expiry states, throttled bulk revoke -----------------------
LEASE_COUNTS = Schema.of(
    Col("mount"),
    Col("role"),
    Col("kind"),
    Col("count", "int"),
)
MOUNT_COUNTS = Schema.of(
    "mount", Col("kind"), Col("count", "int"), Col("roles", "int"), index="mount"
)
LEASE_EXPIRY = Schema.of(
    "lease_id",
    Col("state"),
    Col("mount"),
    Col("role"),
    Col("expire_time", "datetime"),
    Col("overdue_seconds", "int"),
    Col("ttl", "int"),
    index="lease_id",
)
REVOKE_BATCHES = Schema.of(
    "lease_id",
    Col("batch", "int"),
    Col("action"),
    Col("detail"),
    index="lease_id",
)
PAST_DUE = "past due"
EXPIRING = "expiring soon"
# Answers to a revocation that are reported on its row rather than raised.
_REVOKE_REPORTED = frozenset(range(400, 500))


def count_leases(http: HTTPLayer, prefix: str = "", mounts: Sequence[str] = ()) -> pd.DataFrame:
    """How many leases each mount and role holds, from ``LIST`` answers alone.

    Walks ``LIST /sys/leases/lookup/:prefix`` (sudo) level by level, the
    folders of a level listed concurrently. LIST ignores ``limit`` and answers
    a whole folder at once, so each answer's lease keys are counted and dropped
    as soon as it arrives: memory holds the folders still to list and one
    answer, never the ids. No lease is looked up.

    Rows ``mount``, ``role``, ``kind`` (``secret`` or ``auth``), ``count``,
    most leases first. Engine leases (``<mount>/creds/<role>/<id>``) count per
    role; auth leases per auth mount only (``role`` empty: an AppRole or token
    lease id carries no role).
    """
    counts: Counter[tuple[str, str]] = Counter()
    level = [_folder(prefix)]
    while level:
        calls = [Request("LIST", _lookup_path(p), ok_statuses=_LIST_EMPTY) for p in level]
        folders, level = level, []
        for folder, response in zip(folders, http.many(calls), strict=True):
            if response.status_code == 404:
                continue
            keys = _keys_of(decode_json(response, "LIST"))
            leaves = 0
            for key in keys:
                if key.endswith("/"):
                    level.append(folder + key)
                else:
                    leaves += 1
            del keys
            if leaves:
                counts[_mount_role(folder, mounts)] += leaves
    rows = [
        {
            "mount": mount,
            "role": role,
            "kind": "auth" if mount.startswith("auth/") else "secret",
            "count": n,
        }
        for (mount, role), n in counts.items()
    ]
    frame = build_frame(rows, LEASE_COUNTS)
    return frame.sort_values(
        ["count", "mount", "role"], ascending=[False, True, True], kind="stable", ignore_index=True
    )


def counts_by_mount(counts: pd.DataFrame) -> pd.DataFrame:
    """Per mount of a :func:`count_leases` frame: ``kind``, ``count``, ``roles`` (how many);
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


def top_roles(counts: pd.DataFrame, n: int = 10) -> pd.DataFrame:
    """The ``n`` engine roles holding the most leases, from a :func:`count_leases` frame."""
    if n < 1:
        raise InputError(f"n must be at least 1, not {n}")
    roles = counts[(counts["kind"] == "secret") & (counts["role"].fillna("") != "")]
    return roles.nlargest(n, "count", keep="first").reset_index(drop=True)


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


def expiry_states(
    leases: pd.DataFrame, *, now: datetime | None = None, within: int | timedelta = 3600
) -> pd.DataFrame:
    """The leases of a :meth:`Leases.leases_by_mount` frame that need a look, in two kinds
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


def revoke_in_batches(
    http: HTTPLayer,
    ids: Iterable[str],
    *,
    rate: float,
    batch_size: int = 100,
    dry_run: bool = True,
    sync: bool = True,
    on_batch: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Revoke leases in batches, at most ``rate`` leases a second on average.

    ``POST /sys/leases/revoke`` each (a write: never retried nor pipelined, so
    none is sent twice). A batch's revocations go concurrently; before the next
    batch the call waits until the average rate is back under ``rate``, so a
    backend (a database dropping users) is not flooded. With ``dry_run`` (the
    default) nothing is sent. One row per lease: ``batch``, ``action``
    (``would revoke``, ``revoked``, ``failed``), ``detail`` (the server's
    error). A refused revocation never stops the rest; ``on_batch(done,
    total)`` is called after each batch.
    """
    if not rate or rate <= 0:
        raise InputError(f"rate must be a positive number of leases a second, not {rate!r}")
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, not {batch_size}")
    todo = list(dict.fromkeys(ids))
    if any(not i for i in todo):
        raise InputError("an empty lease id was given")
    batches = [todo[i : i + batch_size] for i in range(0, len(todo), batch_size)]
    if dry_run:
        rows = [
            {"lease_id": lid, "batch": b, "action": "would revoke", "detail": ""}
            for b, batch in enumerate(batches)
            for lid in batch
        ]
        return build_frame(rows, REVOKE_BATCHES)
    rows = []
    started = time.monotonic()
    sent = 0
    for number, batch in enumerate(batches):
        # Wait until sending this batch keeps the average at or under ``rate``.
        due = started + sent / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        calls = [
            Request(
                "POST",
                "/sys/leases/revoke",
                json={"lease_id": lid, "sync": sync},
                idempotent=False,
                ok_statuses=_REVOKE_REPORTED,
            )
            for lid in batch
        ]
        for lid, response in zip(batch, http.many(calls), strict=True):
            if response.status_code >= 400:
                detail = f"{response.status_code}: {'; '.join(_errors_of(response))}"
                rows.append(
                    {"lease_id": lid, "batch": number, "action": "failed", "detail": detail}
                )
            else:
                rows.append({"lease_id": lid, "batch": number, "action": "revoked", "detail": ""})
        sent += len(batch)
        if on_batch is not None:
            on_batch(sent, len(todo))
    return build_frame(rows, REVOKE_BATCHES)


# A LIST of a folder with nothing in it answers 404 on the real server.
_LIST_EMPTY = frozenset({404})


def _keys_of(payload: Any) -> list[str]:
    data = payload.get("data") if isinstance(payload, Mapping) else None
    return listed_keys((data or {}).get("keys") if isinstance(data, Mapping) else None)


def _mount_role(folder: str, mounts: Sequence[str]) -> tuple[str, str]:
    mount, role = split_lease_id(folder + "_", mounts)
    if mount.startswith("auth/"):
        return mount, ""
    # Only ``<mount>/<endpoint>/<role>/...`` names a role; a lease right under a
    # mount's endpoint word (``pki/issue/<id>`` is already the role) stays as split.
    return mount, role


def _errors_of(response: Any) -> list[str]:
    try:
        payload = response.json()
    except ValueError:
        return [response.text[:200]]
    errors = payload.get("errors") if isinstance(payload, Mapping) else None
    return [one_line(str(e)) for e in errors or []] or [response.reason_phrase]
