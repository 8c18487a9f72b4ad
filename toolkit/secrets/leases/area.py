"""Leases (spec section 4.4): lookup, renew, revoke, tidy, counts, and the views.

The area's calls; what reads many leases takes the HTTP layer in its own module
(:mod:`._lookup`: the lookup tree walked, leases looked up and counted;
:mod:`.radar`: the streamed scan and the radar; :mod:`.revocation`: revocations
throttled, sent once; :mod:`.rules`: the rules over lease frames), and each
method here is a thin call into it. :meth:`Leases.renew_leases` and
:meth:`Leases.revoke_leases` act on many leases and report each one, never
stopping at a failure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from pathlib import Path, PurePath
from typing import Any

import pandas as pd

from ..._coverage import Coverage, OutcomeFrame, carry
from ..._errors import APIError, InputError, ToolkitError
from ..._frames import Schema, build_frame
from ..._http import segments
from ..._progress import progress
from ..._records import Record, integer
from ..._spec.leases import split_lease_id
from ...findings import combine
from .._base import Names, SecretsArea, records_of, unwrap, warnings_of
from ..checkpoint import DEFAULT_MAX_ROWS
from ..walk import CHUNK, MAX_DEPTH, Walk
from ._lookup import (
    lease_counts,
    lease_fields,
    leases_by_mount,
    list_lease_ids,
    list_mounts,
    lookup_leases,
    lookup_path,
)
from .radar import (
    ADVISORY_LIMIT,
    LeaseScan,
    SnapshotStore,
    lease_radar,
    radar_since_snapshot,
    scan_leases,
)
from .revocation import revoke_in_batches, revoke_leases
from .rules import expiry_findings, expiry_states, lease_count_findings, lease_summary

__all__ = ["IRREVOCABLE", "LEASE_ACTIONS", "Leases"]

LEASE_ACTIONS = Schema.of("lease_id action detail", index="lease_id")
IRREVOCABLE = Schema.of("lease_id mount expire_time:datetime error", index="lease_id")


class Leases(SecretsArea):
    """``sys/leases/*``: one lease at a time, and in bulk."""

    @staticmethod
    def summary(frame: pd.DataFrame) -> pd.DataFrame:
        """Per mount of a :meth:`leases_by_mount` frame: counts, expiring within 1 hour
        and 24 hours, shortest and median ttl (:func:`lease_summary`; no request), as
        whole as ``frame`` was (its coverage record carried)."""
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
        return Record(lease_fields(data, lease_id), kind="lease")

    def list_leases(self, prefix: str) -> list[str]:
        """Keys under ``prefix`` (leases, and folders ending in ``/``).

        ``LIST /sys/leases/lookup/:prefix`` (sudo).
        """
        return self._list(lookup_path(prefix))

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
        return list_mounts(self._http, coverage=coverage)

    # -- views -----------------------------------------------------------------
    def list_lease_ids(self, prefix: str = "", *, walk: Walk | None = None) -> Names:
        """Every lease id under ``prefix`` (all when empty), walking the lookup tree.

        :func:`~toolkit.secrets.walk.walk_tree`: the folders of each level listed
        concurrently. What could not be read is recorded in ``walk`` when one is
        given; without one, a walk that could not read everything raises
        :class:`~toolkit.PartialCoverage` naming what it missed (a list of names has
        no room to say it is partial).
        """
        return list_lease_ids(self._http, prefix, walk=walk)

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
        return leases_by_mount(self._http, prefix, mounts, show_progress=show_progress)

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
        return lookup_leases(self._http, ids, mounts, show_progress=show_progress)

    # -- at scale: the streamed scan, the radar (radar.py), the revocation plan (revocation.py) -------------
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
        """Every lease looked up, streamed in chunks, resumable: :func:`~toolkit.secrets.leases.radar.scan_leases`.

        ``checkpoint`` (a file) makes an interrupted scan resume where it stopped;
        ``max_rows`` bounds the rows held in memory (beyond it they go to Parquet).
        Feed the result to :func:`~toolkit.secrets.leases.radar.ttl_buckets` and
        :func:`~toolkit.secrets.leases.radar.expiry_calendar`, or take ``.frame()``.
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
                self._http,
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
        snapshots: SnapshotStore | None = None,
        *,
        threshold: int = ADVISORY_LIMIT,
        mounts: Iterable[str] | None = None,
        save: bool = True,
    ) -> pd.DataFrame:
        """Lease counts by mount (LIST alone) against ``threshold`` (Vault's advisory
        256,000 by default): :func:`~toolkit.secrets.leases.radar.lease_radar`.

        With ``snapshots`` (a store: ``Snapshots("snapshots/")``, :class:`toolkit.drift.Snapshots`)
        the counts are compared with the newest stored ones (growth, growth a day, the projected
        crossing date) and then stored (``save``). Judged by the server's clock.
        ``mounts`` keeps the radar to those mounts (their leases alone are walked and
        the ``(server)`` row sums them); one that nothing is mounted at raises
        :class:`~toolkit.MountNotFound`.
        """
        if isinstance(mounts, str):  # its characters would be read as mounts ('d/' ...)
            raise InputError(
                f"mounts takes a list of mount paths: mounts=[{mounts!r}], not a lone string"
            )
        if isinstance(snapshots, str | PurePath):
            raise InputError(
                f"snapshots takes a store, not a folder: lease_radar(Snapshots({str(snapshots)!r}))"
                " with Snapshots from toolkit.drift"
            )
        counts = lease_counts(self._http, starts=None if mounts is None else list(mounts))
        now = self._http.server_now()
        if snapshots is None:
            radar = lease_radar(counts, now=now, threshold=threshold)
        else:
            radar = radar_since_snapshot(counts, snapshots, threshold=threshold, now=now, save=save)
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
        """The throttled revocation of ``ids``, shown first: :func:`~toolkit.secrets.leases.revocation.revoke_leases`.

        Nothing is sent without ``apply``; with ``journal`` (a file) each lease is
        revoked once across runs, and one whose answer was lost is looked up first.
        """
        return revoke_leases(
            self._http, ids, rate=rate, batch_size=batch_size, apply=apply, journal=journal
        )

    # -- counts and throttled revocation (_lookup.py, revocation.py hold the logic) --------
    def lease_counts(
        self,
        prefix: str = "",
        mounts: Iterable[str] | None = None,
        *,
        max_depth: int = MAX_DEPTH,
    ) -> pd.DataFrame:
        """How many leases each mount and role holds, from ``LIST`` alone: :func:`~toolkit.secrets.leases.count_leases`.

        ``LIST /sys/leases/lookup/:prefix`` (sudo), walked in waves to at most
        ``max_depth`` levels; no lease is looked up. ``mounts`` are the mount
        paths to split by (default: the server's). A ``prefix`` whose mount does
        not exist raises :class:`~toolkit.MountNotFound` (the lookup tree answers
        it as an empty folder).
        """
        return lease_counts(self._http, prefix, mounts, max_depth=max_depth)

    def revoke_in_batches(
        self,
        ids: Iterable[str],
        *,
        rate: float,
        batch_size: int = 100,
        dry_run: bool = True,
        sync: bool = True,
    ) -> OutcomeFrame:
        """Revoke leases in batches at most ``rate`` a second: :func:`~toolkit.secrets.leases.revocation.revoke_in_batches`.

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


def _prefix(prefix: str) -> str:
    if not prefix or not prefix.strip("/"):
        raise InputError("a prefix is required (revoking everything is not offered)")
    return segments(prefix, "prefix") + ("/" if prefix.endswith("/") else "")


def _query(params: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()}
