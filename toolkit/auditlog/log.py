"""The audit log itself: its files, read whole or said not to be, and the frames read from
them with DuckDB (see :mod:`toolkit.auditlog`)."""

from __future__ import annotations

import gzip
import mmap
import os
import stat
import sys
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from .._coverage import Coverage
from .._errors import InputError
from .._frames import from_sql
from ..extras import require

require("sql", "The audit-log reader", "duckdb")
__all__ = ["HMAC_PREFIX", "NOT_SEEN", "SECRET_ID_CAVEAT", "AuditLog", "LogSpan", "open"]

SECRET_ID_CAVEAT = (
    "a secret id's own use is not in the log: a login logs it only as an HMAC of its "
    "value, never with its accessor"
)
HMAC_PREFIX = "hmac-sha256:"
# A live principal with no use in a log not read whole: never "never used".
NOT_SEEN = "not seen in what was read (the log was not read whole)"

# Only the fields read: DuckDB converts nothing else.
_COLUMNS = {
    "time": "VARCHAR",
    "type": "VARCHAR",
    "error": "VARCHAR",
    "auth": "STRUCT(accessor VARCHAR, display_name VARCHAR, entity_id VARCHAR, "
    "metadata STRUCT(role_name VARCHAR, username VARCHAR, cert_name VARCHAR), "
    "policy_results STRUCT(allowed BOOLEAN))",
    "request": "STRUCT(id VARCHAR, operation VARCHAR, path VARCHAR, mount_point VARCHAR, "
    "mount_type VARCHAR, remote_address VARCHAR, namespace STRUCT(id VARCHAR, path VARCHAR))",
}

# One row per entry, the principal's fields flattened; `login` marks a login's answer.
_ENTRIES = """
select
    filename as file,
    try_cast("time" as timestamptz) as time,
    case when "type" in ('request', 'response') then "type" end as entry,
    request.id as request_id,
    request.operation as operation,
    request.path as path,
    request.mount_point as mount,
    request.mount_type as mount_type,
    coalesce(request.namespace.path, '') as namespace,
    auth.accessor as accessor,
    auth.entity_id as entity_id,
    auth.display_name as display_name,
    auth.metadata.role_name as role_name,
    auth.metadata.username as username,
    auth.metadata.cert_name as cert_name,
    request.remote_address as remote_address,
    auth.policy_results.allowed as allowed,
    case when nullif("error", '') is null then 'ok'
         when auth.policy_results.allowed = false or "error" like '%permission denied%'
         then 'denied' else 'error' end as outcome,
    nullif("error", '') as error
from {source}
"""

_USAGE = """
create or replace table usage as
select
    file, entry, accessor, entity_id, display_name, role_name, username, cert_name,
    mount, mount_type, namespace, remote_address, (time is not null) as timed,
    (error is not null) as failed,
    (error is not null and (allowed = false or error like '%permission denied%')) as denied,
    (entry = 'response' and path like 'auth/%/login%' and error is null) as login,
    count(*) as entries, min(time) as first_time, max(time) as last_time
from ({entries})
group by all
"""


@dataclass(frozen=True)
class LogSpan:
    """What the log covers: its files, lines read, lines that were not an audit entry
    (not JSON, or not a request or response), entries whose time does not parse,
    compressed files cut short (not read), and the period (first and last time)."""

    files: tuple[str, ...]
    lines: int
    unreadable: int
    first_time: datetime | None
    last_time: datetime | None
    unparsable_times: int = 0
    truncated: tuple[str, ...] = ()
    gaps: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def complete(self) -> bool:
        """Whether every line of every file was read as a timed audit entry."""
        return not self.gaps

    def as_dict(self) -> dict[str, Any]:
        """What every frame of the log says of it (``attrs["log"]``)."""
        return {
            "files": list(self.files),
            "first_time": None if self.first_time is None else self.first_time.isoformat(),
            "last_time": None if self.last_time is None else self.last_time.isoformat(),
            "lines": self.lines,
            "unreadable_lines": self.unreadable,
            "unparsable_times": self.unparsable_times,
            "truncated_files": list(self.truncated),
            "complete": self.complete,
        }


