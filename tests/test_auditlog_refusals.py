"""Issue 33: the audit log refuses what it cannot read. A file with no audit entry is an
error naming it; each unreadable line, unparsable time and compressed file cut short is a
gap with its count; "never used" is said only of a log read whole; only regular files are
read. Every input here once gave a complete "never used" for every principal."""

from __future__ import annotations

import gzip
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import zstandard

from toolkit import InputError, auditlog
from toolkit._coverage import require_complete
from toolkit._errors import PartialCoverage

OPENBAO_LOG = Path(__file__).parent / "data" / "openbao-2.7.2-audit.log"
DATA = OPENBAO_LOG.read_bytes()
LINES = DATA.splitlines()
NEVER = "never used since the log begins"


def _unused(log: auditlog.AuditLog) -> pd.DataFrame:
    """The join with live roles `app1` (in the log) and `unused` (never in it)."""
    roles = pd.DataFrame(
        {"mount": ["approle/"] * 2, "method": ["approle"] * 2, "kind": ["approle role"] * 2,
         "name": ["app1", "unused"], "mount_accessor": ["auth_approle_1"] * 2}, dtype="string",
    )  # fmt: skip
    tokens = pd.DataFrame(index=pd.Index([], name="accessor", dtype="string"))
    frame = auditlog.unused_frame(log, None, days=30, tokens=tokens, roles=roles)
    return frame.set_index("name")


def test_a_log_read_whole_says_never_used_and_its_period(tmp_path: Path) -> None:
    usage = _unused(auditlog.open(OPENBAO_LOG))
    assert usage.loc["unused", "state"] == NEVER and usage.loc["app1", "state"] == "used"
    assert usage.attrs["coverage"]["complete"]
    period = usage.attrs["log"]
    assert (
        period["first_time"].startswith("2026-11-25")
        and period["last_time"] >= period["first_time"]
    )
    assert period["complete"] and period["lines"] == len(LINES)


# -- a file with no audit entry is an error that names it ------------------------------------
NOT_AUDIT_LOGS: dict[str, bytes] = {
    "dpkg.log": b"2026-11-01 10:00:00 status installed libc6:amd64 2.36-9\n"
    b"2026-11-01 10:00:01 configure openssl:amd64 3.0.15-1 <none>\n",
    "syslog": b"".join(b"Nov 25 17:32:52 host bao[812]: " + line + b"\n" for line in LINES),
    "not-utf8.log": b"\xff\xfe\x00\x81 not text\n" * 20,
    "empty.log": b"",
    "app.json.log": b'{"level":"info","msg":"listening","time":"2026-11-01T00:00:00Z"}\n',
}


@pytest.mark.parametrize("name", sorted(NOT_AUDIT_LOGS))
def test_a_file_with_no_audit_entry_is_an_error_naming_it(tmp_path: Path, name: str) -> None:
    (tmp_path / "audit-1.log").write_bytes(DATA)
    (tmp_path / name).write_bytes(NOT_AUDIT_LOGS[name])
    with pytest.raises(InputError, match=f"{name} holds no audit entry") as caught:
        auditlog.open(tmp_path / name)
    assert "\n" not in str(caught.value)
    # Beside a real log, in one glob or list, it is refused the same: not read as unused.
    with pytest.raises(InputError, match=f"{name} holds no audit entry"):
        auditlog.open([tmp_path / "audit-1.log", tmp_path / name])


# -- what could not be read is a gap, with the count; never "never used" -------------------
def _some_lines_broken(tmp_path: Path, broken: Callable[[bytes], bytes], every: int = 3) -> Path:
    lines = [broken(line) if n % every == 0 else line for n, line in enumerate(LINES)]
    path = tmp_path / "audit.log"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _retimed(line: bytes) -> bytes:
    entry = json.loads(line)
    entry["time"] = "Tuesday at noon"
    return json.dumps(entry).encode()


