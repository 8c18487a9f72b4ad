"""State that survives a run: one writer at a time, whose it is, and whole or refused.

Every file the toolkit keeps across runs (a revocation journal, a scan's
checkpoint, the history store, the sandbox's state) is written through this
module, so that each has the same four guarantees:

- **One writer.** :class:`Lock` holds an exclusive ``fcntl`` lock on
  ``<file>.lock`` for as long as the file is open; a second run is refused in
  one line naming the holder's process id and host (:class:`Locked`). The
  kernel drops the lock when its process dies, ``kill -9`` included.
- **Whose it is.** A :class:`Stamp` (the identity) is written in every file: what it
  holds (``kind``), the server (:func:`secrets_server`: the ``cluster_id`` of
  ``sys/health``, since one server is reached by several addresses;
  :func:`platform_server`: the address and the organization), the namespace,
  what was asked, and the toolkit's format version. A file with another
  identity is refused in one line naming both (:class:`NotOurs`); a format
  this toolkit does not know is refused (:class:`UnknownFormat`).
- **Whole or refused.** A record file is replaced atomically
  (:func:`replace_atomic`: a temporary file, fsync, rename, fsync of the
  folder) and carries a checksum; a journal is appended a line at a time,
  each line fsync'd and carrying a checksum chained to the line before, so an
  edited, reordered or removed line is found. A damaged file is named
  (:class:`Damaged`), never half-read. The one exception is the last line
  of a journal cut short by a crash or a full disk (no newline): it was never
  acknowledged, so it is cut off and said (:attr:`Journal.torn`).
- **Secrets stay out.** Files and locks are created readable by their owner
  only (0600); what goes in them is the caller's, and must hold no secret.

The API (stable; other modules build on it)::

    FORMAT                                   the toolkit's state format version (int)
    Stamp(kind, server, namespace="", asked={})    .format, .as_dict(), str()
    secrets_server(health) -> str            from a sys/health answer (needs cluster_id)
    platform_server(address, organization) -> str
    Lock(path)                               context manager; .acquire(), .release()
    replace_atomic(path, data: bytes)        tmp + fsync + rename + folder fsync
    append_durable(fd, data: bytes)          one os.write + fsync (a short write raises)
    file_digest(path) -> str                 sha256 hex of a file's bytes
    save_record(path, identity, body)        atomic JSON record with checksum
    load_record(path, identity) -> dict | None   None when there is no file
    RecordFile.open(path, identity)          a locked record file: .body (None if new),
                                             .save(body), .remove(), .close(); a context manager
    Journal.open(path, identity)             a locked append-only journal: .entries,
                                             .torn, .append(entry), .append_many(entries),
                                             .close(); a context manager
    StateError > Locked, NotOurs, Damaged, UnknownFormat   (all InputError: one line)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import socket
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from ._errors import InputError

__all__ = [
    "FORMAT",
    "Damaged",
    "Stamp",
    "Journal",
    "Lock",
    "Locked",
    "NotOurs",
    "RecordFile",
    "StateError",
    "UnknownFormat",
    "append_durable",
    "file_digest",
    "load_record",
    "platform_server",
    "replace_atomic",
    "save_record",
    "secrets_server",
]

# The toolkit's state format: a file written with another is refused, never guessed at.
FORMAT = 1
_MODE = 0o600


class StateError(InputError):
    """A state file that cannot be used as it is: the message names the file and what to do."""


class Locked(StateError):
    """Another run holds the file's lock."""


class NotOurs(StateError):
    """The file was written for another server, namespace, or question."""


class Damaged(StateError):
    """The file is not whole: torn, edited by hand, or not a toolkit state file."""


class UnknownFormat(StateError):
    """The file was written in a format this toolkit does not know."""


# -- identity ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Stamp:
    """Whose a state file is: what it holds, the server, the namespace, what was asked."""

    kind: str
    server: str
    namespace: str = ""
    asked: Mapping[str, Any] = field(default_factory=dict)
    format: int = FORMAT

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "server": self.server,
            "namespace": self.namespace,
            "asked": _plain(self.asked),
            "format": self.format,
        }

    @classmethod
    def from_dict(cls, data: Any, path: Path) -> Stamp:
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            raise Damaged(f"{path} has no identity: it is not a toolkit state file; {_AWAY}")
        _refuse_format(data.get("format"), path)
        return cls(
            kind=str(data["kind"]),
            server=str(data.get("server", "")),
            namespace=str(data.get("namespace", "")),
            asked=data.get("asked") or {},
            format=FORMAT,
        )

    def __str__(self) -> str:
        asked = json.dumps(_plain(self.asked), sort_keys=True) if self.asked else "{}"
        namespace = self.namespace or "(root)"
        return f"{self.kind} of {self.server}, namespace {namespace}, asked {asked}"

    def refuse_other(self, found: Stamp, path: Path) -> None:
        """Raise :class:`NotOurs` unless ``found`` (read from ``path``) is this identity."""
        if found.as_dict() != self.as_dict():
            raise NotOurs(
                f"{path} holds the {found}; this run is the {self}. "
                "Pass another file, or move that one aside to start again"
            )


