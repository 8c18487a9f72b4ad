"""History: every audit's frames kept as Parquet, queried with SQL across targets and dates.

    from toolkit import history
    history.append("history", {"lease_counts": counts}, header, target="prod-eu")
    con = history.open("history")            # a DuckDB connection, one view per frame
    con.sql("select audit_date, sum(count) from lease_counts group by 1 order by 1").df()

Layout (one folder per frame name, then Hive-style partitions)::

    <root>/<frame>/target=<target>/runbook=<runbook>/date=<YYYY-MM-DD>/<time>-<run>.parquet
    <root>/<frame>/target=<target>/runbook=<runbook>/year=<YYYY>/compacted-<id>.parquet

Every row carries the provenance header as columns (``audit_target``,
``audit_runbook``, ``audit_at`` (the server's time when known, else the
client's), ``audit_date``, ``audit_server``, ``audit_server_version``,
``audit_cluster``, ``audit_namespace``, ``audit_token_accessor``,
``audit_toolkit_version``, ``audit_run``); the whole header is also in each
file's Parquet metadata (``toolkit.evidence``). A frame's named index becomes
columns. Views read with ``union_by_name``: a column a later toolkit version
added is NULL in older rows, and a column it dropped stays in the view (NULL in
newer rows): nothing is dropped silently. :func:`compact` merges a year's small
files per target and runbook into one, so thousands of daily files stay fast.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ._coverage import StoredFrame
from ._durable import Lock, replace_atomic
from ._errors import InputError
from ._frames import keeps_index, parquet_ready, safe_frame
from ._provenance import Header
from .extras import require

require("sql", "The history store", "duckdb")
if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa


__all__ = [
    "AUDITS",
    "AUDIT_COLUMNS",
    "Compaction",
    "ENV_HISTORY",
    "append",
    "append_evidence",
    "audits",
    "compact",
    "list_frames",
    "open",
    "read_audit",
]

# Set to a folder, and every report.save() also appends its frames there.
ENV_HISTORY = "TOOLKIT_HISTORY"
# The target's name for that history (else the header's cluster, else the server's host).
ENV_TARGET = "TOOLKIT_TARGET"
AUDIT_COLUMNS = (
    "audit_target",
    "audit_runbook",
    "audit_at",
    "audit_date",
    "audit_server",
    "audit_server_version",
    "audit_cluster",
    "audit_namespace",
    "audit_token_accessor",
    "audit_toolkit_version",
    "audit_run",
)
# One row per frame each audit filed, with its row count: an audit that found nothing
# still leaves its rows here, so a snapshot without findings is told from no snapshot.
AUDITS = "audits"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_META_KEY = b"toolkit.evidence"
# A compacted file's name starts so; its metadata lists the files it replaced.
_COMPACTED = "compacted-"
_COMPACTED_KEY = b"toolkit.compacted"
# The columns that were the frame's named index (read_audit makes them the index again).
_INDEX_KEY = b"toolkit.index"
_STAMP = "%Y%m%dT%H%M%SZ"


def _arrow() -> tuple[Any, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pa, pq


def _frame_name(label: str) -> str:
    if label == AUDITS:
        raise InputError(f"history frame name {AUDITS!r} is the history's own: name the frame else")
    return _part_name(label, "frame name")


@dataclass(frozen=True)
class _Audit:
    """One audit being filed: where (``root``, ``target``), what (``header``) and when
    (``when``, ``run``). Every file it writes is stamped with them."""

    root: Path
    header: Mapping[str, Any]
    target: str
    when: datetime
    run: str


def _filed(audit: _Audit, counts: Mapping[str, int]) -> Path:
    """The audit's rows in :data:`AUDITS`: each frame it filed and how many rows."""
    pa, _ = _arrow()
    names = sorted(counts)
    table = pa.table(
        {
            "frame": pa.array(names, pa.string()),
            "rows": pa.array([counts[n] for n in names], pa.int64()),
        }
    )
    return _write(audit, AUDITS, table)


def _part_name(value: str, what: str) -> str:
    text = str(value)
    if not _NAME.match(text):
        raise InputError(
            f"history {what} {text!r}: use letters, digits, '.', '_' or '-' (at most 64)"
        )
    return text


