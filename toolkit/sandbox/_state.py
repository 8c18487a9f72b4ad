"""The sandbox's stored state (``--state PATH``): both services in one SQLite file, as plain data.

What is stored, and how a write stays cheap:

- The state is plain data (JSON, see ``_plain``), never pickle: reading a
  planted file cannot run code. A file in the old pickled form is refused.
- The records that grow with use (leases and tokens, :class:`~._plain.RecordTable`)
  have one row each in ``sandbox_records``; the rest of the state, which is small
  and bounded (mounts, policies, engine settings, the platform), is stored in
  ``sandbox_areas``, one row per area (the clock, the platform, the secrets
  server), rewritten only when its encoding changed. A write therefore stores
  the rows it changed: a token create writes the token, its lease and the
  clock, whatever the number of leases held.
- Each request's rows go in one transaction that SQLite commits to its
  write-ahead log before the answer leaves: every acknowledged request
  survives a ``kill -9`` of the sandbox. That holds for reads as much as for
  writes, since a read may change state too (a credential issued by
  ``GET database/creds/...``, a lease expiring, a password rotated on read);
  a read that changed nothing writes nothing. The log is not fsynced on
  every commit (``synchronous=NORMAL``, WAL): a crash of the whole machine
  may lose the last writes, which a test double may.
- One sandbox a file: the file's lock (``<file>.lock``, :class:`toolkit._durable.Lock`)
  is held from start to stop, and a second sandbox on the same file is refused
  in one line naming the holder's process and host.
- The file and its WAL and SHM files are the user's alone: created 0600, and
  a file owned by another user, or that group or others may read or write, is
  refused with the reason.

On start, a file that holds a state is resumed (the clock continues from the
instant it was saved at, and the demo data is not loaded again); a new or
empty file gets the freshly built state at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Collection, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from .._durable import Lock
from .._version import __version__
from ._plain import Decoder, Encoder, PlainDataError

if TYPE_CHECKING:
    from ._clock import Clock
    from .platform.models import PlatformService
    from .secrets.models import SecretsService

__all__ = ["StateFile", "StateFileError", "StoredState", "check_private"]

# The stored form's version: raised whenever a stored class is renamed or moved, or a
# field changes meaning (3: the sandbox's stores and engines renamed, issue 25), so that
# an older file is refused by its number rather than by the first name it lacks.
_FORMAT = 3
_AREAS = ("clock", "platform", "secrets")


class StateFileError(ValueError):
    """The ``--state`` file cannot be used; the message names the file and why."""


@dataclass
class StoredState:
    clock: Clock
    platform: PlatformService
    secrets: SecretsService


def check_private(path: str) -> None:
    """Refuse ``path`` unless it is a regular file of this user that nobody else may use.

    A state file holds every token and share: another user's file could be
    planted, and one that group or others may read or write leaks or is forged.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise StateFileError(f"{path} is not a regular file")
    if info.st_uid != os.geteuid():
        raise StateFileError(
            f"{path} is owned by uid {info.st_uid}, not by this user (uid {os.geteuid()}); "
            "a state file must be your own"
        )
    loose = info.st_mode & 0o077
    if loose:
        who = []
        if info.st_mode & 0o070:
            who.append("group")
        if info.st_mode & 0o007:
            who.append("others")
        raise StateFileError(
            f"{path} has mode {stat.S_IMODE(info.st_mode):04o}: {' and '.join(who)} may "
            f"{'write' if info.st_mode & 0o022 else 'read'} it; a state file holds tokens "
            f"and shares, so run 'chmod 600 {path}' first"
        )


