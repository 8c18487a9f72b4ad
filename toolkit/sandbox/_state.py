"""The sandbox's stored state (``--state PATH``): both services in one SQLite file.

The whole state (the clock and both services, which share it) is pickled and
written as one row, in a transaction that SQLite commits to disk
(``synchronous=FULL``) before the answer leaves: every acknowledged write
survives a ``kill -9``. The answer to a write (POST, PUT, PATCH, DELETE) is
held back until its state is stored; reads, which change state only by the
passage of time (a lease expiring, a password rotated on read), are stored
within :data:`READ_FLUSH_SECONDS` by a background flush, so audits that read
thousands of records are not slowed down by the store.

On start, a file that holds a state is resumed (the clock continues from the
instant it was saved at, and the demo data is not loaded again); a new or
empty file gets the freshly built state at once.
"""

from __future__ import annotations

import hashlib
import pickle
import sqlite3
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._clock import Clock
    from .platform.models import PlatformService
    from .secrets.models import SecretsService

__all__ = ["READ_FLUSH_SECONDS", "StateFile", "StoredState"]

# How long a change made while reading may wait before it is stored.
READ_FLUSH_SECONDS = 0.5
_FORMAT = 1


@dataclass
class StoredState:
    clock: Clock
    platform: PlatformService
    secrets: SecretsService


class StateFile:
    """One SQLite file holding the sandbox's state; safe to call from any thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS sandbox_state ("
            " id INTEGER PRIMARY KEY CHECK (id = 1),"
            " format INTEGER NOT NULL, saved_at REAL NOT NULL, state BLOB NOT NULL)"
        )
        self._write_lock = threading.Lock()
        self._last_digest = b""
        self._flush_timer: threading.Timer | None = None
        self._closed = False

    def load(self) -> StoredState | None:
        """The stored state, or None when the file holds none yet."""
        row = self._db.execute("SELECT format, state FROM sandbox_state WHERE id = 1").fetchone()
        if row is None:
            return None
        fmt, blob = row
        if fmt != _FORMAT:
            raise ValueError(
                f"{self.path}: stored state has format {fmt}, this sandbox reads {_FORMAT}; "
                "start with another --state file"
            )
        self._last_digest = hashlib.sha256(blob).digest()
        clock, platform, secrets = pickle.loads(blob)  # our own file, written below
        return StoredState(clock, platform, secrets)

    def save(self, state: StoredState) -> None:
        """Store ``state`` now, consistent across both services; returns once it is on disk."""
        with ExitStack() as stack:
            # Both services' locks: no handler is half-way through a change.
            stack.enter_context(state.platform.lock)
            stack.enter_context(state.secrets.lock)
            blob = pickle.dumps(
                (state.clock, state.platform, state.secrets), protocol=pickle.HIGHEST_PROTOCOL
            )
        digest = hashlib.sha256(blob).digest()
        with self._write_lock:
            if self._closed or digest == self._last_digest:
                return
            self._db.execute(
                "INSERT INTO sandbox_state (id, format, saved_at, state) VALUES (1, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET format = excluded.format, "
                "saved_at = excluded.saved_at, state = excluded.state",
                (_FORMAT, time.time(), blob),
            )
            self._last_digest = digest

    def save_soon(self, state: StoredState) -> None:
        """Store ``state`` within :data:`READ_FLUSH_SECONDS` (one pending flush at a time)."""
        with self._write_lock:
            if self._closed or self._flush_timer is not None:
                return
            timer = threading.Timer(READ_FLUSH_SECONDS, self._flush, args=(state,))
            timer.daemon = True
            self._flush_timer = timer
        timer.start()

    def _flush(self, state: StoredState) -> None:
        with self._write_lock:
            self._flush_timer = None
        self.save(state)

    def close(self, state: StoredState | None = None) -> None:
        """Store ``state`` a last time (when given) and close the file."""
        with self._write_lock:
            timer, self._flush_timer = self._flush_timer, None
        if timer is not None:
            timer.cancel()
        if state is not None:
            self.save(state)
        with self._write_lock:
            self._closed = True
            self._db.close()

    def __repr__(self) -> str:
        return f"<StateFile {self.path}>"


def stored(sandbox: Any) -> StoredState:
    """The parts of a :class:`~toolkit.sandbox.Sandbox` that are stored."""
    return StoredState(sandbox.clock, sandbox.platform, sandbox.secrets)