def _header_dict(header: Header | Mapping[str, Any]) -> dict[str, Any]:
    return header.as_dict() if hasattr(header, "as_dict") else dict(header)


def _when(header: Mapping[str, Any]) -> datetime:
    text = header.get("server_time") or header.get("generated_at")
    if isinstance(text, datetime):
        when = text
    elif text:
        when = datetime.fromisoformat(str(text))
    else:
        when = datetime.now(UTC)
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC)


def _default_target(header: Mapping[str, Any]) -> str:
    named = os.environ.get(ENV_TARGET) or header.get("cluster")
    if named:
        return re.sub(r"[^A-Za-z0-9_.-]", "_", str(named))[:64]
    from urllib.parse import urlsplit

    host = urlsplit(str(header.get("server") or "")).netloc or "unknown"
    return re.sub(r"[^A-Za-z0-9_.-]", "_", host)[:64]


def _with_audit_columns(table: pa.Table, audit: _Audit) -> pa.Table:
    pa, _ = _arrow()
    header, when = audit.header, audit.when
    rows = table.num_rows
    clashes = [c for c in AUDIT_COLUMNS if c in table.column_names]
    if clashes:
        raise InputError(f"a frame has a column named {clashes[0]!r}, which the history keeps")
    values: dict[str, Any] = {
        "audit_target": audit.target,
        "audit_runbook": header.get("runbook") or "",
        "audit_at": pa.scalar(when, pa.timestamp("us", tz="UTC")),
        "audit_date": pa.scalar(when.date(), pa.date32()),
        "audit_server": header.get("server"),
        "audit_server_version": header.get("server_version"),
        "audit_cluster": header.get("cluster"),
        "audit_namespace": header.get("namespace"),
        "audit_token_accessor": header.get("token_accessor"),
        "audit_toolkit_version": header.get("toolkit_version"),
        "audit_run": audit.run,
    }
    for name in AUDIT_COLUMNS:
        value = values[name]
        if isinstance(value, pa.Scalar):
            column = pa.array([value.as_py()] * rows, type=value.type)
        else:
            column = pa.array([value] * rows, type=pa.string())
        table = table.append_column(name, column)
    meta = dict(table.schema.metadata or {})
    meta[_META_KEY] = json.dumps(dict(header), default=str).encode()
    return table.replace_schema_metadata(meta)


def _frame_table(frame: pd.DataFrame) -> pa.Table:
    pa, _ = _arrow()
    safe = parquet_ready(safe_frame(frame))
    index: list[str] = []
    if keeps_index(safe):
        before = set(safe.columns)
        safe = safe.reset_index()
        index = [str(c) for c in safe.columns if c not in before]
    safe.attrs = {}
    table = pa.Table.from_pandas(safe, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_INDEX_KEY] = json.dumps(index).encode()  # read_audit sets it again
    return table.replace_schema_metadata(meta)


def _write(audit: _Audit, frame_name: str, table: pa.Table) -> Path:
    _, pq = _arrow()
    runbook = _part_name(audit.header.get("runbook") or "adhoc", "runbook")
    folder = (
        audit.root
        / _part_name(frame_name, "frame name")
        / f"target={_part_name(audit.target, 'target')}"
        / f"runbook={runbook}"
        / f"date={audit.when.date().isoformat()}"
    )
    path = folder / f"{audit.when.strftime(_STAMP)}-{audit.run}.parquet"
    buffer = io.BytesIO()
    pq.write_table(_with_audit_columns(table, audit), buffer)
    replace_atomic(path, buffer.getvalue())  # whole or not at all, on disk before it counts
    return path


def _commit(audit: _Audit, tables: Mapping[str, pa.Table]) -> list[Path]:
    """One audit's frames, then its :data:`AUDITS` row, which commits them.

    A frame file whose run has no :data:`AUDITS` row is never read (see
    :func:`open`): an audit stopped half-way (a crash, a full disk) shows
    nothing. What a failed audit wrote is removed when it can be.
    """
    written: list[Path] = []
    try:
        for label, table in tables.items():
            written.append(_write(audit, label, table))
        counts = {label: table.num_rows for label, table in tables.items()}
        written.append(_filed(audit, counts))
    except BaseException:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()
        raise
    return written