class StateFile:
    """One SQLite file holding the sandbox's state; safe to call from any thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        for name in (path, path + "-wal", path + "-shm"):
            check_private(name)
        # One sandbox a file: a second is refused, naming the first (Locked, one line).
        self._lock = Lock(path)
        self._lock.acquire()
        try:
            self._open(path)
        except BaseException:
            self._lock.release()
            raise
        self._write_lock = threading.Lock()
        self._digests: dict[str, bytes] = {}
        self._closed = False
        # Rows written by the last save, for tests and benchmarks.
        self.last_rows = 0

    def _open(self, path: str) -> None:
        with contextlib.suppress(FileExistsError):
            # 0600 from the start; SQLite gives the WAL and SHM files the database's mode.
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            # A committed transaction is in the WAL (the OS's page cache) when the
            # answer leaves: it survives the process being killed, not the machine.
            self._db.execute("PRAGMA synchronous=NORMAL")
            tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
            if "sandbox_state" in tables:
                raise StateFileError(
                    f"{path} holds a state stored by an older sandbox as a pickle, which this "
                    "sandbox no longer reads (loading a pickle can run any code); "
                    "start with another --state file"
                )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS sandbox_meta (key TEXT PRIMARY KEY, value TEXT)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS sandbox_areas ("
                " name TEXT PRIMARY KEY, ord INTEGER NOT NULL, doc BLOB NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS sandbox_records ("
                " tbl TEXT NOT NULL, key TEXT NOT NULL, doc BLOB NOT NULL,"
                " PRIMARY KEY (tbl, key)) WITHOUT ROWID"
            )
        except BaseException:
            self._db.close()
            raise
        for name in (path + "-wal", path + "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.chmod(name, 0o600)  # in case SQLite did not take the database's mode

    def load(self) -> StoredState | None:
        """The stored state, or None when the file holds none yet."""
        try:
            return self._load()
        except (PlainDataError, orjson.JSONDecodeError, KeyError, TypeError) as exc:
            raise StateFileError(
                f"{self.path}: the stored state cannot be read: {exc} (stored by "
                f"{self._stored_by()}); start with another --state file"
            ) from None

    def _stored_by(self) -> str:
        row = self._db.execute(
            "SELECT value FROM sandbox_meta WHERE key = 'toolkit_version'"
        ).fetchone()
        return f"toolkit {row[0]}, this is {__version__}" if row else "an older toolkit"

    def _load(self) -> StoredState | None:
        areas = self._db.execute("SELECT name, doc FROM sandbox_areas ORDER BY ord").fetchall()
        if not areas:
            return None
        row = self._db.execute("SELECT value FROM sandbox_meta WHERE key = 'format'").fetchone()
        fmt = row[0] if row else None
        if fmt != str(_FORMAT):
            raise StateFileError(
                f"{self.path}: stored state has format {fmt} ({self._stored_by()}), this "
                f"sandbox reads {_FORMAT}; start with another --state file"
            )
        decoder = Decoder()
        records = [
            (tbl, key, orjson.loads(doc))
            for tbl, key, doc in self._db.execute("SELECT tbl, key, doc FROM sandbox_records")
        ]
        for tbl, key, doc in records:
            decoder.shell(tbl, key, doc)
        if [name for name, _ in areas] != list(_AREAS):
            raise PlainDataError(f"expected the areas {list(_AREAS)}")
        root = decoder.decode_root({name: orjson.loads(doc) for name, doc in areas})
        for tbl, key, doc in records:
            decoder.fill(tbl, key, doc)
        decoder.finish()
        from ._clock import Clock
        from .platform.models import PlatformService
        from .secrets.models import SecretsService

        expected = {"clock": Clock, "platform": PlatformService, "secrets": SecretsService}
        for name, cls in expected.items():
            if not isinstance(root[name], cls):
                raise PlainDataError(f"area {name!r} is not a {cls.__name__}")
        self._digests = {name: hashlib.sha256(doc).digest() for name, doc in areas}
        return StoredState(root["clock"], root["platform"], root["secrets"])

    def save(self, state: StoredState, services: Collection[str] = ("platform", "secrets")) -> None:
        """Store what changed in ``state`` now, consistently; returns once it is on disk.

        ``services`` narrows the areas looked at to those a request may have
        changed (a write to one API does not touch the other service, which
        shares only the clock with it); the clock is always stored.
        """
        with self._write_lock:
            if self._closed:
                return
            with self._consistent(state):
                encoder = Encoder()
                everything = {"clock": state.clock, "platform": state.platform}
                everything["secrets"] = state.secrets
                roots = encoder.encode_root(
                    {k: v for k, v in everything.items() if k == "clock" or k in services}
                )
                taken = {name: table.dirty for name, table in encoder.tables.items()}
                for table in encoder.tables.values():
                    table.dirty = set()
                records: list[tuple[str, str, bytes | None]] = []
                for name, keys in taken.items():
                    table = encoder.tables[name]
                    for key in keys:
                        value = dict.get(table, key)
                        doc = None if value is None else orjson.dumps(encoder.encode_record(value))
                        records.append((name, key, doc))
            areas = [(name, orjson.dumps(roots[name])) for name in _AREAS if name in roots]
            changed = [
                (name, doc)
                for name, doc in areas
                if self._digests.get(name) != hashlib.sha256(doc).digest()
            ]
            if not changed and not records:
                return
            try:
                self._write(changed, records)
            except BaseException:
                for name, keys in taken.items():
                    encoder.tables[name].dirty |= keys  # stored next time
                raise
            for name, doc in changed:
                self._digests[name] = hashlib.sha256(doc).digest()
            self.last_rows = len(changed) + len(records)

    @staticmethod
    @contextlib.contextmanager
    def _consistent(state: StoredState) -> Iterator[None]:
        # Both services' locks: no handler is half-way through a change.
        with ExitStack() as stack:
            stack.enter_context(state.platform.lock)
            stack.enter_context(state.secrets.lock)
            yield

    def _write(
        self, areas: list[tuple[str, bytes]], records: list[tuple[str, str, bytes | None]]
    ) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "INSERT OR REPLACE INTO sandbox_meta (key, value) VALUES ('format', ?), "
                "('saved_at', ?), ('toolkit_version', ?)",
                (str(_FORMAT), repr(time.time()), __version__),
            )
            db.executemany(
                "INSERT OR REPLACE INTO sandbox_areas (name, ord, doc) VALUES (?, ?, ?)",
                [(name, _AREAS.index(name), doc) for name, doc in areas],
            )
            db.executemany(
                "INSERT OR REPLACE INTO sandbox_records (tbl, key, doc) VALUES (?, ?, ?)",
                [r for r in records if r[2] is not None],
            )
            db.executemany(
                "DELETE FROM sandbox_records WHERE tbl = ? AND key = ?",
                [(tbl, key) for tbl, key, doc in records if doc is None],
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def close(self, state: StoredState | None = None) -> None:
        """Store ``state`` a last time (when given), close the file and let go of its lock."""
        if state is not None:
            self.save(state)
        with self._write_lock:
            if not self._closed:
                self._closed = True
                self._db.close()
                self._lock.release()

    def __repr__(self) -> str:
        return f"<StateFile {self.path}>"


def stored(sandbox: Any) -> StoredState:
    """The parts of a :class:`~toolkit.sandbox.Sandbox` that are stored."""
    return StoredState(sandbox.clock, sandbox.platform, sandbox.secrets)
