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
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..._coverage import StoredFrame, carries_coverage
from ..._errors import InputError
from ..._frames import Col, Schema, build_frame
from ..._http import HTTPLayer
from .._base import require_mounts
from ..checkpoint import DEFAULT_MAX_ROWS, Spool, keep_scan_record, scan_loop, scan_pieces
from ..walk import CHUNK, Walk, walk_tree
from ._lookup import LEASES, folder_of, known_mounts, lookup_leases, lookup_path, unchecked_mounts
from .rules import counts_by_mount

__all__ = [
    "ADVISORY_LIMIT",
    "LEASE_RADAR",
    "TTL_BUCKETS",
    "LeaseScan",
    "SnapshotStore",
    "expiry_calendar",
    "lease_radar",
    "radar_since_snapshot",
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
    """mount kind count:int previous_count:int growth:int growth_per_day:float
    share_of_threshold:float projected_crossing:datetime status""",
    index="mount",
)


class SnapshotStore(Protocol):
    """Where the radar keeps its counts from one run to the next: a store of frames by
    name and time, such as :class:`toolkit.drift.Snapshots` (the history store). The
    caller hands it in: the client does not reach up to the store."""

    def list(self, name: str | None = None) -> list[Any]:
        """The stored snapshots of ``name``, oldest first (each with ``taken_at``, ``path``)."""
        ...

    def read(self, snapshot: Any) -> StoredFrame:
        """The frame ``snapshot`` holds (read back as it was stored)."""
        ...

    def save(self, name: str, frame: pd.DataFrame, *, taken_at: datetime | None = None) -> Any:
        """Store ``frame`` as the snapshot ``name`` taken at ``taken_at``."""
        ...


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
        """Every lease as one frame (the :meth:`~toolkit.secrets.leases.Leases.leases_by_mount` frame): loads
        every part, so mind memory for a scan that spooled to disk."""
        frame = self.spool.frame(build_frame([], LEASES))
        frame.attrs["coverage"] = self.coverage()
        return frame

    def coverage(self) -> dict[str, Any]:
        """What the scan's walk read and could not read (a coverage record)."""
        return self.walk.coverage("leases.scan", self.starts)


def scan_leases(
    http: HTTPLayer,
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
    scan cut short raises :class:`~toolkit.secrets.checkpoint.WalkInterrupted` (or re-raises Ctrl-C with a
    note) saying how many leases were done and where the checkpoint is.
    ``on_chunk(rows)`` is called after each chunk is stored (a progress bar).
    """
    if chunk < 1:
        raise InputError(f"chunk must be at least 1, not {chunk}")
    starts = [folder_of(m) for m in mounts] if mounts is not None else [""]
    walk = Walk()
    # The lookup tree answers a mount nothing is mounted at as an empty folder: a
    # mistyped mount raises naming it, and one that could not be checked is a gap.
    if mounts is not None and not require_mounts(http, starts):
        unchecked_mounts(walk)
    mount_paths = starts if mounts is not None else known_mounts(http)
    looked_up = 0
    with scan_loop(
        http,
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
            http,
            starts,
            path_of=lookup_path,
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
            part = lookup_leases(http, [folder + k for k in keys], mounts=mount_paths)
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
    "mount count:int",
    *(Col(name, "int") for _, name in TTL_BUCKETS),
    Col(TTL_LONGER, "int"),
    "no_expiry:int",
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
    for piece in scan_pieces(scan, ["mount", "ttl"]):
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
    frame = build_frame(rows, TTL_BUCKET_FRAME)
    keep_scan_record(frame, scan)
    return frame


@carries_coverage("radar.expiry_calendar")
def expiry_calendar(scan: LeaseScan | pd.DataFrame, *, freq: str = "D") -> pd.DataFrame:
    """Leases expiring per period (``freq``: ``D`` days, ``h`` hours, ``W`` weeks) and
    mount: a row per period, a column per mount; aggregated a chunk at a time."""
    total: pd.DataFrame | None = None
    for piece in scan_pieces(scan, ["mount", "expire_time"]):
        known = piece[piece["expire_time"].notna()]
        if not len(known):
            continue
        period = known["expire_time"].dt.floor(freq)
        part = pd.crosstab(period, known["mount"].astype("object"))
        total = part if total is None else total.add(part, fill_value=0)
    if total is None:
        empty = pd.DataFrame(index=pd.DatetimeIndex([], tz=UTC, name="expire_time"))
        keep_scan_record(empty, scan)
        return empty
    total = total.fillna(0).astype("int64").sort_index()
    total.index.name = "expire_time"
    total.columns.name = None
    keep_scan_record(total, scan)
    return total


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
    snapshots: SnapshotStore,
    *,
    name: str = "lease-counts",
    threshold: int = ADVISORY_LIMIT,
    now: datetime | None = None,
    save: bool = True,
) -> pd.DataFrame:
    """:func:`lease_radar` against the newest stored snapshot of ``name`` in
    ``snapshots`` (a :class:`SnapshotStore`: :class:`toolkit.drift.Snapshots`), then
    (``save``) store ``counts``."""
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
