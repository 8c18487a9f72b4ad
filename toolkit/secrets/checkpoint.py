"""Long walks, streamed and resumable: a checkpoint file, and frames spooled to Parquet.

A walk over a large server (every lease looked up, every token, every
certificate) works in chunks. Each chunk becomes a small frame; a
:class:`Spool` keeps the chunks in memory up to ``max_rows`` and writes them
as Parquet parts beyond that (or always, with a checkpoint), so memory is
bounded by that setting, never by the server's size. A :class:`Checkpoint`
file records after each chunk what is done; the same call run again with the
same checkpoint skips what is done, and a walk cut short (Ctrl-C, a lost
connection, a deadline) says how far it got.

The three scans share one loop (:func:`scan_loop`). Their checkpoints are
:mod:`toolkit._durable` records: one run at a time (a lock naming its holder),
tied to the server's ``cluster_id``, the namespace and what was asked, written
whole, and refused by name when edited, torn, or missing a part.

The checkpoint holds names (lease ids, accessors, serial numbers) and never a
secret; it and its parts are written readable by their owner only.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from .._coverage import BuiltFrame
from .._durable import Damaged, RecordFile, Stamp, file_digest, replace_atomic, secrets_server
from .._errors import (
    InputError,
    RateLimited,
    ServerError,
    ToolkitError,
    TransportError,
    one_line,
)
from .._http import HTTPLayer
from .._spec.headers import NAMESPACE_HEADER

__all__ = [
    "DEFAULT_MAX_ROWS",
    "Checkpoint",
    "Spool",
    "WalkInterrupted",
    "open_checkpoint",
    "ScanLoop",
    "reported",
    "scan_loop",
    "server_identity",
]

# Health answers that still carry the cluster's id (standby, performance standby, sealed...).
_HEALTH_ANSWERS = frozenset({429, 472, 473, 501, 503})
# Rows a walk keeps in memory before it spools to Parquet (about 300 MB of lease rows).
DEFAULT_MAX_ROWS = 2_000_000


class WalkInterrupted(ToolkitError):
    """A long walk stopped before its end (a lost connection, a deadline). What it had
    done is in its checkpoint: the same call with the same checkpoint resumes."""


class Checkpoint:
    """A walk's progress in a record file at ``path`` (:class:`toolkit._durable.RecordFile`:
    locked while open, stamped with the server, namespace, kind and what was asked,
    replaced atomically, checksummed), with its Parquet parts beside it
    (``<path>.parts/``), each part's rows and digest recorded.

    Opening verifies every recorded part: a missing or changed part is
    :class:`~toolkit._durable.Damaged`, named in one line. A part written after the
    last save (a run stopped between the two) is not recorded and is removed.
    ``state`` is the walk's own record of what is done (a dict of JSON values).
    """

    def __init__(self, path: str | Path, identity: Stamp) -> None:
        self.path = Path(path)
        self.parts = self.path.with_name(self.path.name + ".parts")
        self.identity = identity
        self.state: dict[str, Any] = {}
        self.rows = 0
        self.part_list: list[dict[str, Any]] = []
        self.finished = False
        self.record = RecordFile.open(self.path, identity)
        try:
            self.resumed = self.record.body is not None
            if self.record.body is not None:
                self._load(self.record.body)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        return f"<Checkpoint {self.path} {self.identity.kind}: {self.rows:,} rows, {self.part_count} parts>"

    @property
    def part_count(self) -> int:
        return len(self.part_list)

    def _load(self, body: dict[str, Any]) -> None:
        self.state = dict(body.get("state") or {})
        self.rows = int(body.get("rows") or 0)
        self.part_list = [dict(p) for p in body.get("parts") or []]
        self.finished = bool(body.get("finished"))
        if sum(int(p["rows"]) for p in self.part_list) != self.rows:
            raise Damaged(
                f"checkpoint {self.path} counts {self.rows:,} rows but its parts hold another number; {_AWAY}"
            )
        for part in self.part_list:
            name = self.parts / part["name"]
            try:
                digest = file_digest(name)
            except FileNotFoundError:
                raise Damaged(
                    f"checkpoint {self.path}: its part {name.name} is missing; {_AWAY}"
                ) from None
            if digest != part["sha256"]:
                raise Damaged(
                    f"checkpoint {self.path}: its part {name.name} was changed since it was written; {_AWAY}"
                )
        recorded = {p["name"] for p in self.part_list}
        if self.parts.is_dir():
            for extra in self.parts.iterdir():
                if extra.name not in recorded:
                    extra.unlink()  # written after the last save: never acknowledged

    def add_part(self, name: str, rows: int, digest: str) -> None:
        self.part_list.append({"name": name, "rows": rows, "sha256": digest})
        self.rows += rows

    def save(self) -> None:
        """Write the record anew, atomically (a crash leaves the old one or the new one)."""
        self.record.save(
            {
                "rows": self.rows,
                "parts": self.part_list,
                "finished": self.finished,
                "saved_at": time.time(),
                "state": self.state,
            }
        )

    def remove(self) -> None:
        """Delete the record and its parts (a walk that should start again); the lock stays held."""
        self.record.remove()
        shutil.rmtree(self.parts, ignore_errors=True)
        self.state, self.rows, self.part_list, self.finished = {}, 0, [], False
        self.resumed = False

    def close(self) -> None:
        """Release the lock (the file stays, to resume from)."""
        self.record.close()


_AWAY = "move it and its .parts folder aside (or remove them) to start again"


def open_checkpoint(
    path: str | Path | None, http: HTTPLayer, kind: str, params: dict[str, Any]
) -> Checkpoint | None:
    """The checkpoint at ``path`` to resume (None without a path), locked, and of
    this server, namespace, ``kind`` and ``params``; one left by a walk that
    finished is removed, and a new walk starts."""
    if path is None:
        return None
    point = Checkpoint(path, server_identity(http, f"{kind} scan checkpoint", params))
    if point.finished:
        point.remove()
    return point


class ScanLoop:
    """The one loop of every long scan (leases, tokens, certificates): its checkpoint,
    its spool, its deadline, and what a stop says. Used through :func:`scan_loop`.

    The scan reads :attr:`state` (what the checkpoint says is done; empty when new),
    then for each chunk calls :meth:`add` with the chunk's rows and the new state;
    :meth:`save` records progress without rows; :meth:`finish` marks it whole.
    """

    def __init__(
        self,
        point: Checkpoint | None,
        max_rows: int,
        deadline: float | None,
        on_chunk: Callable[[int], None] | None,
    ) -> None:
        self.point = point
        self.spool = Spool(max_rows, point)
        self.state: dict[str, Any] = dict(point.state) if point is not None else {}
        self.resumed = point.resumed if point is not None else False
        self.deadline = deadline
        self.stop_at = time.monotonic() + deadline if deadline is not None else None
        self.on_chunk = on_chunk
        self.progress: Callable[[], str] = lambda: f"{self.spool.rows:,} rows"

    def __repr__(self) -> str:
        return f"<ScanLoop {self.spool.rows:,} rows; {where(self.point)}>"

    def how_far(self) -> str:
        return f"{self.progress()}; {where(self.point)}"

    def save(self, state: dict[str, Any]) -> None:
        self.state = state
        if self.point is not None:
            self.point.state = state
            self.point.save()

    def add(self, frame: pd.DataFrame, state: dict[str, Any], *, may_stop: bool = True) -> None:
        """Keep ``frame``'s rows, record ``state``, and stop here if the deadline passed."""
        self.spool.add(frame)
        self.save(state)
        if self.on_chunk is not None:
            self.on_chunk(self.spool.rows)
        if may_stop and self.stop_at is not None and time.monotonic() >= self.stop_at:
            raise WalkInterrupted(f"the scan's deadline of {self.deadline:g} s passed")

    def finish(self, state: dict[str, Any] | None = None) -> None:
        if self.point is not None:
            self.point.finished = True
        self.save(self.state if state is None else state)