def _refuse_format(version: Any, path: Path) -> None:
    if version != FORMAT:
        raise UnknownFormat(
            f"{path} is in state format {version!r}, which this toolkit (format {FORMAT}) "
            "does not read; use the toolkit version that wrote it, or move the file aside"
        )


def secrets_server(health: Mapping[str, Any]) -> str:
    """A secrets server's identity from its ``sys/health`` answer: its ``cluster_id``."""
    cluster = health.get("cluster_id")
    if not cluster:
        raise StateError(
            "the secrets server's sys/health answer has no cluster_id (the server is "
            "uninitialised or sealed), so a state file cannot be tied to it; unseal it first"
        )
    return f"secrets server cluster {cluster}"


def platform_server(address: str, organization: str) -> str:
    """A workspace platform's identity: its address and the organization."""
    return f"platform {address.rstrip('/')} organization {organization}"


def _plain(value: Any) -> Any:
    """``value`` as JSON would give it back (tuples as lists), for comparisons."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


_AWAY = "move it aside (or remove it) to start again"


# -- the lock ----------------------------------------------------------------------------------
class Lock:
    """An exclusive lock on ``<path>.lock``, recording the holder's process id and host."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._fd: int | None = None

    def __repr__(self) -> str:
        return f"<Lock {self.path} {'held' if self._fd is not None else 'free'}>"

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, _MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise Locked(
                f"{self.path} is in use by {holder}; wait for that run to end "
                "(or stop it), or pass another file"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} on host {socket.gethostname()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing drops the lock

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text or "another process (it has not yet written its id)"


# -- durable writes ------------------------------------------------------------------------------
def fsync_folder(folder: Path) -> None:
    """Make a rename or a new file in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_atomic(path: str | Path, data: bytes) -> None:
    """Write ``path`` anew, whole or not at all: a crash or a full disk leaves the old file
    (a failure to write is :class:`StateError`, one line)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _MODE)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        fsync_folder(path.parent)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise StateError(
                f"{path} could not be written ({exc.strerror or exc}); it is as it was before"
            ) from None
        raise


def append_durable(fd: int, data: bytes) -> None:
    """Append ``data`` with one write and fsync it; a short write (a full disk) raises."""
    written = os.write(fd, data)
    if written != len(data):
        raise OSError(f"only {written} of {len(data)} bytes could be written (is the disk full?)")
    os.fsync(fd)