class AuditLog:
    """One or more audit log files, read with DuckDB; the summaries from one pass."""

    def __init__(self, paths: Sequence[Path]) -> None:
        import duckdb

        self.paths = tuple(paths)
        for path in self.paths:
            _require_regular(path)  # before DuckDB opens one (a FIFO would hang it)
        self.con = duckdb.connect()
        self._usage_read = False
        self._span: LogSpan | None = None
        # Compressed files cut short: not read, each one a gap. DuckDB reads a cut .zst
        # as empty without a word, so each .zst is checked first (4% of the read); it
        # stops the whole query at a cut .gz, so the .gz files are checked only then.
        self.truncated = tuple(
            p for p in self.paths if p.suffix.lower() == ".zst" and not _whole(p)
        )
        self._readable = [p for p in self.paths if p not in self.truncated]

    def __repr__(self) -> str:
        return f"<AuditLog {len(self.paths)} file(s)>"

    def _source(self, paths: Sequence[Path] | None = None) -> str:
        names = [str(p).replace("'", "''") for p in (self._readable if paths is None else paths)]
        if not names:  # every file cut short: a source of no rows, with the columns
            fields = ", ".join(f'null::{v} as "{k}"' for k, v in _COLUMNS.items())
            return f"(select null::varchar as filename, {fields} where false)"
        files = "[" + ", ".join(f"'{n}'" for n in names) + "]"
        columns = "{" + ", ".join(f"'{k}': '{v}'" for k, v in _COLUMNS.items()) + "}"
        return (
            f"read_json({files}, format = 'newline_delimited', columns = {columns}, "
            "ignore_errors = true, compression = 'auto_detect', maximum_object_size = 67108864, "
            "filename = true)"
        )

    def _entries(self) -> str:
        return _ENTRIES.format(source=self._source())

    def usage_frame(self) -> pd.DataFrame:
        """Every entry grouped by file, principal, mount, address and outcome (one pass,
        kept); ``entry`` empty for the lines that were not an audit entry."""
        self._read_usage()
        return self._framed("usage_frame", self.con.execute("select * from usage").df())

    def coverage(self, view: str) -> Coverage:
        """The record of what ``view`` could read of the log: the files asked, the
        entries read, and a gap for each file's unreadable lines, unparsable times, or
        cut-short compression."""
        span = self.span
        record = Coverage(f"auditlog.{view}", asked=list(span.files))
        record.note_read(span.lines - span.unreadable)
        for path, reason in span.gaps:
            record.note_gap(path, None, reason)
        return record

    def _framed(self, view: str, frame: pd.DataFrame, *, limit: int | None = None) -> pd.DataFrame:
        """``frame`` with the log's coverage record and the period it covers; a
        ``limit`` the frame reached is a gap too (what lies past it was not read)."""
        record = self.coverage(view)
        if limit is not None and len(frame) >= limit:
            record.note_gap(view, None, f"stopped at limit={limit}")
        record.attach(frame)
        frame.attrs["log"] = self.span.as_dict()
        return frame

    def _read_usage(self) -> None:
        import duckdb

        if not self._usage_read:
            try:
                self.con.execute(_USAGE.format(entries=self._entries()))
            except duckdb.IOException:
                cut = tuple(
                    p for p in self._readable if p.suffix.lower() == ".gz" and not _whole(p)
                ) or tuple(p for p in self._readable if not self._duckdb_reads(p))
                if not cut:
                    raise
                self.truncated += cut
                self._readable = [p for p in self._readable if p not in cut]
                self.con.execute(_USAGE.format(entries=self._entries()))
            self._usage_read = True

    def _duckdb_reads(self, path: Path) -> bool:
        """Whether DuckDB reads ``path`` alone to its end: when it stops the whole query
        at a file that Python's decompressor reads whole (a .gz padded with zeros)."""
        import duckdb

        try:
            self.con.execute(f"select count(*) from {self._source([path])}").fetchall()
        except duckdb.IOException:
            return False
        return True

    @property
    def span(self) -> LogSpan:
        """The log's period (first and last time), its lines, and what could not be read.

        Raises :class:`~toolkit.InputError` naming a file that holds no audit entry at
        all (another program's log, an empty file): nothing of it is an audit log.
        """
        if self._span is None:
            self._read_usage()
            per_file = {
                str(file): (int(lines), int(entries), int(untimed))
                for file, lines, entries, untimed in self.con.execute(
                    """
                    select file, sum(entries),
                           coalesce(sum(entries) filter (where entry is not null), 0),
                           coalesce(sum(entries) filter (where entry is not null and not timed), 0)
                    from usage group by file
                    """
                ).fetchall()
            }
            gaps: list[tuple[str, str]] = []
            for path in map(str, self._readable):
                lines, entries, untimed = per_file.get(path, (0, 0, 0))
                if not entries:
                    raise InputError(
                        f"{path} holds no audit entry ({lines} line(s), none a request or "
                        "response of the file audit device): give the device's file_path"
                    )
                if lines > entries:
                    gaps.append((path, f"{lines - entries} line(s) not an audit entry (not "
                                       "JSON, or not a request or response): not read"))  # fmt: skip
                if untimed:
                    gaps.append((path, f"{untimed} entr{'y' if untimed == 1 else 'ies'} whose "
                                       "time does not parse: not placed in the period"))  # fmt: skip
            gaps += [
                (
                    str(p),
                    "the compressed file does not decompress to its end (cut short, or not what its name says): not read",
                )
                for p in self.truncated
            ]
            first, last = self.con.execute(
                "select min(first_time), max(last_time) from usage"
            ).fetchone() or (None, None)
            lines = sum(v[0] for v in per_file.values())
            self._span = LogSpan(
                tuple(str(p) for p in self.paths),
                lines,
                lines - sum(v[1] for v in per_file.values()),
                _ts(first),
                _ts(last),
                unparsable_times=sum(v[2] for v in per_file.values()),
                truncated=tuple(str(p) for p in self.truncated),
                gaps=tuple(gaps),
            )
        return self._span

    # -- detail --------------------------------------------------------------------
    def entries_frame(self, where: str | None = None, *, limit: int | None = None) -> pd.DataFrame:
        """Every entry (request and response), oldest first; ``where`` a SQL condition."""
        return self._entries_where("entries_frame", where, limit)

    def _entries_where(self, view: str, where: str | None, limit: int | None) -> pd.DataFrame:
        self.span  # noqa: B018 - refuses a file with no audit entry before anything is read
        query = f"select * from ({self._entries()}) where entry is not null"
        if where:
            query += f" and ({where})"
        query += " order by time"
        if limit is not None:
            limit = int(limit)
            query += f" limit {limit}"
        return self._framed(view, from_sql(self.con.execute(query).df()), limit=limit)

    def requests_frame(self, *, limit: int | None = None) -> pd.DataFrame:
        """The request entries: time, operation, path, mount, namespace, principal, address."""
        return self._entries_where("requests_frame", "entry = 'request'", limit)

    def responses_frame(self, *, limit: int | None = None) -> pd.DataFrame:
        """The response entries, with the ``outcome`` (``ok``, ``denied``, ``error``) and
        the ``error`` (empty when it succeeded)."""
        return self._entries_where("responses_frame", "entry = 'response'", limit)

    def denied_frame(self, *, limit: int | None = None) -> pd.DataFrame:
        """The requests the server refused (permission denied), kept apart, oldest first."""
        return self._entries_where(
            "denied_frame",
            "entry = 'response' and error is not null and "
            "(allowed = false or error like '%permission denied%')",
            limit,
        )

    # -- summaries -------------------------------------------------------------------
    def principals_frame(self) -> pd.DataFrame:
        """Requests per principal: accessor, entity, display name and role, with counts.

        ``requests`` counts request entries; ``failed`` and ``denied`` count the
        answers that were errors and refusals; ``addresses`` the distinct remote
        addresses; ``first_time`` and ``last_time`` the span.
        """
        self._read_usage()
        frame = self.con.execute(
            """
            select accessor, entity_id, display_name,
                   coalesce(role_name, username, cert_name) as role,
                   sum(entries) filter (where entry = 'request') as requests,
                   sum(entries) filter (where entry = 'response' and failed) as failed,
                   sum(entries) filter (where entry = 'response' and denied) as denied,
                   count(distinct remote_address) as addresses,
                   min(first_time) as first_time, max(last_time) as last_time
            from usage where entry is not null
            group by all order by requests desc nulls last, accessor
            """
        ).df()
        for column in ("requests", "failed", "denied", "addresses"):
            frame[column] = frame[column].fillna(0).astype("int64")
        return self._framed("principals_frame", from_sql(frame))

    def last_use_frame(self) -> pd.DataFrame:
        """Last use per token accessor, AppRole role, userpass user and certificate role.

        One row per (``kind``, ``name``): ``kind`` is ``token`` (``name`` the
        accessor as logged), ``approle role``, ``userpass user`` or ``cert role``;
        ``last_login`` (a role's or user's last successful login, and its
        ``login_mount``), ``last_use`` (the last request of any token it
        issued), ``requests``, ``addresses`` (distinct), ``note`` (the secret-id
        caveat on AppRole rows).
        """
        self._read_usage()
        frame = self.con.execute(
            """
            with kinds as (
                select 'token' as kind, accessor as name, * from usage where accessor is not null
                union all
                select 'approle role', role_name, * from usage where role_name is not null
                union all
                select 'userpass user', username, * from usage where username is not null
                union all
                select 'cert role', cert_name, * from usage where cert_name is not null
            )
            select kind, name,
                   max(last_time) filter (where login) as last_login,
                   arg_max(mount, last_time) filter (where login) as login_mount,
                   max(last_time) filter (where entry = 'request') as last_use,
                   coalesce(sum(entries) filter (where entry = 'request'), 0) as requests,
                   count(distinct remote_address) as addresses
            from kinds group by kind, name order by kind, name
            """
        ).df()
        frame["requests"] = frame["requests"].astype("int64")
        frame["note"] = pd.Series(
            [SECRET_ID_CAVEAT if k == "approle role" else "" for k in frame["kind"]],
            index=frame.index,
            dtype="string",
        )
        return self._framed("last_use_frame", from_sql(frame))

    def addresses_frame(self) -> pd.DataFrame:
        """Each principal's remote addresses, with counts and last time."""
        self._read_usage()
        frame = self.con.execute(
            """
            select accessor, coalesce(role_name, username, cert_name) as role,
                   display_name, remote_address,
                   sum(entries) filter (where entry = 'request') as requests,
                   max(last_time) as last_time
            from usage where entry is not null and remote_address is not null
            group by all order by accessor, remote_address
            """
        ).df()
        return self._framed("addresses_frame", from_sql(frame))