BROKEN_LINES: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "syslog-prefixed lines": (lambda line: b"Nov 25 17:32:52 host bao[812]: " + line,
                              "line(s) not an audit entry"),
    "invalid UTF-8": (lambda line: line.replace(b'"type"', b'"\xff\xfetype"'),
                      "line(s) not an audit entry"),
    "unparsable times": (_retimed, "whose time does not parse"),
}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(BROKEN_LINES))
def test_lines_that_cannot_be_read_are_a_counted_gap_and_nobody_is_never_used(
    tmp_path: Path, kind: str
) -> None:
    broken, reason = BROKEN_LINES[kind]
    path = _some_lines_broken(tmp_path, broken)
    log = auditlog.open(path)
    count = len(range(0, len(LINES), 3))
    (gap,) = log.coverage("requests_frame").gaps
    assert gap.path == str(path) and gap.reason.startswith(f"{count} ") and reason in gap.reason
    usage = _unused(log)
    assert usage.loc["unused", "state"] == auditlog.NOT_SEEN
    assert NEVER not in set(usage["state"]) and not usage.attrs["coverage"]["complete"]
    assert not usage.attrs["log"]["complete"]
    with pytest.raises(PartialCoverage, match=f"{count} "):
        require_complete(usage)


@pytest.mark.parametrize("suffix", [".zst", ".gz"])
def test_a_compressed_file_cut_in_half_is_a_gap_naming_it(tmp_path: Path, suffix: str) -> None:
    packed = (
        zstandard.ZstdCompressor().compress(DATA * 20)
        if suffix == ".zst"
        else gzip.compress(DATA * 20)
    )
    (tmp_path / "audit-1.log").write_bytes(DATA)
    cut = tmp_path / f"audit-2.log{suffix}"
    cut.write_bytes(packed[: len(packed) // 2])
    log = auditlog.open(tmp_path / "audit-*")
    assert log.span.truncated == (str(cut),) and log.span.lines == len(LINES)
    (gap,) = log.coverage("last_use_frame").gaps
    assert gap.path == str(cut) and "cut short" in gap.reason
    usage = _unused(log)
    assert (
        usage.loc["unused", "state"] == auditlog.NOT_SEEN and usage.loc["app1", "state"] == "used"
    )
    # Cut by its last byte alone, it is a gap too.
    cut.write_bytes(packed[:-1])
    assert auditlog.open(tmp_path / "audit-*").span.truncated == (str(cut),)
    # Whole, the same files read complete (two frames in one .zst included).
    whole = zstandard.ZstdCompressor().compress(DATA) * 2 if suffix == ".zst" else packed
    cut.write_bytes(whole)
    assert auditlog.open(tmp_path / "audit-*").span.complete


@pytest.mark.parametrize(
    ("what", "packed"),
    [
        ("padded with zeros", gzip.compress(DATA) + bytes(10)),
        ("followed by text", gzip.compress(DATA) + b"garbage"),
        ("not gzip at all", DATA),
    ],
)
def test_a_gz_file_duckdb_cannot_read_is_a_gap_naming_it_not_a_duckdb_error(
    tmp_path: Path, what: str, packed: bytes
) -> None:
    # Python's gzip reads a member padded with zeros whole; DuckDB stops the whole query
    # at it ("Input is not a GZIP stream"): that escaped as duckdb.IOException.
    (tmp_path / "audit-1.log").write_bytes(DATA)
    odd = tmp_path / "audit-2.log.gz"
    odd.write_bytes(packed)
    log = auditlog.open(tmp_path / "audit-*")
    assert log.span.truncated == (str(odd),) and log.span.lines == len(LINES), what
    (gap,) = log.coverage("last_use_frame").gaps
    assert gap.path == str(odd) and "not read" in gap.reason
    assert _unused(log).loc["unused", "state"] == auditlog.NOT_SEEN


def test_a_zst_log_with_skippable_frames_is_whole_and_one_cut_inside_a_frame_is_not(
    tmp_path: Path,
) -> None:
    # A skippable frame (magic 0x184D2A5?, then its length) sits between data frames, as
    # some writers leave them; the zstd library's frame walk steps over it.
    skippable = (0x184D2A50).to_bytes(4, "little") + (5).to_bytes(4, "little") + b"note!"
    frames = [zstandard.ZstdCompressor(write_checksum=True).compress(DATA)] * 2
    whole = frames[0] + skippable + frames[1]
    path = tmp_path / "audit.log.zst"
    path.write_bytes(whole)
    assert auditlog.open(path).span.complete
    for cut in (len(whole) - 2, len(frames[0]) + 6, len(frames[0]) - 3):
        path.write_bytes(whole[:cut])
        log = auditlog.AuditLog([path])
        assert log.truncated == (path,), cut


def test_every_frame_of_the_log_carries_its_record_and_its_period(tmp_path: Path) -> None:
    path = _some_lines_broken(tmp_path, _retimed, every=5)
    log = auditlog.open(path)
    frames = {
        name: getattr(log, name)()
        for name in ("usage_frame", "entries_frame", "requests_frame", "responses_frame",
                     "denied_frame", "principals_frame", "last_use_frame", "addresses_frame")
    }  # fmt: skip
    for name, frame in frames.items():
        record = frame.attrs["coverage"]
        assert record["view"] == f"auditlog.{name}" and not record["complete"], name
        assert record["asked"] == [str(path)]
        assert frame.attrs["log"]["unparsable_times"] == len(range(0, len(LINES), 5)), name
        assert frame.attrs["log"]["first_time"] is not None, name
    # A limit the frame reached is a gap too: what lies past it was not read.
    limited = auditlog.open(OPENBAO_LOG).requests_frame(limit=3)
    assert [g["reason"] for g in limited.attrs["coverage"]["gaps"]] == ["stopped at limit=3"]
    assert auditlog.open(OPENBAO_LOG).requests_frame(limit=10_000).attrs["coverage"]["complete"]


# -- only regular files are read ---------------------------------------------------------
def _refused_quickly(target: Path | str) -> str:
    """The one line ``auditlog.open(target)`` refuses with, within 10 s (it never reads)."""
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            auditlog.open(target)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    started = time.monotonic()
    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(10)
    assert outcome, f"auditlog.open({target}) hung"
    assert time.monotonic() - started < 10
    (error,) = outcome
    assert isinstance(error, InputError), error
    assert "\n" not in str(error)
    return str(error)


def test_a_glob_matching_dev_zero_names_it_and_stops(tmp_path: Path) -> None:
    (tmp_path / "audit-1.log").write_bytes(DATA)
    os.symlink("/dev/zero", tmp_path / "audit-2.log")
    line = _refused_quickly(tmp_path / "audit-*.log")
    assert "audit-2.log is a device, not an audit log file" in line
    assert "/dev/zero is a device" in _refused_quickly("/dev/zer[o]")


def test_a_glob_matching_a_fifo_names_it_and_does_not_hang(tmp_path: Path) -> None:
    (tmp_path / "audit-1.log").write_bytes(DATA)
    os.mkfifo(tmp_path / "audit-2.log")
    assert "audit-2.log is a FIFO" in _refused_quickly(tmp_path / "audit-*.log")
    assert "audit-2.log is a FIFO" in _refused_quickly(tmp_path / "audit-2.log")
    with pytest.raises(InputError, match="audit-2.log is a FIFO"):
        auditlog.AuditLog([tmp_path / "audit-2.log"])  # the class itself refuses it too


def test_a_folder_given_or_matched_is_named(tmp_path: Path) -> None:
    (tmp_path / "audit-1.log").write_bytes(DATA)
    (tmp_path / "audit-old.log").mkdir()
    assert "audit-old.log is a folder" in _refused_quickly(tmp_path / "audit-*.log")
