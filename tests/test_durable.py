"""The durable-state module: one writer, whose it is, whole or refused (issue 34)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import resource
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import tracemalloc
from datetime import date
from pathlib import Path

import pytest

from toolkit._durable import (
    FORMAT,
    Damaged,
    Journal,
    Lock,
    Locked,
    NotOurs,
    RecordFile,
    Stamp,
    StateError,
    UnknownFormat,
    load_record,
    platform_server,
    save_record,
    secrets_server,
)

SERVER_A = secrets_server({"cluster_id": "aaaa"})
SERVER_B = secrets_server({"cluster_id": "bbbb"})
ME = Stamp("revocation journal", SERVER_A, "", {"ids": 3})


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_a_journal_keeps_its_entries_across_opens(tmp_path):
    path = tmp_path / "j"
    with Journal.open(path, ME) as journal:
        journal.append({"lease": "a", "step": "intent"})
        journal.append({"lease": "a", "step": "sent", "status": 204})
    with Journal.open(path, ME) as journal:
        assert journal.entries == [
            {"lease": "a", "step": "intent"},
            {"lease": "a", "step": "sent", "status": 204},
        ]
        assert journal.torn is None
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_second_open_of_a_held_journal_is_refused_naming_the_holder(tmp_path):
    path = tmp_path / "j"
    with Journal.open(path, ME), pytest.raises(Locked) as caught:
        Journal.open(path, ME)
    message = str(caught.value)
    assert f"process {os.getpid()} on host {socket.gethostname()}" in message
    assert "\n" not in message
    # Released on close: the next run may open it.
    Journal.open(path, ME).close()


def test_a_journal_of_another_server_is_refused_naming_both(tmp_path):
    path = tmp_path / "j"
    Journal.open(path, ME).close()
    other = Stamp("revocation journal", SERVER_B, "", {"ids": 3})
    with pytest.raises(NotOurs) as caught:
        Journal.open(path, other)
    assert "cluster aaaa" in str(caught.value) and "cluster bbbb" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_journal_of_another_namespace_is_refused(tmp_path):
    path = tmp_path / "j"
    Journal.open(path, ME).close()
    with pytest.raises(NotOurs, match="namespace admin/"):
        Journal.open(path, Stamp("revocation journal", SERVER_A, "admin/", {"ids": 3}))


def test_an_edited_journal_line_is_named(tmp_path):
    path = tmp_path / "j"
    with Journal.open(path, ME) as journal:
        journal.append({"lease": "a", "step": "intent"})
        journal.append({"lease": "a", "step": "sent"})
    text = path.read_text().replace(
        '"lease": "a", "step": "intent"', '"lease": "b", "step": "intent"'
    )
    path.write_text(text)
    with pytest.raises(Damaged, match="line 2 was changed"):
        Journal.open(path, ME)


def test_a_removed_journal_line_is_found_by_the_chained_checksum(tmp_path):
    path = tmp_path / "j"
    with Journal.open(path, ME) as journal:
        for k in range(3):
            journal.append({"n": k})
    lines = _lines(path)
    path.write_text("\n".join([lines[0], lines[1], lines[3]]) + "\n")
    with pytest.raises(Damaged, match="line 3"):
        Journal.open(path, ME)


def test_a_torn_last_line_is_cut_off_and_said(tmp_path):
    path = tmp_path / "j"
    with Journal.open(path, ME) as journal:
        journal.append({"n": 1})
        journal.append({"n": 2})
    whole = path.read_bytes()
    path.write_bytes(whole[:-7])  # the last line cut short, as a full disk leaves it
    with Journal.open(path, ME) as journal:
        assert journal.entries == [{"n": 1}]
        assert journal.torn is not None and "line 3 was torn" in journal.torn
        journal.append({"n": 3})
    with Journal.open(path, ME) as journal:
        assert journal.entries == [{"n": 1}, {"n": 3}]
        assert journal.torn is None


def test_a_file_that_is_not_a_journal_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "ids.txt"
    path.write_text("database/creds/app/abc\ndatabase/creds/app/def\n")
    with pytest.raises(Damaged, match="not a toolkit journal"):
        Journal.open(path, ME)
    assert path.read_text() == "database/creds/app/abc\ndatabase/creds/app/def\n"


def test_a_journal_of_an_unknown_format_is_refused(tmp_path):
    path = tmp_path / "j"
    future = Stamp("revocation journal", SERVER_A, "", {"ids": 3}, format=FORMAT + 1)
    Journal.open(path, future).close()  # as a later toolkit would write it
    with pytest.raises(UnknownFormat, match=f"format {FORMAT + 1}"):
        Journal.open(path, ME)


def test_a_record_is_saved_whole_and_read_back(tmp_path):
    path = tmp_path / "r.json"
    assert load_record(path, ME) is None
    save_record(path, ME, {"done": ["a", "b"], "rows": 2})
    assert load_record(path, ME) == {"done": ["a", "b"], "rows": 2}
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".tmp"]


def test_an_edited_record_is_named(tmp_path):
    path = tmp_path / "r.json"
    save_record(path, ME, {"rows": 2})
    path.write_text(path.read_text().replace('\\"rows\\": 2', '\\"rows\\": 5'))
    with pytest.raises(Damaged, match="checksum fails"):
        load_record(path, ME)


def test_a_torn_record_is_named(tmp_path):
    path = tmp_path / "r.json"
    save_record(path, ME, {"rows": 2})
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(Damaged, match="not whole"):
        load_record(path, ME)


def test_a_record_of_another_question_is_refused(tmp_path):
    path = tmp_path / "r.json"
    save_record(path, ME, {"rows": 2})
    with pytest.raises(NotOurs, match="asked"):
        load_record(path, Stamp("revocation journal", SERVER_A, "", {"ids": 4}))


def test_a_record_of_an_unknown_format_is_refused(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps({"format": 99, "content": "{}", "checksum": "x"}))
    with pytest.raises(UnknownFormat, match="format 99") as caught:
        load_record(path, ME)
    assert str(caught.value).startswith(f"{path} is in state format 99")


def test_a_held_record_refuses_a_second_holder(tmp_path):
    path = tmp_path / "r.json"
    with RecordFile.open(path, ME) as record:
        assert record.body is None
        record.save({"rows": 1})
        with pytest.raises(Locked):
            RecordFile.open(path, ME)
    with RecordFile.open(path, ME) as record:
        assert record.body == {"rows": 1}


def test_a_folder_where_the_file_belongs_is_one_line(tmp_path):
    with pytest.raises(StateError, match="is a folder"):
        Journal.open(tmp_path, ME)


def test_a_server_without_a_cluster_id_cannot_own_a_file():
    with pytest.raises(StateError, match="cluster_id"):
        secrets_server({"initialized": False})


def test_the_platform_identity_is_its_address_and_organization():
    assert platform_server("https://p.example/", "acme") == (
        "platform https://p.example organization acme"
    )


# -- with real processes ------------------------------------------------------------------------
_HOLD = textwrap.dedent(
    """
    import sys, time
    from toolkit._durable import Journal, Stamp, secrets_server
    j = Journal.open(sys.argv[1], Stamp("revocation journal", secrets_server({"cluster_id": "aaaa"}), "", {"ids": 3}))
    print("held", flush=True)
    time.sleep(60)
    """
)


@pytest.mark.slow
def test_a_journal_held_by_another_process_names_it_and_is_freed_by_kill_9(tmp_path):
    path = tmp_path / "j"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(Locked, match=f"process {holder.pid} on host"):
            Journal.open(path, ME)
    finally:
        holder.kill()
        holder.wait(10)
    Journal.open(path, ME).close()


_FILL = textwrap.dedent(
    """
    import resource, sys
    from toolkit._durable import Journal, Stamp, StateError, secrets_server
    j = Journal.open(sys.argv[1], Stamp("revocation journal", secrets_server({"cluster_id": "aaaa"}), "", {"ids": 3}))
    size = __import__("os").path.getsize(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 300, size + 300))
    n = 0
    try:
        while True:
            j.append({"n": n, "pad": "x" * 40})
            n += 1
    except StateError as exc:
        print(n, exc, flush=True)
    """
)


@pytest.mark.slow
def test_a_full_disk_leaves_every_acknowledged_entry_and_cuts_the_torn_one(tmp_path):
    path = tmp_path / "j"
    done = subprocess.run(
        [sys.executable, "-c", _FILL, str(path)], capture_output=True, text=True, timeout=60
    )
    acknowledged = int(done.stdout.split()[0])
    assert "could not be written" in done.stdout
    assert acknowledged >= 1
    with Journal.open(path, ME) as journal:
        assert [e["n"] for e in journal.entries] == list(range(acknowledged))
        assert journal.torn is not None


def test_entries_appended_together_are_read_back_in_order(tmp_path):
    path = tmp_path / "j"
    with Journal.open(path, ME) as journal:
        journal.append_many([{"n": 1}, {"n": 2}, {"n": 3}])
        journal.append_many([])
    with Journal.open(path, ME) as journal:
        assert [e["n"] for e in journal.entries] == [1, 2, 3]


def test_a_bare_lock_is_exclusive_and_freed_on_release(tmp_path):
    first = Lock(tmp_path / "state.db")
    with first, pytest.raises(Locked, match="state.db is in use by process"):
        Lock(tmp_path / "state.db").acquire()
    with Lock(tmp_path / "state.db"):
        pass


def test_a_stamp_reads_as_what_whose_and_what_was_asked():
    assert (
        str(ME)
        == 'revocation journal of secrets server cluster aaaa, namespace (root), asked {"ids": 3}'
    )
    bare = Stamp("lease scan", SERVER_B, "team-a/")
    assert str(bare) == "lease scan of secrets server cluster bbbb, namespace team-a/, asked {}"


def test_a_record_is_saved_into_folders_that_do_not_exist_yet(tmp_path):
    path = tmp_path / "new" / "folder" / "r.json"
    save_record(path, ME, {"rows": 3})
    assert load_record(path, ME) == {"rows": 3}


def test_a_lock_says_whether_it_is_held(tmp_path):
    lock = Lock(tmp_path / "j")
    assert repr(lock) == f"<Lock {tmp_path / 'j'} free>"
    with lock:
        assert repr(lock) == f"<Lock {tmp_path / 'j'} held>"
    assert repr(lock) == f"<Lock {tmp_path / 'j'} free>"


def test_a_holder_id_that_is_not_utf_8_is_named_with_its_bad_bytes_replaced(tmp_path):
    path = tmp_path / "j"
    with Lock(path) as held:
        held.lock_path.write_bytes(b"process 7 on host \xff\xfe\n")
        with pytest.raises(Locked, match="in use by process 7 on host \ufffd\ufffd;"):
            Lock(path).acquire()


def test_a_files_digest_is_the_sha256_of_all_its_bytes_past_the_first_megabyte(tmp_path):
    from toolkit._durable import file_digest

    data = os.urandom((1 << 20) + 7)
    path = tmp_path / "part"
    path.write_bytes(data)
    assert file_digest(path) == hashlib.sha256(data).hexdigest()


def test_a_record_of_a_namespace_is_read_back_by_the_same_identity(tmp_path):
    path = tmp_path / "r.json"
    mine = Stamp("lease scan", SERVER_B, "team-a/", {"starts": ["db/"]})
    save_record(path, mine, {"rows": 4})
    assert load_record(path, mine) == {"rows": 4}
    with pytest.raises(NotOurs, match="namespace team-a/"):
        load_record(path, Stamp("lease scan", SERVER_B, "", {"starts": ["db/"]}))


def test_a_record_whose_identity_has_no_kind_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "r.json"
    content = json.dumps({"identity": {"server": "x"}, "body": {}}, sort_keys=True)
    save_record(path, ME, {})
    record = json.loads(path.read_text())
    # Whole and checksummed as the module writes it (sha256 of the text and a NUL), no kind.
    checksum = hashlib.sha256(content.encode() + b"\0").hexdigest()[:32]
    path.write_text(json.dumps({**record, "content": content, "checksum": checksum}))
    with pytest.raises(Damaged) as caught:
        load_record(path, ME)
    assert str(caught.value).startswith(f"{path} has no identity: it is not a toolkit state file")


# -- the rules each error path states (issue 37: the durable-state module's mutants) -------------
AWAY = "move it aside (or remove it) to start again"


def _check(*texts: str) -> str:
    """The module's checksum: sha256 of each text followed by a NUL, cut to 32 hex digits."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()[:32]


