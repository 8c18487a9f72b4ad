"""Revocations exactly once: the plan as sent, outcomes known or said unknown (issues 33, 34)."""

from __future__ import annotations

import json
import resource
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from toolkit import InputError, OutcomeUnknown
from toolkit._durable import Journal
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.checkpoint import server_identity
from toolkit.secrets.leases.revocation import revoke_in_batches, revoke_leases

FOLDER = "database/creds/scale-0"
ANSWERED = "204; looked up live before"


@pytest.fixture
def client(empty_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as c:
        yield c


def _leases(sandbox: Sandbox, n: int, tag: str = "r") -> list[str]:
    with sandbox.secrets.lock:
        return [
            sandbox.secrets.leases.create(FOLDER, ttl=86400, suffix=f"{tag}{i:04d}").lease_id
            for i in range(n)
        ]


def _revokes(sandbox: Sandbox) -> int:
    return sum(sandbox.secrets.leases.revoke_requests.values())


def test_the_plan_shows_one_post_a_lease_as_it_will_be_sent(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = _leases(empty_sandbox, 5)
    plan = client.leases.revocation_plan(ids, rate=10, batch_size=2)
    assert list(plan.index) == ids
    assert list(plan["batch"]) == [0, 0, 1, 1, 2]
    assert set(plan["method"]) == {"POST"} and set(plan["path"]) == {"sys/leases/revoke"}
    assert plan.loc[ids[0], "body"] == f'{{"lease_id": "{ids[0]}", "sync": true}}'
    assert _revokes(empty_sandbox) == 0 and plan.attrs["apply"] is False


def test_a_lease_already_gone_is_looked_up_not_sent_and_journaled(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    ids = _leases(empty_sandbox, 3)
    gone = f"{FOLDER}/never-issued"
    done = client.leases.revocation_plan([*ids, gone], rate=1000, apply=True)
    assert done.loc[gone, "outcome"] == "already gone" and done.loc[gone, "method"] == ""
    assert done.loc[gone, "path"] == "" and done.loc[gone, "body"] == ""  # nothing sent, none shown
    assert set(done.loc[ids, "outcome"]) == {"revoked"}
    assert empty_sandbox.secrets.leases.revoke_requests[gone] == 0
    assert all(empty_sandbox.secrets.leases.revocations[i] == 1 for i in ids)
    record = done.attrs["coverage"]
    assert (record["view"], record["asked"]) == ("leases.revocation_plan", ["sys/leases/revoke"])
    assert record["complete"] and record["read"] == 4  # each lease looked up
    path = tmp_path / "journal"
    done = client.leases.revocation_plan([gone], rate=1000, apply=True, journal=path)
    plan = client.leases.revocation_plan([gone], rate=1000, journal=path)
    assert (plan.loc[gone, "outcome"], plan.loc[gone, "batch"]) == ("already gone", -1)
    assert plan.loc[gone, "detail"] == (
        "recorded by an earlier run: looked up: no such lease; nothing sent"
    )


def test_without_lookup_the_outcome_is_sent_not_confirmed_and_the_coverage_says_why(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = _leases(empty_sandbox, 2)
    token = _token_for(client)
    with SecretsClient(empty_sandbox.address, token) as revoker:
        done = revoker.leases.revocation_plan(ids, rate=1000, apply=True)
    assert set(done["outcome"]) == {"sent, not confirmed"}
    coverage = done.attrs["coverage"]
    assert not coverage["complete"]
    assert "sys/leases/lookup" in coverage["gaps"][0]["path"]
    assert "cannot be told from already gone" in coverage["gaps"][0]["reason"]


def _token_for(client: SecretsClient, path: str = "sys/leases/revoke") -> str:
    """A token that may update ``path`` only (no default policy, which grants lookups)."""
    client.policies.write("acl", "only", f'path "{path}" {{ capabilities = ["update"] }}')
    answer = client.http.json(
        "POST", "/auth/token/create", json={"policies": ["only"], "no_default_policy": True}
    )
    return str(answer["auth"]["client_token"])


def _journal_of(client: SecretsClient, path: Path) -> Journal:
    return Journal.open(
        path, server_identity(client.http, "revocation journal", {"revoke": "sys/leases/revoke"})
    )


def test_a_lost_answer_is_looked_up_before_anything_is_sent_again(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    live, done_before, fresh = _leases(empty_sandbox, 3)
    path = tmp_path / "journal"
    # An earlier run wrote both "about to send" and stopped; one of them had reached the server.
    with _journal_of(client, path) as journal:
        journal.append_many(
            [
                {"lease": live, "step": "about to send"},
                {"lease": done_before, "step": "about to send"},
            ]
        )
    client.leases.revoke(done_before)
    before = _revokes(empty_sandbox)
    result = client.leases.revocation_plan(
        [live, done_before, fresh], rate=1000, apply=True, journal=path
    )
    assert result.loc[done_before, "outcome"] == "revoked"
    assert "looked up: gone" in result.loc[done_before, "detail"]
    assert result.loc[live, "outcome"] == "revoked" and result.loc[fresh, "outcome"] == "revoked"
    assert _revokes(empty_sandbox) - before == 2  # done_before was not sent again
    assert all(empty_sandbox.secrets.leases.revocations[i] == 1 for i in (live, done_before, fresh))


def test_a_lost_answer_that_cannot_be_looked_up_stays_unknown_and_is_not_sent(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    pending, fresh = _leases(empty_sandbox, 2)
    path = tmp_path / "journal"
    with _journal_of(client, path) as journal:
        journal.append({"lease": pending, "step": "about to send"})
    token = _token_for(client)
    with SecretsClient(empty_sandbox.address, token) as revoker:
        result = revoker.leases.revocation_plan(
            [pending, fresh], rate=1000, apply=True, journal=path
        )
    row = result.loc[pending]
    assert (row["outcome"], row["batch"], row["method"]) == ("outcome unknown", 0, "")
    assert result.loc[pending, "detail"] == (
        "an earlier run may have sent its revocation and stopped before the answer; "
        "it could not be looked up, so it is not sent again"
    )
    assert result.loc[fresh, "outcome"] == "sent, not confirmed"
    assert empty_sandbox.secrets.leases.revoke_requests[pending] == 0


def test_the_plan_says_what_the_journal_records(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    first, pending, fresh = _leases(empty_sandbox, 3)
    path = tmp_path / "journal"
    client.leases.revocation_plan([first], rate=1000, apply=True, journal=path)
    with _journal_of(client, path) as journal:
        assert journal.entries == [  # each answer with its status
            {"lease": first, "step": "about to send"},
            {"lease": first, "status": 204, "outcome": "revoked", "detail": ANSWERED},
        ]
        journal.append({"lease": pending, "step": "about to send"})
    plan = client.leases.revocation_plan([first, pending, fresh], rate=1000, journal=path)
    assert plan.loc[first, "outcome"] == "revoked" and plan.loc[first, "method"] == ""
    assert plan.loc[first, "detail"] == "recorded by an earlier run: 204; looked up live before"
    assert plan.loc[pending, "outcome"] == "will send"
    assert plan.loc[pending, "detail"] == (
        "an earlier run stopped before its answer: looked up first, revoked only if still live"
    )
    assert plan.loc[fresh, "outcome"] == "will send"
    assert plan.loc[fresh, "detail"] == "looked up first; revoked if live"


def test_a_token_refused_lookups_is_not_asked_again_in_later_batches(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = _leases(empty_sandbox, 3)
    with SecretsClient(empty_sandbox.address, _token_for(client)) as revoker:
        lookups: list[str] = []
        revoker.http.response_hooks.append(
            lambda r: lookups.append(r.url) if "sys/leases/lookup" in str(r.url) else None
        )
        done = revoker.leases.revocation_plan(ids, rate=1000, batch_size=1, apply=True)
    assert len(lookups) == 1
    assert set(done["outcome"]) == {"sent, not confirmed"}
    assert [g["status"] for g in done.attrs["coverage"]["gaps"]] == [403]


def test_a_failed_lookup_stops_the_run_and_each_lease_says_why_it_was_not_sent(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    pending, fresh = _leases(empty_sandbox, 2)
    path = tmp_path / "journal"
    with _journal_of(client, path) as journal:
        journal.append({"lease": pending, "step": "about to send"})
    # Every try of every lookup loses its connection: the lookups cannot be made.
    empty_sandbox.faults.drop_after_apply("POST", "/v1/sys/leases/lookup", 50)
    try:
        done = client.leases.revocation_plan([pending, fresh], rate=1000, apply=True, journal=path)
    finally:
        empty_sandbox.faults.clear()
    assert done.loc[pending, "outcome"] == "outcome unknown"
    assert done.loc[pending, "detail"].startswith(
        "an earlier run's answer was lost, and this run stopped (a lookup failed ("
    )
    assert done.loc[pending, "detail"].endswith(") before looking it up")
    assert list(done["batch"]) == [-1, -1]
    assert done.loc[fresh, "detail"].startswith("not sent: the run stopped (a lookup failed (")
    assert set(done["method"]) == {""}
    (gap,) = done.attrs["coverage"]["gaps"]
    assert gap["reason"].startswith("the run stopped: a lookup failed (TransportError: ")
    assert _revokes(empty_sandbox) == 0


# -- a journal that cannot be written, a connection lost between revocations ------------------


@contextmanager
def _disk_full_from(client: SecretsClient, path: Path, answer: str, nth: int = 1) -> Iterator[None]:
    """From the ``nth`` answer whose URL holds ``answer`` on, the journal cannot grow."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    seen = [0]

    def fill(response: Any) -> None:
        if answer in str(response.url):
            seen[0] += 1
            if seen[0] == nth:
                resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size, hard))

    client.http.response_hooks.append(fill)
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        client.http.response_hooks.remove(fill)


def test_a_journal_that_cannot_record_a_batch_stops_the_run_before_that_batch_is_sent(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    first, second, third, fourth, fifth = _leases(empty_sandbox, 5)
    gone = f"{FOLDER}/never-issued"
    ids = [first, second, third, gone, fourth, fifth]
    path = tmp_path / "journal"
    # The first batch is recorded and sent; the disk fills when the second is looked up.
    with _disk_full_from(client, path, "sys/leases/lookup", nth=3):
        done = client.leases.revocation_plan(ids, rate=1000, batch_size=2, apply=True, journal=path)
    assert list(done["outcome"]) == ["revoked"] * 2 + ["failed", "already gone"] + ["failed"] * 2
    assert list(done["batch"]) == [0, 0, 1, 1, -1, -1]
    assert done.loc[third, "detail"].startswith(f"not sent: journal {path} could not be written (")
    assert done.loc[third, "detail"].endswith("what was not written was not done")
    assert done.loc[fourth, "detail"].startswith(f"not sent: the run stopped (journal {path} ")
    assert list(done.loc[[third, fourth, fifth], "method"]) == ["", "", ""]
    assert done.loc[gone, "detail"] == "looked up: no such lease; nothing sent"
    (gap,) = done.attrs["coverage"]["gaps"]
    assert gap["path"] == "sys/leases/revoke"
    assert gap["reason"].startswith(f"the run stopped: journal {path} could not be written")
    assert [_revokes_of(empty_sandbox, i) for i in ids] == [1, 1, 0, 0, 0, 0]
    # Once the disk has room, a rerun sends what was not sent, and nothing twice.
    again = client.leases.revocation_plan(ids, rate=1000, batch_size=2, apply=True, journal=path)
    assert list(again["outcome"]) == ["revoked"] * 3 + ["already gone"] + ["revoked"] * 2
    assert list(again["batch"]) == [-1, -1, 0, 0, 1, 1]
    assert [_revokes_of(empty_sandbox, i) for i in ids] == [1, 1, 1, 0, 1, 1]
    assert all(empty_sandbox.secrets.leases.revocations[i] == 1 for i in ids if i != gone)


def test_answers_the_journal_could_not_record_say_so_and_are_looked_up_not_sent_again(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    ids = _leases(empty_sandbox, 4)
    path = tmp_path / "journal"
    # The first batch's "about to send" is recorded; the disk fills as its answers come.
    with _disk_full_from(client, path, "sys/leases/revoke"):
        done = client.leases.revocation_plan(ids, rate=1000, batch_size=2, apply=True, journal=path)
    assert list(done["outcome"]) == ["revoked", "revoked", "failed", "failed"]
    assert list(done["method"]) == ["POST", "POST", "", ""]
    for lease in ids[:2]:
        detail = done.loc[lease, "detail"]
        assert detail.startswith(f"204; looked up live before (not journaled: journal {path} ")
        assert detail.endswith("what was not written was not done; a rerun looks it up)")
    assert done.loc[ids[2], "detail"].startswith(f"not sent: the run stopped (journal {path} ")
    (gap,) = done.attrs["coverage"]["gaps"]
    assert gap["reason"].startswith(f"the run stopped: journal {path} could not be written")
    assert [_revokes_of(empty_sandbox, i) for i in ids] == [1, 1, 0, 0]
    again = client.leases.revocation_plan(ids, rate=1000, batch_size=2, apply=True, journal=path)
    assert set(again["outcome"]) == {"revoked"}
    assert (
        list(again.loc[ids[:2], "detail"])
        == ["an earlier run's answer was lost; looked up: gone"] * 2
    )
    assert list(again.loc[ids[:2], "method"]) == ["", ""]
    assert [_revokes_of(empty_sandbox, i) for i in ids] == [1, 1, 1, 1]


def test_a_connection_lost_mid_batch_leaves_the_rest_of_the_batch_unknown_and_never_resent(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    ids = _leases(empty_sandbox, 5)
    path = tmp_path / "journal"
    with SecretsClient(empty_sandbox.address, empty_sandbox.token, max_concurrency=1) as one:
        # The second revocation is done, and its connection drops before the answer.
        armed = [False]

        def drop_the_next(response: Any) -> None:
            if "sys/leases/revoke" in str(response.url) and not armed[0]:
                armed[0] = True
                empty_sandbox.faults.drop_after_apply("POST", "/v1/sys/leases/revoke")

        one.http.response_hooks.append(drop_the_next)
        done = one.leases.revocation_plan(ids, rate=1000, batch_size=3, apply=True, journal=path)
    assert list(done["outcome"]) == ["revoked"] + ["outcome unknown"] * 2 + ["failed"] * 2
    assert list(done["batch"]) == [0, 0, 0, -1, -1]
    assert list(done["method"]) == ["POST", "POST", "POST", "", ""]
    unknown = done.loc[ids[1], "detail"]
    assert unknown.startswith("the connection failed (OutcomeUnknown: ") and "\n" not in unknown
    assert unknown.endswith("): it may have been sent; a rerun with the same journal looks it up")
    assert done.loc[ids[3], "detail"].startswith("not sent: the run stopped (")
    why = unknown.removeprefix("the connection failed (").split("): it may have been sent")[0]
    assert {g["path"]: g["reason"] for g in done.attrs["coverage"]["gaps"]} == {
        f"sys/leases/revoke {ids[1]}": "outcome unknown",
        f"sys/leases/revoke {ids[2]}": "outcome unknown",
        "sys/leases/revoke": f"the run stopped: {why}",
    }
    assert [_revokes_of(empty_sandbox, i) for i in ids] == [1, 1, 0, 0, 0]
    again = client.leases.revocation_plan(ids, rate=1000, batch_size=3, apply=True, journal=path)
    assert set(again["outcome"]) == {"revoked"}
    assert again.loc[ids[1], "detail"] == "an earlier run's answer was lost; looked up: gone"
    assert again.loc[ids[0], "batch"] == -1  # recorded: not even looked up
    assert [_revokes_of(empty_sandbox, i) for i in ids] == [1, 1, 1, 1, 1]
    assert all(empty_sandbox.secrets.leases.revocations[i] == 1 for i in ids)


def _revokes_of(sandbox: Sandbox, lease: str) -> int:
    return sandbox.secrets.leases.revoke_requests[lease]


# -- what a peer answers, word for word (a scripted server) -----------------------------------


class _Scripted(BaseHTTPRequestHandler):
    """Answers each lease as ``ANSWERS[(path, lease)]`` says (status, content type, body),
    204 when it says nothing; keeps every request's body in ``SEEN``, and when it came
    (``time.monotonic()``) in ``WHEN``."""

    ANSWERS: ClassVar[dict[tuple[str, str], tuple[int, str, bytes]]] = {}
    SEEN: ClassVar[list[tuple[str, dict[str, Any]]]] = []
    WHEN: ClassVar[list[float]] = []

    def do_POST(self) -> None:  # noqa: N802 - the standard library's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        self.SEEN.append((self.path, body))
        self.WHEN.append(time.monotonic())
        status, kind, data = self.ANSWERS.get((self.path, body.get("lease_id")), (204, "", b""))
        self.send_response(status)
        if kind:
            self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


LOOKUP, REVOKE = "/v1/sys/leases/lookup", "/v1/sys/leases/revoke"


def _json(status: int, payload: object, kind: str = "application/json") -> tuple[int, str, bytes]:
    return (
        status,
        kind,
        payload.encode() if isinstance(payload, str) else json.dumps(payload).encode(),
    )


@contextmanager
def _peer(answers: dict[tuple[str, str], tuple[int, str, bytes]]) -> Iterator[SecretsClient]:
    _Scripted.ANSWERS, _Scripted.SEEN, _Scripted.WHEN = answers, [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        address = f"http://127.0.0.1:{server.server_address[1]}"
        with SecretsClient(address, "s.scripted", timeout=5, max_concurrency=1) as peer:
            yield peer
    finally:
        server.shutdown()
        server.server_close()


def _sent(path: str) -> list[dict[str, Any]]:
    return [body for seen, body in _Scripted.SEEN if seen == path]


def test_each_lookup_answer_says_live_gone_or_a_gap_in_the_servers_own_words() -> None:
    answers = {
        (LOOKUP, "a/live"): _json(200, {"data": {"id": "a/live"}}),
        (LOOKUP, "a/gone"): _json(400, {"errors": ["invalid lease"]}),
        (LOOKUP, "a/text"): _json(404, "n" * 250, "text/plain"),
        (LOOKUP, "a/bare"): _json(409, {"warnings": ["x"]}),
        (LOOKUP, "a/empty"): _json(400, "", "text/plain"),
        (LOOKUP, "a/paused"): _json(400, {"errors": ["lease lookups are paused"]}),
        (REVOKE, "a/live"): _json(400, {"errors": ["lease is pinned", "ask\nthe owner"]}),
    }
    answers[(LOOKUP, "a/fine")] = _json(200, {})
    ids = ["a/live", "a/gone", "a/text", "a/bare", "a/empty", "a/paused", "a/fine"]
    with _peer(answers) as peer:
        done = revoke_leases(peer.http, ids, rate=1000, batch_size=10, apply=True)
    assert done.loc["a/live", "outcome"] == "failed"
    assert done.loc["a/live", "detail"] == "400: lease is pinned; ask the owner"
    assert done.loc["a/gone", "outcome"] == "already gone"
    assert done.loc["a/fine", "outcome"] == "revoked"
    assert done.loc["a/fine", "detail"] == "204; looked up live before"
    assert done.loc["a/fine", "body"] == '{"lease_id": "a/fine", "sync": true}'
    for lease in ("a/text", "a/bare", "a/empty", "a/paused"):
        assert done.loc[lease, "outcome"] == "sent, not confirmed"
        assert done.loc[lease, "detail"].startswith("204; not looked up before (without update")
    coverage = done.attrs["coverage"]
    assert coverage["read"] == 3 and not coverage["complete"]
    assert {g["path"]: (g["status"], g["reason"]) for g in coverage["gaps"]} == {
        "sys/leases/lookup a/text": (404, "n" * 200),
        "sys/leases/lookup a/bare": (409, "409"),
        "sys/leases/lookup a/empty": (400, "400"),
        "sys/leases/lookup a/paused": (400, "lease lookups are paused"),
    }
    revoked = [b["lease_id"] for b in _sent(REVOKE)]
    assert sorted(revoked) == sorted(set(ids) - {"a/gone"})  # each once, the gone one never
    assert {b["sync"] for b in _sent(REVOKE)} == {True}  # synchronous unless told otherwise


def test_bulk_revocation_reports_each_refusal_in_the_servers_words_and_goes_on() -> None:
    answers = {
        (REVOKE, "b/pinned"): _json(400, {"errors": ["lease is pinned", "ask\nthe owner"]}),
        (REVOKE, "b/text"): _json(403, "n" * 250, "text/plain"),
        (REVOKE, "b/bare"): _json(404, {"warnings": []}),
        (REVOKE, "b/odd"): _json(400, ["not", "an", "object"]),
    }
    ids = ["b/pinned", "b/text", "b/bare", "b/odd", "b/fine", "b/pinned"]
    progress: list[tuple[int, int]] = []
    add = lambda n, total: progress.append((n, total))  # noqa: E731
    with _peer(answers) as peer:
        done = revoke_in_batches(
            peer.http, ids, rate=1000, batch_size=2, dry_run=False, sync=False, on_batch=add
        )
    assert list(done.index) == ids[:5]
    assert list(done["batch"]) == [0, 0, 1, 1, 2]
    assert list(done["action"]) == ["failed"] * 4 + ["revoked"]
    assert list(done["detail"]) == [
        "400: lease is pinned; ask the owner",
        "403: " + "n" * 200,
        "404: 404",  # no words of its own: its status
        "400: 400",
        "",
    ]
    assert progress == [(2, 5), (4, 5), (5, 5)]
    assert _sent(LOOKUP) == []  # no lookups: this is the revocation without a journal
    assert _sent(REVOKE) == [{"lease_id": lease, "sync": False} for lease in ids[:5]]


def test_bulk_revocation_previews_each_lease_once_in_its_batch_and_sends_nothing(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = _leases(empty_sandbox, 3)
    plan = revoke_in_batches(client.http, [*ids, ids[0]], rate=1000, batch_size=2)
    assert list(plan.index) == ids
    assert list(plan["batch"]) == [0, 0, 1]
    assert set(plan["action"]) == {"would revoke"} and set(plan["detail"]) == {""}
    assert _revokes(empty_sandbox) == 0
    with pytest.raises(InputError, match="^an empty lease id was given$"):
        revoke_in_batches(client.http, [ids[0], ""], rate=1000, dry_run=False)
    with pytest.raises(InputError, match="^batch_size must be at least 1, not 0$"):
        revoke_in_batches(client.http, ids, rate=1000, batch_size=0, dry_run=False)
    for rate in (0, -2, None):
        with pytest.raises(InputError, match=f"^rate must be a positive .*, not {rate!r}$"):
            revoke_in_batches(client.http, ids, rate=rate, dry_run=False)  # type: ignore[arg-type]
    one = revoke_in_batches(client.http, ids, rate=0.5, batch_size=1)
    assert list(one["batch"]) == [0, 1, 2]
    assert _revokes(empty_sandbox) == 0


def test_revocations_keep_their_average_rate_and_revoke_each_lease_once(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = _leases(empty_sandbox, 5)
    started = time.monotonic()
    done = revoke_in_batches(client.http, ids, rate=8, batch_size=2, dry_run=False)
    elapsed = time.monotonic() - started
    assert 4 / 8 <= elapsed < 3  # two waits, for 2 then 4 leases at 8 a second
    assert set(done["action"]) == {"revoked"} and set(done["detail"]) == {""}
    assert [_revokes_of(empty_sandbox, i) for i in ids] == [1] * 5
    more = _leases(empty_sandbox, 5, tag="journaled")
    started = time.monotonic()
    done = client.leases.revocation_plan(more, rate=8, batch_size=2, apply=True)
    assert 4 / 8 <= time.monotonic() - started < 3  # the journaled run's rate: the same
    assert set(done["outcome"]) == {"revoked"}


def test_a_journaled_run_sends_each_batch_when_the_leases_sent_before_it_allow() -> None:
    with _peer({}) as peer:
        revoke_leases(peer.http, ["t/warm"], rate=1, apply=True)  # the connection made
        began = time.monotonic()
        revoke_leases(peer.http, ["t/0", "t/1"], rate=1, batch_size=1, apply=True)
    seen = zip(_Scripted.SEEN, _Scripted.WHEN, strict=True)
    looked = [when for (path, _), when in seen if path == LOOKUP]
    # One lease sent, at 1 a second: the second batch goes a second after the first began
    # (not two: the leases counted are those sent, none before the first). The bound
    # leaves 0.7 s for a loaded machine's scheduling.
    assert 1.0 <= looked[2] - began < 1.7


def test_ids_that_are_not_a_list_of_non_empty_strings_are_refused_naming_the_first(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    long = "database/creds/" + "x" * 80
    refused = {
        b"db/x": "ids must be a list of lease ids, not one string (\"b'db/x'\"); "
        "pass [lease_id] to revoke one",
        long: f"ids must be a list of lease ids, not one string ({long[:60]!r}); "
        "pass [lease_id] to revoke one",
        ("a/b", ""): "every lease id must be a non-empty string, not ''",
        ("a/b", 7, None): "every lease id must be a non-empty string, not 7",
    }
    for ids, says in refused.items():
        with pytest.raises(InputError) as caught:
            revoke_leases(client.http, ids, rate=1000, apply=True)  # type: ignore[arg-type]
        assert str(caught.value) == says
    assert _revokes(empty_sandbox) == 0


def test_journal_entries_naming_no_lease_are_passed_over(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    pending, settled = _leases(empty_sandbox, 2)
    path = tmp_path / "journal"
    with _journal_of(client, path) as journal:
        journal.append_many(
            [
                {"note": "no lease here", "outcome": "revoked"},
                {"lease": 7, "step": "about to send"},
                {"lease": pending, "step": "about to send"},
                {"lease": settled, "step": "about to send"},
                {"lease": settled, "outcome": "revoked", "detail": ""},
            ]
        )
    plan = client.leases.revocation_plan([pending, settled], rate=1000, journal=path)
    assert plan.loc[pending, "detail"].startswith("an earlier run stopped before its answer")
    assert plan.loc[settled, "detail"] == "recorded by an earlier run: revoked"
    assert list(plan["batch"]) == [0, -1]


def test_a_torn_last_journal_line_is_noted_and_its_lease_looked_up_before_any_send(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    earlier, fresh = _leases(empty_sandbox, 2)
    path = tmp_path / "journal"
    with _journal_of(client, path) as journal:
        journal.append({"lease": earlier, "step": "about to send"})
    client.leases.revoke(earlier)
    with path.open("a") as torn:
        torn.write('{"lease": "cut sh')
    done = client.leases.revocation_plan([earlier, fresh], rate=1000, apply=True, journal=path)
    (note,) = done.attrs["notes"]
    assert note.startswith(f"{path}: line 3 was torn")
    assert done.loc[earlier, "detail"] == "an earlier run's answer was lost; looked up: gone"
    assert [_revokes_of(empty_sandbox, i) for i in (earlier, fresh)] == [1, 1]


def test_a_refused_revocation_is_failed_in_the_servers_words_and_tried_again_next_run(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    ids = _leases(empty_sandbox, 2)
    path = tmp_path / "journal"
    with SecretsClient(empty_sandbox.address, _token_for(client, "sys/leases/lookup")) as looker:
        done = looker.leases.revocation_plan(ids, rate=1000, apply=True, journal=path)
    assert set(done["outcome"]) == {"failed"} and set(done["method"]) == {"POST"}
    assert set(done["detail"]) == {"403: permission denied"}
    plan = client.leases.revocation_plan(ids, rate=1000, journal=path)
    assert set(plan["outcome"]) == {"will send"} and list(plan["batch"]) == [0, 0]
    assert set(plan["detail"]) == {"looked up first; revoked if live"}  # its answer is known
    again = client.leases.revocation_plan(ids, rate=1000, apply=True, journal=path)
    assert set(again["outcome"]) == {"revoked"}
    assert all(empty_sandbox.secrets.leases.revocations[i] == 1 for i in ids)


def test_a_lookup_whose_connection_drops_is_asked_again_and_the_run_goes_on(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = _leases(empty_sandbox, 2)
    empty_sandbox.faults.drop_after_apply("POST", "/v1/sys/leases/lookup")  # a read: harmless
    done = client.leases.revocation_plan(ids, rate=1000, apply=True)
    assert empty_sandbox.faults.dropped == 1 and set(done["outcome"]) == {"revoked"}
    assert [_revokes_of(empty_sandbox, i) for i in ids] == [1, 1]


def test_bulk_revocation_sends_sync_by_default_in_batches_of_a_hundred() -> None:
    ids = [f"c/{i:03d}" for i in range(101)]
    with _peer({}) as peer:
        done = revoke_in_batches(peer.http, ids, rate=1000, dry_run=False)
        assert revoke_in_batches(peer.http, ids, rate=1000)["batch"].max() == 1
    assert done["batch"].value_counts().to_dict() == {0: 100, 1: 1}
    assert {b["sync"] for b in _sent(REVOKE)} == {True} and len(_sent(REVOKE)) == 101


def test_a_bulk_revocation_whose_connection_drops_is_not_sent_again(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    [lease] = _leases(empty_sandbox, 1)
    empty_sandbox.faults.drop_after_apply("POST", "/v1/sys/leases/revoke")
    with pytest.raises(OutcomeUnknown, match="it was not sent again"):
        revoke_in_batches(client.http, [lease], rate=1000, dry_run=False)
    assert _revokes_of(empty_sandbox, lease) == 1
