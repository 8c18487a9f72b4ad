"""The lease radar: which mount or role is exploding the leases, and when the line is crossed.

- :func:`scan_leases`: the full walk, streamed. The one walker lists the tree
  in waves; each chunk of lease ids is looked up and becomes a small frame in
  a :class:`~toolkit.secrets.checkpoint.Spool` (Parquet beyond ``max_rows``);
  with a ``checkpoint`` file an interrupted scan resumes where it stopped.
- :func:`ttl_buckets` and :func:`expiry_calendar`: what the scan says about
  time left, per mount, aggregated chunk by chunk.
- :func:`lease_radar`: counts by mount (from LIST alone) against the last
  snapshot: growth, growth a day, and the projected date each mount and the
  whole server cross a threshold (256,000 by default: the count at which
  Vault documents its advisory limit and logs a warning).
- :func:`top_offenders`: the roles and mounts holding the most, or growing fastest.
- :func:`revocation_plan`: the throttled revocation of a role's or a mount's
  leases, shown first; sent only with ``apply``, each revocation once (a
  journal file keeps what was sent across runs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._coverage import Gap, carries_coverage
from .._errors import InputError
from .._frames import Col, Schema, build_frame
from ._base import require_mounts
from .checkpoint import DEFAULT_MAX_ROWS, Spool, scan_loop
from .lease_rules import counts_by_mount
from .walk import CHUNK, Walk, walk_tree

if TYPE_CHECKING:
    from ..drift import Snapshots
    from .leases import Leases

__all__ = [
    "ADVISORY_LIMIT",
    "LEASE_RADAR",
    "TTL_BUCKETS",
    "LeaseScan",
    "expiry_calendar",
    "lease_radar",
    "radar_since_snapshot",
    "revocation_plan",
    "scan_leases",
    "top_offenders",
    "ttl_buckets",
]

# The lease count at which Vault logs its warning (its documented advisory limit).
ADVISORY_LIMIT = 256_000
SERVER = "(server)"
# Upper bounds (seconds) of the time-left bands, and their names. A band holds the leases
# with more time left than the band before it and at most its bound: each column names
# both ends, so `ttl_1h_to_24h` is never read as the "expiring within 24 hours" count
# (`expiring_24h` in the lease summary, which includes the leases under an hour).
TTL_BUCKETS = (
    (3600, "ttl_up_to_1h"),
    (86400, "ttl_1h_to_24h"),
    (7 * 86400, "ttl_24h_to_7d"),
    (30 * 86400, "ttl_7d_to_30d"),
)
TTL_LONGER = "ttl_over_30d"
LEASE_RADAR = Schema.of(
    "mount",
    Col("kind"),
    Col("count", "int"),
    Col("previous_count", "int"),
    Col("growth", "int"),
    Col("growth_per_day", "float"),
    Col("share_of_threshold", "float"),
    Col("projected_crossing", "datetime"),
    Col("status"),
    index="mount",
)


@dataclass
class LeaseScan:
    """A full lease walk: its rows (in memory, or Parquet parts in :attr:`parquet`),
    what it could not read, and whether it ran to its end."""

    spool: Spool
    walk: Walk
    leases: int
    resumed: bool = False
    parquet: Path | None = None
    starts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        where = f" in {self.parquet}" if self.parquet else ""
        return f"<LeaseScan {self.leases:,} leases{where}; complete={self.walk.complete}>"

    def frame(self) -> pd.DataFrame:
        """Every lease as one frame (the :meth:`Leases.leases_by_mount` frame): loads
        every part, so mind memory for a scan that spooled to disk."""
        from .leases import LEASES

        frame = self.spool.frame(build_frame([], LEASES))
        frame.attrs["coverage"] = self.walk.coverage("leases.scan", self.starts)
        return frame


def scan_leases(
    leases: Leases,
    mounts: Iterable[str] | None = None,
    *,
    checkpoint: str | Path | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    chunk: int = CHUNK,
    deadline: float | None = None,
    on_chunk: Callable[[int], None] | None = None,
) -> LeaseScan:
    """Every lease under ``mounts`` (all when None), looked up, in chunks of ``chunk``.

    Memory holds one wave's LIST answers, one chunk's lookups and at most
    ``max_rows`` rows; beyond that the rows go to Parquet parts. With
    ``checkpoint`` (a file path) every chunk is written to disk as it is
    done and the file notes the folders done and the last lease of the one
    in progress (LIST answers come sorted); run again with the same path, the
    scan resumes there. ``deadline`` (seconds) stops it after the chunk during which it passes. A
    scan cut short raises :class:`WalkInterrupted` (or re-raises Ctrl-C with a
    note) saying how many leases were done and where the checkpoint is.
    ``on_chunk(rows)`` is called after each chunk is stored (a progress bar).
    """
    if chunk < 1:
        raise InputError(f"chunk must be at least 1, not {chunk}")
    from .leases import _folder, _lookup_path

    starts = [_folder(m) for m in mounts] if mounts is not None else [""]
    walk = Walk()
    # The lookup tree answers a mount nothing is mounted at as an empty folder: a
    # mistyped mount raises naming it, and one that could not be checked is a gap.
    if mounts is not None and not require_mounts(leases._http, starts):
        walk.unread.append(
            Gap(
                "sys/mounts",
                403,
                "the mount names could not be checked (a mistyped mount reads as empty)",
            )
        )
    mount_paths = starts if mounts is not None else leases._known_mounts()
    looked_up = 0
    with scan_loop(
        leases._http,
        "lease scan",
        "leases",
        {"starts": starts},
        checkpoint=checkpoint,
        max_rows=max_rows,
        deadline=deadline,
        on_chunk=on_chunk,
    ) as loop:
        spool = loop.spool
        done: set[str] = set(loop.state.get("done") or [])
        partial: dict[str, str] = dict(loop.state.get("partial") or {})
        current: str | None = None

        def state() -> dict[str, Any]:
            return {"done": sorted(done), "partial": dict(partial)}

        loop.progress = lambda: (
            f"{spool.rows:,} leases looked up in {len(done)} folders done, {walk.folders} listed"
        )
        for folder, keys in walk_tree(
            leases._http,
            starts,
            path_of=_lookup_path,
            walk=walk,
            chunk=chunk,
            skip=done.__contains__,
        ):
            if current is not None and folder != current:
                done.add(current)
                partial.pop(current, None)
                loop.save(state())
            current = folder
            after = partial.get(folder)
            if after is not None:
                keys = [k for k in keys if k > after]
                if not keys:
                    continue
            part = leases.lookup_leases([folder + k for k in keys], mounts=mount_paths)
            looked_up += len(part)
            partial[folder] = keys[-1]
            loop.add(part, state())
        if current is not None:
            done.add(current)
            partial.pop(current, None)
        loop.finish(state())
    scan = LeaseScan(
        spool,
        walk,
        spool.rows,
        resumed=loop.resumed,
        parquet=spool.folder if spool.spooled else None,
        starts=starts,
    )
    if scan.resumed:
        scan.notes.append(f"resumed: {spool.rows - looked_up:,} leases came from the checkpoint")
    return scan


# -- time left ----------------------------------------------------------------------------
TTL_BUCKET_FRAME = Schema.of(
    "mount",
    Col("count", "int"),
    *(Col(name, "int") for _, name in TTL_BUCKETS),
    Col(TTL_LONGER, "int"),
    Col("no_expiry", "int"),
    index="mount",
)


@carries_coverage("radar.ttl_buckets")
def ttl_buckets(scan: LeaseScan | pd.DataFrame) -> pd.DataFrame:
    """Per mount: leases by time left in bands that do not overlap (``ttl_up_to_1h``,
    ``ttl_1h_to_24h``, ``ttl_24h_to_7d``, ``ttl_7d_to_30d``, ``ttl_over_30d``,
    ``no_expiry``), each lease in the one band it fits (more than the band's lower
    end, at most its upper); aggregated a chunk at a time."""
    tally: dict[str, Counter[str]] = {}
    bounds = np.array([b for b, _ in TTL_BUCKETS], dtype="float64")
    names = [n for _, n in TTL_BUCKETS] + [TTL_LONGER]
    labels = np.array([*names, "no_expiry"], dtype=object)
    for piece in _pieces(scan, ["mount", "ttl"]):
        ttl = piece["ttl"].astype("float64").to_numpy(na_value=np.nan)
        codes = np.searchsorted(bounds, ttl, side="left")
        codes[np.isnan(ttl)] = len(names)
        sizes = (
            pd.Series(1, index=[piece["mount"].to_numpy(object), labels[codes]])
            .groupby(level=[0, 1])
            .size()
        )
        for key, n in sizes.items():
            pair: tuple[Any, Any] = key  # type: ignore[assignment]
            tally.setdefault(str(pair[0]), Counter())[str(pair[1])] += int(n)
    rows = [
        {"mount": m, "count": sum(c.values()), **{n: c.get(n, 0) for n in [*names, "no_expiry"]}}
        for m, c in sorted(tally.items())
    ]
    return _carried(scan, build_frame(rows, TTL_BUCKET_FRAME))


@carries_coverage("radar.expiry_calendar")
def expiry_calendar(scan: LeaseScan | pd.DataFrame, *, freq: str = "D") -> pd.DataFrame:
    """Leases expiring per period (``freq``: ``D`` days, ``h`` hours, ``W`` weeks) and
    mount: a row per period, a column per mount; aggregated a chunk at a time."""
    total: pd.DataFrame | None = None
    for piece in _pieces(scan, ["mount", "expire_time"]):
        known = piece[piece["expire_time"].notna()]
        if not len(known):
            continue
        period = known["expire_time"].dt.floor(freq)
        part = pd.crosstab(period, known["mount"].astype("object"))
        total = part if total is None else total.add(part, fill_value=0)
    if total is None:
        return _carried(scan, pd.DataFrame(index=pd.DatetimeIndex([], tz=UTC, name="expire_time")))
    total = total.fillna(0).astype("int64").sort_index()
    total.index.name = "expire_time"
    total.columns.name = None
    return _carried(scan, total)


def _carried(scan: LeaseScan | pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (a view of ``scan``) with the scan's completeness record: what the walk
    could not read is missing from every view of it too."""
    record = scan.attrs.get("coverage") if isinstance(scan, pd.DataFrame) else None
    if not isinstance(scan, pd.DataFrame):
        record = scan.walk.coverage("leases.scan", scan.starts)
    if record is not None:
        frame.attrs["coverage"] = record
    return frame