def append(
    root: str | Path,
    frames: Mapping[str, pd.DataFrame],
    header: Header | Mapping[str, Any],
    *,
    target: str | None = None,
    taken_at: datetime | None = None,
) -> list[Path]:
    """Append ``frames`` (name → frame) to the history in ``root``; the files written.

    ``target`` names the audited target (else ``TOOLKIT_TARGET``, the header's
    cluster, or the server's host); ``taken_at`` the time (else the header's
    ``server_time``, else its ``generated_at``). Secret cells are hidden as in
    the evidence. The audit's row counts go to :data:`AUDITS` (its file last in
    what is returned).
    """
    head = _header_dict(header)
    when = (taken_at or _when(head)).astimezone(UTC)
    name = target or _default_target(head)
    for label in frames:
        _frame_name(label)
    run = uuid.uuid4().hex[:12]
    tables = {label: _frame_table(frame) for label, frame in frames.items()}
    return _commit(_Audit(Path(root), head, name, when, run), tables)


def append_evidence(root: str | Path, files: Mapping[str, bytes], *, target: str) -> list[Path]:
    """Append the Parquet evidence a run filed (file name → bytes) to the history.

    This is how a fleet run keeps every target's frames: the header and frame name
    come from each file's metadata (what :func:`toolkit.report.save` wrote).
    Files that are not Parquet evidence are skipped. Each audit among them (a
    runbook and its time) gets its rows in :data:`AUDITS`.
    """
    _, pq = _arrow()
    audits: dict[tuple[str, datetime], tuple[dict[str, Any], dict[str, pa.Table]]] = {}
    for file_name, blob in sorted(files.items()):
        if not file_name.endswith(".parquet"):
            continue
        table = pq.read_table(io.BytesIO(blob))
        attrs = _pandas_attrs(table)
        head = attrs.get("evidence")
        label = attrs.get("evidence_frame") or Path(file_name).stem.partition("-")[2]
        if not isinstance(head, dict) or not label or label == AUDITS:
            continue
        key = (str(head.get("runbook") or ""), _when(head))
        audits.setdefault(key, (head, {}))[1][label] = table.replace_schema_metadata(None)
    written: list[Path] = []
    for (_, when), (head, tables) in sorted(audits.items(), key=lambda item: item[0]):
        audit = _Audit(Path(root), head, target, when, uuid.uuid4().hex[:12])
        written += _commit(audit, tables)
    return written


def _pandas_attrs(table: pa.Table) -> dict[str, Any]:
    # pandas keeps DataFrame.attrs as JSON under its own key of the Parquet metadata.
    meta = (table.schema.metadata or {}).get(b"PANDAS_ATTRS")
    if not meta:
        return {}
    try:
        attrs = json.loads(meta)
    except ValueError:
        return {}
    return attrs if isinstance(attrs, dict) else {}


def list_frames(root: str | Path) -> list[str]:
    """The frame names the history in ``root`` holds (one view each in :func:`open`)."""
    return sorted(_visible(_root(root)))


def _root(root: str | Path) -> Path:
    folder = Path(root)
    if not folder.is_dir():
        raise InputError(f"no history at {folder}: append to it first, or check the path")
    return folder


def _run_of(path: Path) -> str:
    return path.stem.rpartition("-")[2]


def _sources(path: Path) -> list[str]:
    """The files (relative to the history) a compacted file replaced."""
    _, pq = _arrow()
    meta = pq.read_schema(path).metadata or {}
    try:
        listed = json.loads(meta.get(_COMPACTED_KEY, b"[]"))
    except ValueError:
        return []
    return [str(item) for item in listed] if isinstance(listed, list) else []