def _forge_record(path: Path, inner: object) -> None:
    """A record file whole and checksummed as the module writes one, holding ``inner``."""
    content = json.dumps(inner, sort_keys=True)
    path.write_text(json.dumps({"format": FORMAT, "content": content, "checksum": _check(content)}))


def _forge_journal(path: Path, payloads: list[str]) -> None:
    """A journal whose lines carry ``payloads`` each with its chained checksum."""
    last, lines = "", []
    for payload in payloads:
        last = _check(last, payload)
        lines.append(f"{payload} {last}\n")
    path.write_text("".join(lines))


def test_a_journal_of_an_unknown_format_names_the_file_and_what_to_do(tmp_path):
    path = tmp_path / "j"
    Journal.open(path, Stamp("revocation journal", SERVER_A, format=FORMAT + 1)).close()
    with pytest.raises(UnknownFormat) as caught:
        Journal.open(path, ME)
    assert str(caught.value) == (
        f"{path} is in state format {FORMAT + 1}, which this toolkit (format {FORMAT}) does not "
        "read; use the toolkit version that wrote it, or move the file aside"
    )


def test_an_identity_without_server_or_namespace_reads_them_as_empty(tmp_path):
    path = tmp_path / "r.json"
    _forge_record(path, {"identity": {"kind": "lease scan", "format": FORMAT}, "body": {"n": 1}})
    assert load_record(path, Stamp("lease scan", "")) == {"n": 1}