def _pieces(scan: LeaseScan | pd.DataFrame, columns: list[str]) -> Iterable[pd.DataFrame]:
    if isinstance(scan, pd.DataFrame):
        return [scan[columns]]
    return scan.spool.pieces(columns)


# -- counts against a threshold --------------------------------------------------------------
@carries_coverage("radar.lease_radar")
def lease_radar(
    counts: pd.DataFrame,
    *,
    previous: pd.DataFrame | None = None,
    previous_at: datetime | None = None,
    now: datetime | None = None,
    threshold: int = ADVISORY_LIMIT,
) -> pd.DataFrame:
    """Per mount of a :func:`~toolkit.secrets.leases.count_leases` frame, and the
    server (row ``(server)``), against ``threshold``.

    ``previous`` is an earlier count frame taken at ``previous_at``: ``growth``
    is the change since, ``growth_per_day`` that change over the days between,
    and ``projected_crossing`` the date the count reaches ``threshold`` at that
    rate (empty when not growing). ``status`` is ``over`` (at or past the
    threshold), ``crossing within 30 days``, ``growing``, ``steady`` or
    ``shrinking``, or ``first snapshot``. Most leases first, the server last.
    """
    if threshold < 1:
        raise InputError(f"threshold must be at least 1, not {threshold}")
    moment = now or datetime.now(UTC)
    by_mount = counts_by_mount(counts)
    before = counts_by_mount(previous) if previous is not None else None
    days = None
    if previous is not None:
        if previous_at is None:
            raise InputError("previous_at is required with previous (when it was taken)")
        days = (moment - previous_at).total_seconds() / 86400
        if days <= 0:
            raise InputError("previous_at must be before now")
    rows = []
    totals = [("", int(by_mount["count"].sum()), None)]
    items = [(str(m), int(r["count"]), str(r["kind"])) for m, r in by_mount.iterrows()]
    for mount, count, kind in [*items, (SERVER, totals[0][1], "server")]:
        old = None
        if before is not None:
            if mount == SERVER:
                old = int(before["count"].sum())
            elif mount in before.index:
                old = int(before["count"].get(mount, 0))
            else:
                old = 0
        rows.append(_radar_row(mount, kind, count, old, days, moment, threshold))
    return build_frame(rows, LEASE_RADAR)