def file_digest(path: str | Path) -> str:
    """The sha256 of a file's bytes (hex): a part's fingerprint in a record."""
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        for block in iter(lambda: source.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sum(*texts: str) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


# -- record files (replaced whole) ---------------------------------------------------------------
def save_record(path: str | Path, identity: Stamp, body: Mapping[str, Any]) -> None:
    """Write ``body`` (JSON values) to ``path`` atomically, stamped and checksummed."""
    content = json.dumps(
        {"identity": identity.as_dict(), "body": body}, sort_keys=True, default=str
    )
    record = {"format": FORMAT, "content": content, "checksum": _sum(content)}
    replace_atomic(path, (json.dumps(record) + "\n").encode())


def load_record(path: str | Path, identity: Stamp) -> dict[str, Any] | None:
    """The body saved at ``path`` (None when there is no file); refused when the
    file is damaged, of an unknown format, or of another identity."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise StateError(f"{path} is a folder, not a state file; pass a file path") from None
    try:
        record = json.loads(raw)
        if not isinstance(record, dict):
            raise ValueError("not an object")
    except ValueError:
        raise Damaged(f"{path} is not whole (torn or edited: it is not JSON); {_AWAY}") from None
    _refuse_format(record.get("format"), path)
    content = record.get("content")
    if not isinstance(content, str) or record.get("checksum") != _sum(content):
        raise Damaged(f"{path} was changed since it was written (its checksum fails); {_AWAY}")
    inner = json.loads(content)
    identity.refuse_other(Stamp.from_dict(inner.get("identity"), path), path)
    body = inner.get("body")
    return dict(body) if isinstance(body, dict) else {}


class _Held:
    """A state file opened under its lock (closed by :meth:`close` or ``with``)."""

    def __init__(self, path: str | Path, identity: Stamp) -> None:
        self.path = Path(path)
        self.identity = identity
        self.lock = Lock(self.path)

    def close(self) -> None:
        self.lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class RecordFile(_Held):
    """A record file held under its lock: :attr:`body` (None when new), :meth:`save`."""

    body: dict[str, Any] | None

    @classmethod
    def open(cls, path: str | Path, identity: Stamp) -> RecordFile:
        held = cls(path, identity)
        held.lock.acquire()
        try:
            held.body = load_record(held.path, identity)
        except BaseException:
            held.close()
            raise
        return held

    def __repr__(self) -> str:
        return f"<RecordFile {self.path}: {self.identity}>"

    def save(self, body: Mapping[str, Any]) -> None:
        save_record(self.path, self.identity, body)
        self.body = dict(body)

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.body = None


# -- journals (appended a line at a time) --------------------------------------------------------
class Journal(_Held):
    """An append-only journal held under its lock.

    Line 1 is the header (format and identity); each line after it is one entry
    (a JSON object) with a checksum chained to the line before. :attr:`entries`
    are those read on opening; :attr:`torn` says what was cut off, if anything.
    """

    entries: list[dict[str, Any]]
    torn: str | None
    _fd: int | None
    _last: str

    @classmethod
    def open(cls, path: str | Path, identity: Stamp) -> Journal:
        held = cls(path, identity)
        held.entries, held.torn, held._fd, held._last = [], None, None, ""
        held.lock.acquire()
        try:
            held._read()
            if not held._last:
                # A new journal's header is put in place whole (a full disk leaves no file).
                payload = json.dumps({"journal": identity.as_dict()}, sort_keys=True)
                held._last = _sum("", payload)
                replace_atomic(held.path, f"{payload} {held._last}\n".encode())
            held._fd = os.open(held.path, os.O_WRONLY | os.O_APPEND)
        except BaseException:
            held.close()
            raise
        return held

    def __repr__(self) -> str:
        return f"<Journal {self.path}: {len(self.entries)} entries; {self.identity}>"

    def _read(self) -> None:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        except IsADirectoryError:
            raise StateError(f"{self.path} is a folder, not a journal; pass a file path") from None
        lines = raw.split(b"\n")
        tail = lines.pop()  # b"" when the file ends with a newline
        good = len(raw) - len(tail)
        if tail:
            # A line without its newline was never acknowledged: its write was cut short.
            self.torn = (
                f"{self.path}: line {len(lines) + 1} was torn (a run stopped or the disk "
                "filled while writing it); it was cut off, and what it began is looked up"
            )
        last = ""
        for number, line in enumerate(lines, 1):
            payload, _, check = line.decode("utf-8", "replace").rpartition(" ")
            if number == 1 and (not payload or check != _sum(last, payload)):
                raise Damaged(
                    f"{self.path} is not a toolkit journal (or its first line was edited); "
                    "pass another file"
                )
            if not payload or check != _sum(last, payload):
                raise Damaged(
                    f"{self.path} line {number} was changed, moved or removed since it "
                    f"was written (its checksum fails); {_AWAY}"
                )
            try:
                entry = json.loads(payload)
            except ValueError:
                raise Damaged(f"{self.path} line {number} is not JSON; {_AWAY}") from None
            last = check
            if number == 1:
                found = Stamp.from_dict(entry.get("journal"), self.path)
                self.identity.refuse_other(found, self.path)
            else:
                self.entries.append(entry)
        if tail and not lines:
            raise Damaged(f"{self.path} has no whole header line; {_AWAY}")
        if tail:
            os.truncate(self.path, good)
        self._last = last

    def _write(self, entries: Sequence[Mapping[str, Any]]) -> None:
        if self._fd is None:
            raise StateError(f"journal {self.path} is closed")
        last, lines = self._last, []
        for entry in entries:
            payload = json.dumps(entry, sort_keys=True, default=str)  # escapes line breaks
            last = _sum(last, payload)
            lines.append(f"{payload} {last}\n")
        try:
            append_durable(self._fd, "".join(lines).encode())
        except OSError as exc:
            # What was written may be a torn line: nothing more goes after it in this
            # run (the next open cuts it off), and the caller hears the write failed.
            os.close(self._fd)
            self._fd = None
            raise StateError(
                f"journal {self.path} could not be written ({exc.strerror or exc}); "
                "what was not written was not done"
            ) from None
        self._last = last
        self.entries.extend(dict(e) for e in entries)

    def append(self, entry: Mapping[str, Any]) -> None:
        """Add ``entry`` (JSON values) and make it durable before returning."""
        self._write([entry])

    def append_many(self, entries: Sequence[Mapping[str, Any]]) -> None:
        """Add ``entries`` with one write and one fsync (a torn write tears the last)."""
        if entries:
            self._write(entries)

    def close(self) -> None:
        if getattr(self, "_fd", None) is not None:
            assert self._fd is not None
            fd, self._fd = self._fd, None
            os.close(fd)
        super().close()