def _visible(root: Path) -> dict[str, list[Path]]:
    """Each frame's files a reader sees: committed audits only, and every row once.

    A frame file counts once its run has an :data:`AUDITS` row (the row is written
    last). A file a compacted file replaced is not read, even when a compaction
    stopped before removing it.
    """
    _, pq = _arrow()
    stored = {
        folder.name: sorted(folder.glob("target=*/runbook=*/*=*/*.parquet"))
        for folder in root.iterdir()
        if folder.is_dir() and _NAME.match(folder.name)
    }
    replaced = {
        root / source
        for files in stored.values()
        for path in files
        if path.name.startswith(_COMPACTED)
        for source in _sources(path)
    }
    committed: set[str] = set()
    for path in stored.get(AUDITS, []):
        if path in replaced:
            continue
        if path.name.startswith(_COMPACTED):
            runs = pq.read_table(path, columns=["audit_run"]).column("audit_run")
            committed.update(str(run) for run in runs.to_pylist())
        else:
            committed.add(_run_of(path))
    visible = {}
    for name, files in stored.items():
        seen = [
            path
            for path in files
            if path not in replaced
            and (name == AUDITS or path.name.startswith(_COMPACTED) or _run_of(path) in committed)
        ]
        if seen:
            visible[name] = seen
    return visible


def open(
    root: str | Path,
    *,
    connection: duckdb.DuckDBPyConnection | None = None,
    schema: str | None = None,
) -> Any:
    """A DuckDB connection with one view per frame name across all targets and dates.

    A view reads the audits committed when it was opened (open again to see later
    ones); an audit that stopped half-way is not in it. Columns are unified by
    name across files (a column added later is NULL in older rows; none is
    dropped; a column whose type changed reads as the type both fit, as text for
    a number that became text). ``connection`` adds the views to an existing
    connection (such as :func:`toolkit.sql`'s :class:`~toolkit.sql_tables.SQLTables`), in ``schema`` if given.
    """
    import duckdb

    con = connection or duckdb.connect()
    prefix = f'"{schema}".' if schema else ""
    for name, files in _visible(_root(root)).items():
        listed = ", ".join("'" + str(p.resolve()).replace("'", "''") + "'" for p in files)
        con.execute(
            f'create or replace view {prefix}"{name}" as select * from read_parquet('
            f"[{listed}], union_by_name = true, hive_partitioning = false)"
        )
    return con


def audits(root: str | Path) -> StoredFrame:
    """Every committed audit's rows of :data:`AUDITS` (``frame``, ``rows`` and the audit
    columns), oldest first; an empty frame for a history that holds none yet."""
    pa, pq = _arrow()
    folder = Path(root)
    files = _visible(folder).get(AUDITS, []) if folder.is_dir() else []
    if not files:
        columns = ["frame", "rows", *AUDIT_COLUMNS]
        return pd.DataFrame({c: pd.Series(dtype="object") for c in columns})
    tables = [pq.read_table(p).replace_schema_metadata(None) for p in files]
    frame = pa.concat_tables(tables, promote_options="permissive").to_pandas()
    return frame.sort_values(["audit_at", "frame"], kind="stable").reset_index(drop=True)


def read_audit(root: str | Path, frame: str, run: str) -> StoredFrame:
    """The rows of ``frame`` that one audit (its ``audit_run``) filed, as it filed them:
    without the audit columns, its named index set again."""
    import pyarrow.compute as pc

    pa, pq = _arrow()
    files = _visible(_root(root)).get(_frame_name(frame), [])
    parts = []
    for path in files:
        if not path.name.startswith(_COMPACTED) and _run_of(path) != run:
            continue
        table = pq.read_table(path)
        if path.name.startswith(_COMPACTED):
            table = table.filter(pc.equal(table.column("audit_run"), run))
        if table.num_rows or not path.name.startswith(_COMPACTED):
            parts.append(table)
    if not parts:
        raise InputError(f"history frame {frame!r} holds no audit {run!r}")
    table = parts[0] if len(parts) == 1 else pa.concat_tables(parts, promote_options="permissive")
    index = json.loads((table.schema.metadata or {}).get(_INDEX_KEY, b"[]"))
    table = table.drop_columns([c for c in AUDIT_COLUMNS if c in table.column_names])
    result = table.to_pandas()
    return result.set_index(index) if index else result


@dataclass(frozen=True)
class Compaction:
    """What :func:`compact` did: files merged away, and groups it refused to merge (why)."""

    removed: int = 0
    refused: tuple[str, ...] = ()