def _radar_row(
    mount: str,
    kind: str,
    count: int,
    old: int | None,
    days: float | None,
    moment: datetime,
    threshold: int,
) -> dict[str, Any]:
    growth = None if old is None else count - old
    rate = None if growth is None or days is None else growth / days
    crossing = None
    if count >= threshold:
        status = "over"
        crossing = moment
    elif rate is None:
        status = "first snapshot"
    elif rate > 0:
        crossing = moment + timedelta(days=(threshold - count) / rate)
        status = "crossing within 30 days" if crossing - moment <= timedelta(30) else "growing"
    else:
        status = "steady" if rate == 0 else "shrinking"
    return {
        "mount": mount,
        "kind": kind,
        "count": count,
        "previous_count": old,
        "growth": growth,
        "growth_per_day": rate,
        "share_of_threshold": count / threshold,
        "projected_crossing": crossing,
        "status": status,
    }


@carries_coverage("radar.radar_since_snapshot")
def radar_since_snapshot(
    counts: pd.DataFrame,
    snapshots: Snapshots,
    *,
    name: str = "lease-counts",
    threshold: int = ADVISORY_LIMIT,
    now: datetime | None = None,
    save: bool = True,
) -> pd.DataFrame:
    """:func:`lease_radar` against the newest stored snapshot of ``name`` in
    ``snapshots`` (a :class:`toolkit.drift.Snapshots`), then (``save``) store ``counts``."""
    moment = now or datetime.now(UTC)
    stored = snapshots.list(name)
    previous = snapshots.read(stored[-1]) if stored else None
    taken = stored[-1].taken_at if stored else None
    radar = lease_radar(
        counts, previous=previous, previous_at=taken, now=moment, threshold=threshold
    )
    radar.attrs["previous_snapshot"] = (
        f"{name} taken {stored[-1].taken_at.isoformat()} in {stored[-1].path}" if stored else None
    )
    if save:
        snapshots.save(name, counts, taken_at=moment)
    return radar