def open(paths: str | Path | Iterable[str | Path]) -> AuditLog:
    """The audit log in ``paths`` (a file, a glob's files, or a list; plain, gzip or zstd).

    Read at once: a file that holds no audit entry, or anything but a regular file
    (a device such as ``/dev/zero``, a FIFO, a folder), is an :class:`~toolkit.InputError`
    naming it; nothing is read from one that is not a regular file.
    """
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    found: list[Path] = []
    for item in items:
        path = Path(item)
        matches = sorted(path.parent.glob(path.name)) if any(c in path.name for c in "*?[") else []
        if not matches and not os.path.lexists(path):
            raise InputError(f"no audit log at {path}: give the file device's file_path")
        found += matches or [path]
    if not found:
        raise InputError("no audit log files given")
    log = AuditLog(found)
    log.span  # noqa: B018 - the one pass: refuses a file with no audit entry now
    return log


def _require_regular(path: Path) -> None:
    """Refuse anything but a regular file (followed through links), from its metadata
    alone: opening a FIFO would wait for a writer, and /dev/zero never ends."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise InputError(f"cannot read the audit log {path}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = (
            "a folder" if stat.S_ISDIR(mode)
            else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file"
        )  # fmt: skip
        raise InputError(
            f"{path} is {kind}, not an audit log file: give the file device's file_path "
            "(a glob that matches it matches too much)"
        )


def _whole(path: Path) -> bool:
    """Whether a ``.gz`` or ``.zst`` file decompresses to its end mark (any other file:
    True), the output thrown away: a file cut short by a copy or a full disk is a gap,
    never a shorter log."""
    suffix = path.suffix.lower()
    try:
        with path.open("rb") as raw:
            if suffix == ".gz":
                with gzip.GzipFile(fileobj=raw) as unpacked:
                    while unpacked.read(1 << 22):
                        pass
                return True
            if suffix == ".zst":
                return _zstd_whole(raw)
    except (EOFError, OSError, zlib.error):
        return False
    return True


def _zstd_whole(raw: Any) -> bool:
    """Whether every zstd frame in ``raw`` runs to its end (last block and checksum),
    without decompressing it: the zstd library's own frame walk
    (``ZSTD_findFrameCompressedSize``, as ``compression.zstd.get_frame_size``; its
    backport before Python 3.14) over a read-only map of the file, frame after frame,
    skippable frames included. It reads the block headers alone: 0.02 s for a 2.6 GB
    log, where decompressing it took longer than DuckDB's read, and the library's
    streaming readers end quietly at a cut."""
    if sys.version_info >= (3, 14):
        from compression.zstd import ZstdError, get_frame_size
    else:
        require("sql", "Checking a .zst audit log for a cut", "backports.zstd")
        from backports.zstd import ZstdError, get_frame_size

    size = os.fstat(raw.fileno()).st_size
    if not size:
        return True  # nothing to cut: DuckDB reads no entry, and the file is refused
    at = 0
    with (
        mmap.mmap(raw.fileno(), 0, access=mmap.ACCESS_READ) as mapped,
        memoryview(mapped) as view,
    ):
        try:
            while at < size:
                at += get_frame_size(view[at:])
        except ZstdError:
            return False
    return at == size


def _ts(value: Any) -> datetime | None:
    if value is None or value is pd.NaT:
        return None
    return pd.Timestamp(value).tz_convert("UTC").to_pydatetime()