def test_a_refused_identity_names_the_file_both_identities_and_what_to_do(tmp_path):
    path = tmp_path / "r.json"
    save_record(path, ME, {})
    other = Stamp("revocation journal", SERVER_B)
    with pytest.raises(NotOurs) as caught:
        load_record(path, other)
    assert str(caught.value) == (
        f"{path} holds the {ME}; this run is the {other}. "
        "Pass another file, or move that one aside to start again"
    )


def test_a_journal_of_another_server_names_its_file_first(tmp_path):
    path = tmp_path / "j"
    Journal.open(path, ME).close()
    with pytest.raises(NotOurs) as caught:
        Journal.open(path, Stamp("revocation journal", SERVER_B))
    assert str(caught.value).startswith(f"{path} holds the revocation journal of")


def test_a_secrets_server_is_known_by_its_cluster_id():
    assert secrets_server({"cluster_id": "c-17", "sealed": False}) == "secrets server cluster c-17"


def test_a_server_without_a_cluster_id_is_told_to_be_unsealed_in_one_line():
    with pytest.raises(StateError) as caught:
        secrets_server({"cluster_id": ""})
    assert str(caught.value) == (
        "the secrets server's sys/health answer has no cluster_id (the server is "
        "uninitialised or sealed), so a state file cannot be tied to it; unseal it first"
    )