@contextlib.contextmanager
def scan_loop(
    http: HTTPLayer,
    what: str,
    kind: str,
    asked: dict[str, Any],
    *,
    checkpoint: str | Path | None,
    max_rows: int = DEFAULT_MAX_ROWS,
    deadline: float | None = None,
    on_chunk: Callable[[int], None] | None = None,
) -> Iterator[ScanLoop]:
    """A :class:`ScanLoop` for the ``what`` scan: its checkpoint opened (locked, of
    this server and namespace, ``kind`` and ``asked``) and released on the way
    out, and a stop reported as :func:`reported` does, saying how far it got."""
    loop = ScanLoop(open_checkpoint(checkpoint, http, kind, asked), max_rows, deadline, on_chunk)
    try:
        with reported(what, loop.how_far):
            yield loop
    finally:
        if loop.point is not None:
            loop.point.close()


@contextlib.contextmanager
def reported(what: str, how_far: Callable[[], str]) -> Iterator[None]:
    """Around a walk: a stop says how far it got (``how_far()``). A lost connection or a
    server failing past the layer's retries becomes :class:`WalkInterrupted`; Ctrl-C
    stays a ``KeyboardInterrupt`` with that line as a note; a refusal of the whole
    walk, a missing mount or namespace, and bad input are raised as they are."""
    try:
        yield
    except WalkInterrupted as exc:
        raise WalkInterrupted(f"{exc}; {how_far()}") from None
    except (TransportError, ServerError, RateLimited) as exc:
        # What a rerun may get past: a lost connection, a deadline, a failing server.
        # Anything else (a refusal, a missing mount or namespace, bad input) is raised
        # as it is: resuming would meet it again.
        raise WalkInterrupted(
            f"the {what} stopped ({type(exc).__name__}: {exc}); {how_far()}; "
            "run it again with the same checkpoint to resume"
        ) from exc
    except KeyboardInterrupt as exc:
        exc.add_note(f"{what} interrupted: {how_far()}")
        raise


def where(point: Checkpoint | None) -> str:
    """Where the progress is kept, for a line saying how far a walk got."""
    return f"checkpoint {point.path}" if point is not None else "no checkpoint (pass one to resume)"


