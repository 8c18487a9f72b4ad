"""Long walks, streamed and resumable: a checkpoint file, and frames spooled to Parquet.

A walk over a large server (every lease looked up, every token, every
certificate) works in chunks. Each chunk becomes a small frame; a
:class:`Spool` keeps the chunks in memory up to ``max_rows`` and writes them
as Parquet parts beyond that (or always, with a checkpoint), so memory is
bounded by that setting, never by the server's size. A :class:`Checkpoint`
file records after each chunk what is done; the same call run again with the
same checkpoint skips what is done, and a walk cut short (Ctrl-C, a lost
connection, a deadline) says how far it got.

The checkpoint holds names (lease ids, accessors, serial numbers) and never a
secret; it and its parts are written readable by their owner only.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from .._coverage import BuiltFrame
from .._errors import InputError, RateLimited, ServerError, ToolkitError, TransportError

__all__ = [
    "DEFAULT_MAX_ROWS",
    "Checkpoint",
    "Spool",
    "WalkInterrupted",
    "open_checkpoint",
    "reported",
]

# Rows a walk keeps in memory before it spools to Parquet (about 300 MB of lease rows).
DEFAULT_MAX_ROWS = 2_000_000


class WalkInterrupted(ToolkitError):
    """A long walk stopped before its end (a lost connection, a deadline). What it had
    done is in its checkpoint: the same call with the same checkpoint resumes."""


class Checkpoint:
    """A walk's progress in a JSON file at ``path``, with its Parquet parts beside it
    (``<path>.parts/``).

    ``kind`` and ``params`` name the walk: a file left by another walk (another
    kind, other mounts) is refused rather than resumed. ``state`` is the walk's
    own record of what is done (a dict of JSON values).
    """

    def __init__(self, path: str | Path, kind: str, params: dict[str, Any]) -> None:
        self.path = Path(path)
        self.parts = self.path.with_name(self.path.name + ".parts")
        self.kind = kind
        self.params = params
        self.state: dict[str, Any] = {}
        self.rows = 0
        self.part_count = 0
        self.finished = False
        self.resumed = False
        if self.path.exists():
            self._load()

    def __repr__(self) -> str:
        return f"<Checkpoint {self.path} {self.kind}: {self.rows:,} rows, {self.part_count} parts>"

    def _load(self) -> None:
        try:
            saved = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(
                f"checkpoint {self.path} cannot be read ({exc}); remove it to start again"
            ) from None
        if saved.get("kind") != self.kind or saved.get("params") != self.params:
            raise InputError(
                f"checkpoint {self.path} is of another walk ({saved.get('kind')} "
                f"{saved.get('params')}); pass another path, or remove it to start again"
            )
        self.state = dict(saved.get("state") or {})
        self.rows = int(saved.get("rows") or 0)
        self.part_count = int(saved.get("parts") or 0)
        self.finished = bool(saved.get("finished"))
        self.resumed = True

    def save(self) -> None:
        """Write the file anew, atomically (a crash leaves the old one or the new one)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "kind": self.kind,
            "params": self.params,
            "rows": self.rows,
            "parts": self.part_count,
            "finished": self.finished,
            "saved_at": time.time(),
            "state": self.state,
        }
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=self.path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as out:
                json.dump(record, out)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def remove(self) -> None:
        """Delete the file and its parts (a walk that should start again)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        shutil.rmtree(self.parts, ignore_errors=True)


def open_checkpoint(
    path: str | Path | None, kind: str, params: dict[str, Any]
) -> Checkpoint | None:
    """The checkpoint at ``path`` to resume (None without a path); one left by a walk
    that finished is removed, and a new walk starts."""
    if path is None:
        return None
    point = Checkpoint(path, kind, params)
    if point.finished:
        point.remove()
        point = Checkpoint(path, kind, params)
    return point


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
    interruption; the parts are not) and the checkpoint counts them.
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

    def _write(self, frame: pd.DataFrame) -> None:
        assert self.folder is not None
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        frame.to_parquet(self.folder / f"part-{self.written:06d}.parquet")
        self.written += 1
        if self.checkpoint is not None:
            self.checkpoint.part_count = self.written
            self.checkpoint.rows = self.rows

    def pieces(self, columns: list[str] | None = None) -> Iterator[pd.DataFrame]:
        """The chunks one at a time (read from disk when spooled): for aggregates
        whose memory is one chunk's."""
        if self.folder is not None:
            for k in range(self.written):
                yield pd.read_parquet(self.folder / f"part-{k:06d}.parquet", columns=columns)
        for held in self.held:
            yield held if columns is None else held[columns]

    def frame(self, empty: pd.DataFrame) -> BuiltFrame:
        """Every row as one frame (``empty`` when there is none)."""
        pieces = list(self.pieces())
        if not pieces:
            return empty
        return pd.concat(pieces) if len(pieces) > 1 else pieces[0]