def test_only_trailing_slashes_are_dropped_from_a_platform_address():
    assert platform_server("https://platform-X/", "acme") == (
        "platform https://platform-X organization acme"
    )


def test_a_question_holding_a_date_is_stamped_with_its_text(tmp_path):
    stamp = Stamp("lease scan", SERVER_A, "", {"since": date(2026, 11, 29)})
    assert stamp.as_dict()["asked"] == {"since": "2026-11-29"}
    save_record(tmp_path / "r.json", stamp, {})
    assert load_record(tmp_path / "r.json", stamp) == {}


def test_a_lock_is_a_file_beside_its_state_readable_by_its_owner_naming_the_holder(tmp_path):
    folder = tmp_path / "new" / "deeper"
    lock = Lock(folder / "state.db")
    with lock:
        beside = folder / "state.db.lock"
        assert oct(beside.stat().st_mode & 0o777) == "0o600"
        assert beside.read_text() == f"process {os.getpid()} on host {socket.gethostname()}\n"
    assert beside.read_bytes() == b""  # released: no holder named


def test_a_held_lock_says_whose_it_is_and_what_to_do(tmp_path):
    path = tmp_path / "state.db"
    with Lock(path), pytest.raises(Locked) as caught:
        Lock(path).acquire()
    assert str(caught.value) == (
        f"{path} is in use by process {os.getpid()} on host {socket.gethostname()}; "
        "wait for that run to end (or stop it), or pass another file"
    )