class Spool:
    """Chunk frames, in memory up to ``max_rows`` rows, else Parquet parts in a folder.

    With a checkpoint every chunk goes to its parts at once (memory is lost on an
    interruption; the parts are not), each written whole (:func:`replace_atomic`),
    and the checkpoint records its rows and digest.
    """

    def __init__(self, max_rows: int = DEFAULT_MAX_ROWS, checkpoint: Checkpoint | None = None):
        if max_rows < 1:
            raise InputError(f"max_rows must be at least 1, not {max_rows}")
        self.max_rows = max_rows
        self.checkpoint = checkpoint
        self.held: list[pd.DataFrame] = []
        self.held_rows = 0
        self.folder: Path | None = checkpoint.parts if checkpoint is not None else None
        self.written = checkpoint.part_count if checkpoint is not None else 0
        self.rows = checkpoint.rows if checkpoint is not None else 0

    def __repr__(self) -> str:
        return f"<Spool {self.rows:,} rows, {self.written} parts>"

    @property
    def spooled(self) -> bool:
        """Whether the rows are (also) on disk, in :attr:`folder`."""
        return self.folder is not None and self.written > 0

    def add(self, frame: pd.DataFrame) -> None:
        if not len(frame):
            return
        self.rows += len(frame)
        if self.folder is None and self.held_rows + len(frame) <= self.max_rows:
            self.held.append(frame)
            self.held_rows += len(frame)
            return
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="toolkit-walk-"))
        for held in self.held:
            self._write(held)
        self.held, self.held_rows = [], 0
        self._write(frame)

    def _name(self, k: int) -> str:
        return f"part-{k:06d}.parquet"

    def _write(self, frame: pd.DataFrame) -> None:
        assert self.folder is not None
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = self._name(self.written)
        if self.checkpoint is None:  # a scratch folder: nothing resumes from it
            frame.to_parquet(self.folder / name)
            self.written += 1
            return
        data = frame.to_parquet()
        replace_atomic(self.folder / name, data)
        self.written += 1
        self.checkpoint.add_part(name, len(frame), hashlib.sha256(data).hexdigest())

    def pieces(self, columns: list[str] | None = None) -> Iterator[pd.DataFrame]:
        """The chunks one at a time (read from disk when spooled): for aggregates
        whose memory is one chunk's. A part gone or damaged since is named."""
        if self.folder is not None:
            for k in range(self.written):
                part = self.folder / self._name(k)
                try:
                    yield pd.read_parquet(part, columns=columns)
                except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError
                    raise Damaged(
                        f"the scan's part {part} cannot be read ({type(exc).__name__}: "
                        f"{one_line(str(exc))[:120]}); run the scan again"
                    ) from None
        for held in self.held:
            yield held if columns is None else held[columns]

    def frame(self, empty: pd.DataFrame) -> BuiltFrame:
        """Every row as one frame (``empty`` when there is none)."""
        pieces = list(self.pieces())
        if not pieces:
            return empty
        return pd.concat(pieces) if len(pieces) > 1 else pieces[0]


def server_identity(http: HTTPLayer, kind: str, asked: Mapping[str, Any]) -> Stamp:
    """Whose a state file is: this server's ``cluster_id`` (``GET sys/health``, asked
    without a token or a namespace: one server answers to several addresses), the
    namespace ``http`` is in, ``kind`` and what was ``asked``."""
    namespace = http.headers.get(NAMESPACE_HEADER) or ""
    root = http.with_headers({NAMESPACE_HEADER: None})
    response = root.request("GET", "/sys/health", ok_statuses=_HEALTH_ANSWERS)
    try:
        health = response.json()
    except ValueError:
        health = {}
    return Stamp(
        kind,
        secrets_server(health if isinstance(health, dict) else {}),
        namespace.strip("/") + "/" if namespace.strip("/") else "",
        dict(asked),
    )


# -- the views over a finished scan ----------------------------------------------------------
class Scanned(Protocol):
    """A finished scan (the lease scan, the token scan): its rows in a :class:`Spool`,
    and the record of what its walk could read."""

    spool: Spool

    def coverage(self) -> dict[str, Any]: ...


def scan_pieces(scan: Scanned | Spool | pd.DataFrame, columns: list[str]) -> Iterable[pd.DataFrame]:
    """``columns`` of a scan's rows a part at a time (a frame is one part): a view over
    a scan that spooled to disk never holds all its rows at once."""
    if isinstance(scan, pd.DataFrame):
        return [scan[columns]]
    spool = scan if isinstance(scan, Spool) else scan.spool
    return spool.pieces(columns)


def keep_scan_record(frame: pd.DataFrame, scan: Scanned | pd.DataFrame) -> None:
    """Give ``frame`` (a view of ``scan``) the scan's coverage record: what the walk
    could not read is missing from every view of it too (a frame handed in keeps its
    own record, carried by ``carries_coverage``)."""
    record = scan.attrs.get("coverage") if isinstance(scan, pd.DataFrame) else scan.coverage()
    if record is not None:
        frame.attrs["coverage"] = record
