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
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._coverage import Coverage, Gap, OutcomeFrame, carry, is_gap
from .._errors import APIError, InputError, ToolkitError, one_line
from .._frames import Col, Schema, build_frame, frame_from_columns
from .._gc import collector_paused
from .._http import HTTPLayer, Request, decode_json, segments
from .._progress import progress
from .._records import Record, integer
from .._spec.leases import split_lease_id
from .._time import parse_time
from ..findings import combine
from ._base import (
    GONE,
    Names,
    SecretsArea,
    lookup_requests,
    records_of,
    require_mounts,
    unwrap,
    warnings_of,
)
from .checkpoint import DEFAULT_MAX_ROWS
from .lease_rules import (
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
from .radar import (
    ADVISORY_LIMIT,
    LeaseScan,
    lease_radar,
    radar_since_snapshot,
    revocation_plan,
    scan_leases,
)
from .walk import CHUNK, MAX_DEPTH, Walk, walk_tree

if TYPE_CHECKING:
    from ..drift import Snapshots

__all__ = [
    "LEASES",
    "LEASE_ACTIONS",
    "LEASE_COUNTS",
    "LEASE_EXPIRY",
    "LEASE_SUMMARY",
    "MOUNT_COUNTS",
    "EXPIRING",
    "PAST_DUE",
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
LEASE_ACTIONS = Schema.of(
    "lease_id",
    Col("action"),
    Col("detail"),
    index="lease_id",
)
IRREVOCABLE = Schema.of(
    "lease_id",
    Col("mount"),
    Col("expire_time", "datetime"),
    Col("error"),
    index="lease_id",
)


class Leases(SecretsArea):
    """``sys/leases/*``: one lease at a time, and in bulk."""

    @staticmethod
    def summary(frame: pd.DataFrame) -> pd.DataFrame:
        """Per mount of a :meth:`leases_by_mount` frame: counts, expiring within 1 hour
        and 24 hours, shortest and median ttl (:func:`lease_summary`; no request), as
        whole as ``frame`` was (its completeness record carried)."""
        return carry(lease_summary(frame), frame, view="leases.summary")

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
        count = integer(data.get("lease_count"), "lease_count", len(rows))
        frame.attrs["lease_count"] = count
        frame.attrs["warnings"] = warnings_of(payload)
        cov = Coverage("leases.irrevocable_frame", asked=["sys/leases?type=irrevocable"])
        cov.note_read(len(rows))
        if count > len(rows):  # the server's limit (10,000 unless raised) cut the list
            cov.note_gap(
                "sys/leases?type=irrevocable",
                None,
                f"{len(rows)} of {count} irrevocable leases listed: raise limit (or 'none')",
            )
        return cov.attach(frame)

    # -- mounts ------------------------------------------------------------------
    def list_mounts(self, *, coverage: Coverage | None = None) -> Names:
        """Mount paths of the secrets engines and auth methods (``sys/mounts``, ``sys/auth``).

        A table the token may not read raises (a short list would hide its mounts),
        unless ``coverage`` is given: then the refusal is a gap noted there and the
        other table's mounts come back."""
        found: list[str] = []
        for path, prefix in (("/sys/mounts", ""), ("/sys/auth", "auth/")):
            try:
                data = unwrap(self._http.json("GET", path))
            except APIError as exc:
                if coverage is None or not is_gap(exc):
                    raise
                coverage.note_error(path.lstrip("/"), exc)
                continue
            found.extend(prefix + k for k in data if k.endswith("/"))
        return found

    # -- views -----------------------------------------------------------------
    def list_lease_ids(self, prefix: str = "", *, walk: Walk | None = None) -> Names:
        """Every lease id under ``prefix`` (all when empty), walking the lookup tree.

        :func:`~toolkit.secrets.walk.walk_tree`: the folders of each level listed
        concurrently. What could not be read is recorded in ``walk`` when one is
        given; without one, a walk that could not read everything raises
        :class:`~toolkit.IncompleteAudit` naming what it missed (a list of names has
        no room to say it is partial).
        """
        seen = walk if walk is not None else Walk()
        if prefix and not require_mounts(self._http, [prefix]):
            seen.unread.append(
                Gap(
                    "sys/mounts",
                    403,
                    "the mount names could not be checked (a mistyped mount reads as empty)",
                )
            )
        found: list[str] = []
        for folder, keys in walk_tree(
            self._http, [_folder(prefix)], path_of=_lookup_path, walk=seen
        ):
            found.extend(folder + k for k in keys)
        if walk is None and not seen.complete:
            from .._coverage import Coverage, require_complete

            require_complete(Coverage.from_dict(seen.coverage("leases.list_lease_ids", [prefix])))
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
        named = mounts if mounts is not None else [prefix] if prefix else []
        checked = require_mounts(self._http, named)
        starts = [_folder(m) for m in mounts] if mounts is not None else [_folder(prefix or "")]
        walk = Walk()
        ids = [
            folder + k
            for folder, keys in walk_tree(self._http, starts, path_of=_lookup_path, walk=walk)
            for k in keys
        ]
        frame = self.lookup_leases(
            ids, mounts=starts if mounts is not None else None, show_progress=show_progress
        )
        cov = Coverage.from_dict(walk.coverage("leases.leases_by_mount", starts))
        if named and not checked:
            # What the walk cannot tell: a mistyped mount from an empty one, when the
            # mount tables are refused.
            cov.note_gap("sys/mounts", 403, MOUNTS_UNCHECKED)
        return cov.attach(frame)

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
            # Every id asked was answered (one gone since is not a place unread).
            record = Coverage("leases.lookup_leases", asked=["sys/leases/lookup"])
            record.note_read(len(frame))
            return record.attach(frame.sort_values(["mount", "expire_time"], kind="stable"))

    def _known_mounts(self) -> Names:
        """The mounts a lease id's path is split by (mount, role); what cannot be read
        only makes that split a guess, so it is not a gap of the lease view."""
        try:
            return self.list_mounts(coverage=Coverage("leases.mount_names"))
        except ToolkitError:
            return []

    # -- at scale: the streamed scan, the radar, the revocation plan (radar.py) -------------
    def scan(
        self,
        mounts: Iterable[str] | None = None,
        *,
        checkpoint: str | Path | None = None,
        max_rows: int = DEFAULT_MAX_ROWS,
        chunk: int = CHUNK,
        deadline: float | None = None,
        show_progress: bool = False,
    ) -> LeaseScan:
        """Every lease looked up, streamed in chunks, resumable: :func:`~toolkit.secrets.radar.scan_leases`.

        ``checkpoint`` (a file) makes an interrupted scan resume where it stopped;
        ``max_rows`` bounds the rows held in memory (beyond it they go to Parquet).
        Feed the result to :func:`~toolkit.secrets.radar.ttl_buckets` and
        :func:`~toolkit.secrets.radar.expiry_calendar`, or take ``.frame()``.
        ``show_progress`` shows a bar of the leases looked up.
        """
        bar: Any = None
        if show_progress:
            from tqdm.auto import tqdm

            bar = tqdm(desc="looking up leases", unit=" leases")
        done = [0]

        def moved(rows: int) -> None:
            if bar is not None:
                bar.update(rows - done[0])
            done[0] = rows

        try:
            return scan_leases(
                self,
                mounts,
                checkpoint=checkpoint,
                max_rows=max_rows,
                chunk=chunk,
                deadline=deadline,
                on_chunk=moved,
            )
        finally:
            if bar is not None:
                bar.close()

    def lease_radar(
        self,
        snapshots: str | Path | Snapshots | None = None,
        *,
        threshold: int = ADVISORY_LIMIT,
        mounts: Iterable[str] | None = None,
        save: bool = True,
    ) -> pd.DataFrame:
        """Lease counts by mount (LIST alone) against ``threshold`` (Vault's advisory
        256,000 by default): :func:`~toolkit.secrets.radar.lease_radar`.

        With ``snapshots`` (a folder, or :class:`toolkit.drift.Snapshots`) the counts
        are compared with the newest stored ones (growth, growth a day, the projected
        crossing date) and then stored (``save``). Judged by the server's clock.
        ``mounts`` keeps the radar to those mounts (their leases alone are walked and
        the ``(server)`` row sums them); one that nothing is mounted at raises
        :class:`~toolkit.MountNotFound`.
        """
        if isinstance(mounts, str):  # its characters would be read as mounts ('d/' ...)
            raise InputError(
                f"mounts takes a list of mount paths: mounts=[{mounts!r}], not a lone string"
            )
        counts = self.lease_counts() if mounts is None else self._counts_under(list(mounts))
        now = self._http.server_now()
        if snapshots is None:
            radar = lease_radar(counts, now=now, threshold=threshold)
        else:
            from ..drift import Snapshots

            store = snapshots if isinstance(snapshots, Snapshots) else Snapshots(snapshots)
            radar = radar_since_snapshot(counts, store, threshold=threshold, now=now, save=save)
        radar.attrs["coverage"] = counts.attrs.get("coverage")
        return radar

    def revocation_plan(
        self,
        ids: Iterable[str],
        *,
        rate: float,
        batch_size: int = 100,
        apply: bool = False,
        journal: str | Path | None = None,
    ) -> pd.DataFrame:
        """The throttled revocation of ``ids``, shown first: :func:`~toolkit.secrets.radar.revocation_plan`.

        Nothing is sent without ``apply``; with ``journal`` (a file) each lease is
        revoked once across runs, and one whose answer was lost is looked up first.
        """
        return revocation_plan(
            self, ids, rate=rate, batch_size=batch_size, apply=apply, journal=journal
        )

    # -- counts and throttled revocation (module functions below hold the logic) --------
    def lease_counts(
        self,
        prefix: str = "",
        mounts: Iterable[str] | None = None,
        *,
        max_depth: int = MAX_DEPTH,
    ) -> pd.DataFrame:
        """How many leases each mount and role holds, from ``LIST`` alone: :func:`count_leases`.

        ``LIST /sys/leases/lookup/:prefix`` (sudo), walked in waves to at most
        ``max_depth`` levels; no lease is looked up. ``mounts`` are the mount
        paths to split by (default: the server's). A ``prefix`` whose mount does
        not exist raises :class:`~toolkit.MountNotFound` (the lookup tree answers
        it as an empty folder).
        """
        if prefix:
            require_mounts(self._http, [prefix])
        mount_paths = list(mounts) if mounts is not None else self._known_mounts()
        return count_leases(self._http, prefix, mount_paths, max_depth=max_depth)

    def _counts_under(self, mounts: list[str]) -> pd.DataFrame:
        """:func:`count_leases` walked from each of ``mounts`` alone, checked first: the
        lookup tree answers a mistyped mount as an empty folder."""
        starts = [_folder(m) for m in mounts]
        checked = require_mounts(self._http, starts)
        split = list(dict.fromkeys([*self._known_mounts(), *starts]))
        counts = count_leases(self._http, "", split, starts=starts)
        if not checked:
            record = Coverage.from_dict(counts.attrs["coverage"])
            record.note_gap("sys/mounts", 403, MOUNTS_UNCHECKED)
            record.attach(counts)
        return counts

    def revoke_in_batches(
        self,
        ids: Iterable[str],
        *,
        rate: float,
        batch_size: int = 100,
        dry_run: bool = True,
        sync: bool = True,
    ) -> OutcomeFrame:
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
        states = expiry_states(frame, now=self._http.server_now(), within=within)
        return carry(states, frame, view="leases.expiry")

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
        counted = self.lease_counts()
        expiry = self.expiry(leases, within=within)
        counts = lease_count_findings(counted, threshold=threshold)
        found = combine(counts, expiry_findings(expiry))
        return carry(found, counted, expiry, view="leases.findings")

    # -- bulk --------------------------------------------------------------------
    def renew_leases(
        self,
        ids: Iterable[str],
        increment: int = 0,
        *,
        dry_run: bool = True,
        show_progress: bool = True,
    ) -> OutcomeFrame:
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
    ) -> OutcomeFrame:
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


# What the lease walks cannot tell when the mount tables are refused.
MOUNTS_UNCHECKED = "the mount names could not be checked (a mistyped mount reads as empty)"

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
REVOKE_BATCHES = Schema.of(
    "lease_id",
    Col("batch", "int"),
    Col("action"),
    Col("detail"),
    index="lease_id",
)
# Answers to a revocation that are reported on its row rather than raised.
_REVOKE_REPORTED = frozenset(range(400, 500))


def count_leases(
    http: HTTPLayer,
    prefix: str = "",
    mounts: Sequence[str] = (),
    *,
    starts: Sequence[str] | None = None,
    max_depth: int = MAX_DEPTH,
) -> pd.DataFrame:
    """How many leases each mount and role holds, from ``LIST`` answers alone.

    Walks ``LIST /sys/leases/lookup/:prefix`` (sudo) in waves with
    :func:`~toolkit.secrets.walk.walk_tree` (or from each of ``starts``, the
    mounts walked together). LIST ignores ``limit`` and answers a whole folder
    at once; its keys are parsed as they come and counted in chunks, never
    kept: memory holds the folders still to list and one wave's answers. No
    lease is looked up.

    Rows ``mount``, ``role``, ``kind`` (``secret`` or ``auth``), ``count``,
    most leases first. Engine leases (``<mount>/creds/<role>/<id>``) count per
    role; auth leases per auth mount only (``role`` empty: an AppRole or token
    lease id carries no role). ``frame.attrs["coverage"]`` records the folders
    that could not be read (refused, not permitted, a cycle, too deep).
    """
    counts: Counter[tuple[str, str]] = Counter()
    walk = Walk()
    folders = [_folder(s) for s in starts] if starts is not None else [_folder(prefix)]
    for folder, keys in walk_tree(
        http, folders, path_of=_lookup_path, walk=walk, max_depth=max_depth
    ):
        counts[_mount_role(folder, mounts)] += len(keys)
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
    frame = frame.sort_values(
        ["count", "mount", "role"], ascending=[False, True, True], kind="stable", ignore_index=True
    )
    frame.attrs["coverage"] = walk.coverage("leases.lease_counts", folders)
    return frame


def revoke_in_batches(
    http: HTTPLayer,
    ids: Iterable[str],
    *,
    rate: float,
    batch_size: int = 100,
    dry_run: bool = True,
    sync: bool = True,
    on_batch: Callable[[int, int], None] | None = None,
) -> OutcomeFrame:
    """Revoke leases in batches, at most ``rate`` leases a second on average.

    ``POST /sys/leases/revoke`` each (a write: never retried nor pipelined, so
    none is sent twice). A batch's revocations go concurrently; before the next
    batch the call waits until the average rate is back under ``rate``, so a
    backend (a database dropping users) is not flooded. With ``dry_run`` (the
    default) nothing is sent. One row per lease: ``batch``, ``action``
    (``would revoke``, ``revoked``, ``failed``), ``detail`` (the server's
    error). A refused revocation never stops the rest; ``on_batch(done,
    total)`` is called after each batch. Nothing is kept across runs: for
    that, :meth:`Leases.revocation_plan` with a journal.
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