def test_a_holder_that_has_not_written_its_id_is_another_process(tmp_path):
    path = tmp_path / "state.db"
    with Lock(path) as held:
        held.lock_path.write_bytes(b"")
        with pytest.raises(
            Locked, match=r"in use by another process \(it has not yet written its id\);"
        ):
            Lock(path).acquire()


def test_a_holders_id_is_read_to_200_bytes_at_most(tmp_path):
    path = tmp_path / "state.db"
    text = "process 7 on host " + "h" * 300
    with Lock(path) as held:
        held.lock_path.write_text(text)
        with pytest.raises(Locked) as caught:
            Lock(path).acquire()
    assert f"in use by {text[:200]}; wait" in str(caught.value)


def test_a_record_that_cannot_be_put_in_place_is_one_line_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "r.json"
    path.mkdir()  # a folder where the record belongs: the rename fails
    with pytest.raises(StateError) as caught:
        save_record(path, ME, {"rows": 1})
    assert (
        str(caught.value) == f"{path} could not be written (Is a directory); it is as it was before"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_the_same_body_in_any_key_order_saves_the_same_bytes(tmp_path):
    save_record(tmp_path / "one", ME, {"b": 1, "a": {"y": 2, "x": 3}})
    save_record(tmp_path / "two", ME, {"a": {"x": 3, "y": 2}, "b": 1})
    assert (tmp_path / "one").read_bytes() == (tmp_path / "two").read_bytes()


def test_a_record_body_holding_a_date_is_saved_as_its_text(tmp_path):
    save_record(tmp_path / "r.json", ME, {"on": date(2026, 11, 29)})
    assert load_record(tmp_path / "r.json", ME) == {"on": "2026-11-29"}


def test_a_folder_where_a_record_belongs_is_one_line(tmp_path):
    with pytest.raises(StateError) as caught:
        load_record(tmp_path, ME)
    assert str(caught.value) == f"{tmp_path} is a folder, not a state file; pass a file path"


def test_a_record_whose_body_is_not_an_object_reads_as_empty(tmp_path):
    path = tmp_path / "r.json"
    _forge_record(path, {"identity": ME.as_dict(), "body": [1, 2]})
    assert load_record(path, ME) == {}


def test_a_held_record_holds_what_it_saved_and_can_be_removed_twice(tmp_path):
    path = tmp_path / "r.json"
    with RecordFile.open(path, ME) as record:
        record.save({"rows": 1})
        assert record.body == {"rows": 1}
        record.remove()
        assert record.body is None and not path.exists()
        record.remove()
        assert record.body is None


def test_a_journal_writes_its_header_and_entries_with_sorted_keys_and_dates_as_text(tmp_path):
    path = tmp_path / "j"
    with Journal.open(path, ME) as journal:
        journal.append({"b": 1, "a": 2, "on": date(2026, 11, 29)})
    header = json.dumps({"journal": ME.as_dict()}, sort_keys=True)
    assert header.startswith('{"journal": {"asked": {"ids": 3}, "format": 1, "kind": ')
    entry = '{"a": 2, "b": 1, "on": "2026-11-29"}'
    first = _check("", header)
    assert _lines(path) == [f"{header} {first}", f"{entry} {_check(first, entry)}"]


def test_a_torn_line_is_said_naming_the_file_and_the_line(tmp_path):
    path = tmp_path / "j"
    with Journal.open(path, ME) as journal:
        journal.append({"n": 1})
    path.write_bytes(path.read_bytes() + b'{"n": 2')
    with Journal.open(path, ME) as journal:
        assert journal.torn == (
            f"{path}: line 3 was torn (a run stopped or the disk filled while writing it); "
            "it was cut off, and what it began is looked up"
        )


def test_a_journal_line_that_is_not_utf_8_is_named_as_changed(tmp_path):
    path = tmp_path / "j"
    Journal.open(path, ME).close()
    path.write_bytes(path.read_bytes() + b'{"n": "\xff\xfe"} 0123\n')
    with pytest.raises(Damaged, match="line 2 was changed"):
        Journal.open(path, ME)


def test_a_first_line_with_a_wrong_checksum_is_not_a_journal(tmp_path):
    path = tmp_path / "j"
    path.write_text("hello world\n")
    with pytest.raises(Damaged) as caught:
        Journal.open(path, ME)
    assert str(caught.value) == (
        f"{path} is not a toolkit journal (or its first line was edited); pass another file"
    )


def test_a_checksummed_line_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "j"
    _forge_journal(path, [json.dumps({"journal": ME.as_dict()}, sort_keys=True), "not-json"])
    with pytest.raises(Damaged) as caught:
        Journal.open(path, ME)
    assert str(caught.value) == f"{path} line 2 is not JSON; {AWAY}"


def test_a_journal_whose_header_has_no_kind_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "j"
    _forge_journal(path, [json.dumps({"journal": {"server": SERVER_A}})])
    with pytest.raises(Damaged) as caught:
        Journal.open(path, ME)
    assert str(caught.value).startswith(f"{path} has no identity")


def test_a_journal_with_only_a_torn_header_is_refused(tmp_path):
    path = tmp_path / "j"
    path.write_bytes(b'{"journal": {"kind"')
    with pytest.raises(Damaged) as caught:
        Journal.open(path, ME)
    assert str(caught.value) == f"{path} has no whole header line; {AWAY}"


def test_a_closed_journal_refuses_entries(tmp_path):
    path = tmp_path / "j"
    journal = Journal.open(path, ME)
    journal.close()
    with pytest.raises(StateError) as caught:
        journal.append({"n": 1})
    assert str(caught.value) == f"journal {path} is closed"


def test_closing_a_journal_closes_every_file_it_opened(tmp_path):
    before = len(os.listdir("/proc/self/fd"))
    Journal.open(tmp_path / "j", ME).close()
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_journal_never_opened_can_be_closed(tmp_path):
    Journal(tmp_path / "j", ME).close()


def test_a_write_cut_short_by_a_full_disk_is_one_line_and_closes_the_journal(tmp_path):
    path = tmp_path / "j"
    journal = Journal.open(path, ME)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    ignored = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails
    # The limit falls inside the fifth entry: its write is cut short, as a full disk cuts it.
    resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 300, hard))
    try:
        with pytest.raises(StateError) as caught:
            for n in range(10):
                journal.append({"n": n, "pad": "x" * 40})
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, ignored)
    assert re.fullmatch(
        f"journal {re.escape(str(path))} could not be written \\(only \\d+ of \\d+ bytes could "
        "be written \\(is the disk full\\?\\)\\); what was not written was not done",
        str(caught.value),
    )
    with pytest.raises(StateError, match="is closed"):
        journal.append({"n": 99})
    journal.close()
    with Journal.open(path, ME) as again:
        assert [e["n"] for e in again.entries] == list(range(len(again.entries)))
        assert again.torn is not None