@carries_coverage("radar.top_offenders")
def top_offenders(
    counts: pd.DataFrame, *, previous: pd.DataFrame | None = None, n: int = 10
) -> pd.DataFrame:
    """The ``n`` mount/role groups holding the most leases, with ``growth`` since
    ``previous`` (an earlier count frame) when given; most leases first."""
    if n < 1:
        raise InputError(f"n must be at least 1, not {n}")
    frame = counts.copy()
    if previous is not None:
        old = previous.set_index(["mount", "role"])["count"]
        keys = list(zip(frame["mount"], frame["role"], strict=True))
        frame["growth"] = pd.array(
            [int(c) - int(old.get(k, 0)) for k, c in zip(keys, frame["count"], strict=True)],
            dtype="Int64",
        )
    return frame.nlargest(n, "count", keep="first").reset_index(drop=True)


# -- revocation, throttled and shown first ----------------------------------------------------
def revocation_plan(
    leases: Leases,
    ids: Iterable[str],
    *,
    rate: float,
    batch_size: int = 100,
    apply: bool = False,
    journal: str | Path | None = None,
) -> pd.DataFrame:
    """Revoke ``ids`` at most ``rate`` a second, in batches, each once: the plan first.

    One row a lease, with the request as it is sent (one ``POST sys/leases/revoke``
    a lease) and its outcome (:mod:`toolkit.secrets.revocation`). Without ``apply``
    nothing is sent. ``journal`` (a file, locked and tied to this server and
    namespace) records each revocation before it is sent and its answer after: a
    later run with the same journal never sends a recorded one again, and looks up
    every lease whose answer was lost before anything is sent.
    """
    from .revocation import revoke_leases

    return revoke_leases(
        leases._http, ids, rate=rate, batch_size=batch_size, apply=apply, journal=journal
    )
