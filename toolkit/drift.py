"""Drift: what changed between two audits of the same thing.

:func:`diff` compares two keyed frames (the record id as index, as every view
returns) and gives one row per key that was added, removed or changed, with the
columns that changed. :class:`Snapshots` keeps an audit's frames in the history
store (:mod:`toolkit.history`), so that this week's run can be compared with
last week's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ._coverage import StoredFrame
from ._errors import InputError

__all__ = ["CHANGES", "Snapshots", "diff"]

CHANGES = ("added", "removed", "changed")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_STAMP = "%Y%m%dT%H%M%SZ"


def diff(
    old: pd.DataFrame, new: pd.DataFrame, *, key: str | list[str] | None = None
) -> pd.DataFrame:
    """Rows added, removed and changed from ``old`` to ``new``.

    Rows are matched by ``key`` (a column or columns), else by the index. The
    answer has the key as index and the columns ``change`` (``added``,
    ``removed``, ``changed``), ``changed_columns`` (the compared columns whose
    value differs, comma-separated; empty for added and removed rows), then the
    compared columns with the new values (the old ones for a removed row).
    Values compare equal across dtypes (``Int64`` and ``int64``) and missing
    values equal each other. Columns present in one frame only are not compared;
    they are listed in ``attrs["columns_added"]`` and ``attrs["columns_removed"]``.
    """
    old_k, new_k = _keyed(old, key, "old"), _keyed(new, key, "new")
    shared = [c for c in new_k.columns if c in old_k.columns]
    added_keys = new_k.index.difference(old_k.index, sort=False)
    removed_keys = old_k.index.difference(new_k.index, sort=False)
    common = new_k.index.intersection(old_k.index, sort=False)
    before = old_k.loc[common, shared]
    after = new_k.loc[common, shared]
    differs = pd.DataFrame(
        {c: ~_same(before[c], after[c]) for c in shared}, index=common, dtype=bool
    )
    changed_mask = differs.any(axis=1) if shared else pd.Series(False, index=common)
    changed_keys = common[changed_mask.to_numpy()]
    names = [", ".join(c for c in shared if differs.at[k, c]) for k in changed_keys]
    parts = [
        _rows(new_k.loc[added_keys, shared], "added", [""] * len(added_keys)),
        _rows(old_k.loc[removed_keys, shared], "removed", [""] * len(removed_keys)),
        _rows(new_k.loc[changed_keys, shared], "changed", names),
    ]
    result = pd.concat(parts) if any(len(p) for p in parts) else parts[0]
    result["change"] = pd.Categorical(result["change"], categories=list(CHANGES))
    result["changed_columns"] = result["changed_columns"].astype("string")
    result.index.name = new_k.index.name
    result.attrs["columns_added"] = [c for c in new_k.columns if c not in old_k.columns]
    result.attrs["columns_removed"] = [c for c in old_k.columns if c not in new_k.columns]
    return result


def _keyed(frame: pd.DataFrame, key: str | list[str] | None, which: str) -> pd.DataFrame:
    if key is not None:
        columns = [key] if isinstance(key, str) else list(key)
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise InputError(f"the {which} frame has no key column {missing[0]!r}")
        frame = frame.set_index(columns)
    if not frame.index.is_unique:
        dup = frame.index[frame.index.duplicated()][0]
        raise InputError(f"the {which} frame's key is not unique: {dup!r} appears twice")
    return frame


def _same(a: pd.Series, b: pd.Series) -> pd.Series:
    both_missing = a.isna().to_numpy() & b.isna().to_numpy()
    try:
        equal = a.astype(object).to_numpy() == b.astype(object).to_numpy()
    except (TypeError, ValueError):
        equal = [x == y for x, y in zip(a.astype(object), b.astype(object), strict=True)]
    equal = pd.Series(equal, index=a.index).fillna(False).astype(bool).to_numpy()
    return pd.Series(equal | both_missing, index=a.index)


def _rows(frame: pd.DataFrame, change: str, names: list[str]) -> pd.DataFrame:
    out = frame.copy()
    out.insert(0, "changed_columns", names)
    out.insert(0, "change", change)
    return out


@dataclass(frozen=True)
class Snapshot:
    """One stored frame: its name, when it was taken, where (the history, or an older file),
    and the audit that filed it (``audit_run`` in the history; None for an older file)."""

    name: str
    taken_at: datetime
    path: Path
    run: str | None = None


class Snapshots:
    """Frames kept by name and time in the history store (:mod:`toolkit.history`) in ``folder``.

    ``save("admins", frame)`` appends the frame ``admins`` to that history (target
    ``target``, runbook ``runbook``); ``latest("admins")`` reads the newest;
    ``since_last("admins", frame)`` gives :func:`diff` against the newest and then
    stores ``frame``. It is the one store of past audits: ``history.open(folder)``
    reads the same snapshots with SQL, and a snapshot is whole or absent, as every
    audit there. Snapshots an older toolkit kept in ``folder`` as
    ``<name>-<time>.parquet`` files are still read.
    """

    def __init__(
        self, folder: str | Path, *, target: str = "local", runbook: str = "snapshots"
    ) -> None:
        self.folder = Path(folder)
        self.target = target
        self.runbook = runbook

    def __repr__(self) -> str:
        return f"<Snapshots {self.folder} target={self.target} runbook={self.runbook}>"

    def list(self, name: str | None = None) -> list[Snapshot]:
        """The stored snapshots (of ``name``, or all), oldest first."""
        if not self.folder.is_dir():
            return []
        from . import history

        filed = history.audits(self.folder)
        mine = filed[
            (filed["audit_target"] == self.target) & (filed["audit_runbook"] == self.runbook)
        ]
        found = [
            Snapshot(str(row.frame), _utc(row.audit_at), self.folder, str(row.audit_run))
            for row in mine.itertuples()
            if name is None or row.frame == name
        ]
        return sorted(
            [*found, *_older_files(self.folder, name)], key=lambda s: (s.name, s.taken_at)
        )

    def read(self, snapshot: Snapshot) -> StoredFrame:
        """The frame ``snapshot`` holds."""
        if snapshot.run is None:
            return pd.read_parquet(snapshot.path)
        from . import history

        return history.read_audit(self.folder, snapshot.name, snapshot.run)

    def save(self, name: str, frame: pd.DataFrame, *, taken_at: datetime | None = None) -> Path:
        """Store ``frame`` as the snapshot ``name`` taken at ``taken_at`` (now by default)."""
        if not _NAME.match(name):
            raise InputError(f"snapshot name {name!r}: use letters, digits, '.', '_' or '-'")
        when = (taken_at or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
        if any(s.taken_at == when for s in self.list(name)):
            raise InputError(
                f"a snapshot of {name!r} taken at {when:%Y-%m-%dT%H:%M:%SZ} exists already in "
                f"{self.folder}: one snapshot of {name!r} a second"
            )
        from . import history

        header = {"runbook": self.runbook, "server": "", "generated_at": when.isoformat()}
        written = history.append(
            self.folder, {name: frame}, header, target=self.target, taken_at=when
        )
        return written[0]

    def latest(self, name: str) -> pd.DataFrame | None:
        """The newest snapshot of ``name``, or None when there is none."""
        stored = self.list(name)
        return self.read(stored[-1]) if stored else None

    def since_last(
        self, name: str, frame: pd.DataFrame, *, taken_at: datetime | None = None, **options: Any
    ) -> pd.DataFrame:
        """:func:`diff` from the newest snapshot of ``name`` to ``frame``, then store ``frame``.

        With no earlier snapshot every row is ``added``.
        """
        previous = self.latest(name)
        if previous is None:
            previous = frame.iloc[0:0]
        result = diff(previous, frame, **options)
        self.save(name, frame, taken_at=taken_at)
        return result


def _older_files(folder: Path, name: str | None) -> list[Snapshot]:
    # The files an older toolkit kept: <name>-<YYYYmmddTHHMMSSZ>.parquet in the folder.
    found = []
    for path in folder.glob("*.parquet"):
        stem, _, stamp = path.stem.rpartition("-")
        if not stem or (name is not None and stem != name):
            continue
        try:
            when = datetime.strptime(stamp, _STAMP).replace(tzinfo=UTC)
        except ValueError:
            continue
        found.append(Snapshot(stem, when, path))
    return found


def _utc(value: Any) -> datetime:
    when = pd.Timestamp(value).to_pydatetime()
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