def test_a_files_digest_reads_it_a_megabyte_at_a_time(tmp_path):
    from toolkit._durable import file_digest

    path = tmp_path / "part"
    path.write_bytes(os.urandom(8 << 20))
    tracemalloc.start()
    try:
        file_digest(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 << 20  # a block read while the one before is still held: two at most


def test_a_record_is_written_beside_its_file_not_in_the_temporary_folder(tmp_path, monkeypatch):
    # A temporary folder that does not exist: a record written through it would fail.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-folder"))
    save_record(tmp_path / "r.json", ME, {"rows": 1})
    assert load_record(tmp_path / "r.json", ME) == {"rows": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


# The temporary files `tempfile.mkstemp` makes while a hook is listening (the interpreter's
# audit event names each; an audit hook stays for the process, so it listens only on demand).
_MADE: list[list[str]] = []


def _note_temporary(event: str, args: tuple[object, ...]) -> None:
    if event == "tempfile.mkstemp" and _MADE:
        _MADE[-1].append(str(args[0]))


sys.addaudithook(_note_temporary)


def test_a_record_is_written_first_to_a_hidden_temporary_file_named_after_it(tmp_path):
    _MADE.append([])
    try:
        save_record(tmp_path / "r.json", ME, {"rows": 1})
        made = _MADE[-1]
    finally:
        _MADE.pop()
    # What a crash mid-write leaves is a hidden file beside the record, named after it
    # (`.r.json.<random>.tmp`): found by its name, and out of a plain listing.
    assert len(made) == 1
    temporary = Path(made[0])
    assert temporary.parent == tmp_path
    assert re.fullmatch(r"\.r\.json\.[^.]+\.tmp", temporary.name)
    assert not temporary.exists()


def _append_only(fd: int, on: bool) -> None:
    """Set or clear a file's append-only attribute (``chattr +a``) through its ``fd``."""
    get, put, append = (
        0x80086601,
        0x40086602,
        0x20,
    )  # FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, FS_APPEND_FL
    flags = struct.unpack("i", fcntl.ioctl(fd, get, struct.pack("i", 0)))[0]
    fcntl.ioctl(fd, put, struct.pack("i", flags | append if on else flags & ~append))


def test_a_lock_whose_file_cannot_be_emptied_is_released_all_the_same(tmp_path):
    lock = Lock(tmp_path / "state.db")
    lock.acquire()
    fd = os.open(lock.lock_path, os.O_RDONLY)
    try:
        try:
            _append_only(fd, True)  # the holder's line can no longer be cut
        except OSError:
            lock.release()
            pytest.skip("needs root (CAP_LINUX_IMMUTABLE) and a file system with attributes")
        try:
            lock.release()
            assert repr(lock) == f"<Lock {tmp_path / 'state.db'} free>"
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody holds it any more
        finally:
            _append_only(fd, False)
    finally:
        os.close(fd)


def test_a_holder_whose_id_cannot_be_read_is_another_process(tmp_path):
    lock_file = tmp_path / "state.db.lock"
    os.mkfifo(lock_file, 0o600)  # a lock file with no bytes at an offset to read
    holder = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(Locked) as caught:
            Lock(tmp_path / "state.db").acquire()
    finally:
        os.close(holder)
    assert str(caught.value) == (
        f"{tmp_path / 'state.db'} is in use by another process (it has not yet written its "
        "id); wait for that run to end (or stop it), or pass another file"
    )


def test_a_record_that_cannot_be_put_in_place_is_one_line_and_leaves_the_old_one(tmp_path):
    folder = tmp_path / "state"
    save_record(folder / "r.json", ME, {"rows": 1})
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            _append_only(fd, True)  # files may be made in it, none renamed or removed
        except OSError:
            pytest.skip("needs root (CAP_LINUX_IMMUTABLE) and a file system with attributes")
        try:
            with pytest.raises(StateError) as caught:
                save_record(folder / "r.json", ME, {"rows": 2})
            left = sorted(p.name for p in folder.iterdir())
        finally:
            _append_only(fd, False)
    finally:
        os.close(fd)
    assert str(caught.value) == (
        f"{folder / 'r.json'} could not be written (Operation not permitted); "
        "it is as it was before"
    )
    assert load_record(folder / "r.json", ME) == {"rows": 1}
    # The temporary file could not be removed either: it is left, hidden, named after it.
    assert len(left) == 2 and re.fullmatch(r"\.r\.json\.[^.]+\.tmp", left[0])