def compact(
    root: str | Path, *, frames: Iterable[str] | None = None, min_files: int = 2
) -> Compaction:
    """Merge each year's files per frame, target and runbook into one; what was done.

    A year with fewer than ``min_files`` files is left as it is. (A year of daily
    snapshots of one target is a few thousand rows: one file reads faster than
    twelve, and rewriting it costs milliseconds.) Only committed audits are
    merged. The merged file names the files it replaces and is on disk before
    they are removed, so a reader sees every row once, and a compaction stopped
    half-way is finished by the next. Columns are unified by name, as in the
    views (a number that became text is merged as text); a group whose columns
    cannot be unified is left as it is and named in :attr:`Compaction.refused`.
    Another compaction of the same history at the same time is refused
    (:class:`toolkit._durable.Locked`, one line naming its process and host).
    """
    folder = _root(root)
    removed = 0
    refused: list[str] = []
    with Lock(folder / "history"):
        visible = _visible(folder)
        removed += _remove_replaced(folder, visible)
        names = list(frames) if frames is not None else sorted(visible)
        for name in names:
            groups: dict[tuple[Path, str], list[Path]] = {}
            for path in visible.get(name, []):
                year = path.parent.name.split("=", 1)[1][:4]  # YYYY from date= or year=
                groups.setdefault((path.parent.parent, year), []).append(path)
            for (base, year), paths in sorted(groups.items()):
                if len(paths) < max(min_files, 2):
                    continue
                try:
                    merged = _merge(folder, paths)
                except _Unmergeable as exc:
                    where = base.relative_to(folder).as_posix()
                    refused.append(f"history {where} year {year} not compacted: {exc}")
                    continue
                replace_atomic(
                    base / f"year={year}" / f"{_COMPACTED}{uuid.uuid4().hex[:12]}.parquet", merged
                )
                removed += _remove(paths)
    return Compaction(removed, tuple(refused))


def _remove_replaced(root: Path, visible: Mapping[str, list[Path]]) -> int:
    """Remove the files a compacted file replaced that a stopped compaction left."""
    replaced = [
        root / source
        for files in visible.values()
        for path in files
        if path.name.startswith(_COMPACTED)
        for source in _sources(path)
    ]
    return _remove([p for p in replaced if p.exists()])


def _remove(paths: Iterable[Path]) -> int:
    removed = 0
    for path in paths:
        path.unlink()
        removed += 1
        if path.parent.name.startswith("date=") and not any(path.parent.iterdir()):
            path.parent.rmdir()
    return removed


class _Unmergeable(Exception):
    """Files whose columns cannot be unified."""


def _merge(root: Path, paths: list[Path]) -> bytes:
    """``paths`` as one Parquet file, columns unified by name as the views unify them."""
    import duckdb

    _, pq = _arrow()
    listed = ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths)
    try:
        relation = duckdb.connect().sql(
            f"select * from read_parquet([{listed}], union_by_name = true, hive_partitioning = false)"
        )
        # to_arrow_table from DuckDB 1.4 on; fetch_arrow_table before.
        table = (getattr(relation, "to_arrow_table", None) or relation.fetch_arrow_table)()
    except duckdb.Error:
        raise _Unmergeable(_conflict(root, paths)) from None
    sources = sorted(p.relative_to(root).as_posix() for p in paths)
    meta = {_COMPACTED_KEY: json.dumps(sources).encode()}
    indexes = {(pq.read_schema(p).metadata or {}).get(_INDEX_KEY) for p in paths}
    if len(indexes) == 1 and None not in indexes:
        meta[_INDEX_KEY] = indexes.pop()  # type: ignore[assignment]
    table = table.replace_schema_metadata(meta)
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=1 << 17)
    return buffer.getvalue()


def _conflict(root: Path, paths: list[Path]) -> str:
    """The first column whose type differs between ``paths``, named with both files."""
    _, pq = _arrow()
    first: dict[str, tuple[Any, Path]] = {}
    for path in paths:
        for field in pq.read_schema(path):
            seen = first.setdefault(field.name, (field.type, path))
            if seen[0] != field.type:
                return (
                    f"column {field.name!r} is {seen[0]} in {seen[1].relative_to(root)} and "
                    f"{field.type} in {path.relative_to(root)}, which cannot be merged"
                )
    return "the files cannot be read together"
