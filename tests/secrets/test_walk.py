"""The one lease-tree walker: waves, the GET ?list=true fallback, depth limit, cycles,
and what it could not read recorded (scripted servers bounded in time)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests._sockets import Threaded, answer
from toolkit import DecodeError, PartialCoverage
from toolkit._coverage import require_complete
from toolkit.secrets import SecretsClient
from toolkit.secrets.walk import Walk, stream_key_batches, stream_keys, walk_tree


def _path(head: bytes) -> tuple[str, str]:
    method, target = head.split(b"\r\n")[0].decode().split(" ")[:2]
    return method, target


def _listing(keys: list[str]) -> bytes:
    return answer(200, json.dumps({"request_id": "r", "data": {"keys": keys}}).encode())


@pytest.fixture
def server_of() -> Iterator[list[Threaded]]:
    made: list[Threaded] = []
    yield made
    for server in made:
        server.stop()


def _client(server: Threaded) -> SecretsClient:
    return SecretsClient(server.address, "t", timeout=5, fan_out_timeout=10)


def test_a_server_listing_a_under_every_a_ends_the_walk_and_records_the_cycle(
    server_of: list[Threaded],
) -> None:
    def answer_of(head: bytes, n: int) -> tuple[bytes, bool]:
        return _listing(["a/", "lease-1"]), False

    server = Threaded(answer_of)
    server_of.append(server)
    started = time.monotonic()
    with _client(server) as bao:
        counts = bao.leases.lease_counts(mounts=[])
    assert time.monotonic() - started < 5
    coverage = counts.attrs["coverage"]
    assert not coverage["complete"]
    assert [u["path"] for u in coverage["gaps"]] == ["a/a/"]
    assert "cycle" in coverage["gaps"][0]["reason"]
    assert int(counts["count"].sum()) == 2  # the top folder's lease and a/'s
    with pytest.raises(PartialCoverage, match="a/a/"):
        require_complete(counts)  # the house's coverage record, not a private shape


def test_a_walk_deeper_than_its_limit_stops_there_and_says_so(server_of: list[Threaded]) -> None:
    def answer_of(head: bytes, n: int) -> tuple[bytes, bool]:
        depth = _path(head)[1].count("/") - 4  # /v1/sys/leases/lookup/...
        return _listing([f"d{depth}/"]), False

    server = Threaded(answer_of)
    server_of.append(server)
    with _client(server) as bao:
        counts = bao.leases.lease_counts(mounts=[], max_depth=5)
    unread = counts.attrs["coverage"]["gaps"]
    assert len(unread) == 1 and "depth limit of 5" in unread[0]["reason"]
    assert len(server.heads) == 5


def test_list_refused_is_asked_again_as_get_and_a_forbidden_folder_is_recorded(
    server_of: list[Threaded],
) -> None:
    def answer_of(head: bytes, n: int) -> tuple[bytes, bool]:
        method, target = _path(head)
        if method == "LIST":
            return answer(405, b'{"errors":["unsupported"]}'), False
        if target.startswith("/v1/sys/leases/lookup/?"):
            return _listing(["db/", "secret/", "../"]), False
        if target.startswith("/v1/sys/leases/lookup/db/?"):
            return _listing(["l1", "l2"]), False
        return answer(403, b'{"errors":["permission denied"]}'), False

    server = Threaded(answer_of)
    server_of.append(server)
    with _client(server) as bao:
        walk = Walk()
        ids = bao.leases.list_lease_ids("", walk=walk)
    assert ids == ["db/l1", "db/l2"]
    unread = {u.path: u for u in walk.unread}
    assert unread["secret/"].status == 403
    assert unread["../"].status is None and "one path segment" in unread["../"].reason
    # No request ever left the lookup tree.
    assert all(_path(h)[1].startswith("/v1/sys/leases/lookup/") for h in server.heads)


def test_keys_stream_from_either_listing_shape() -> None:
    assert list(stream_keys(b'{"data": {"keys": ["a", "b/"]}}')) == ["a", "b/"]
    assert list(stream_keys(b'{"keys": ["p"]}')) == ["p"]
    assert list(stream_keys(b'{ "warnings": null, "keys" : ["q"] }')) == ["q"]
    with pytest.raises(DecodeError):
        list(stream_keys(b'{"data": {"keys": ["a", '))


def test_keys_come_in_batches_of_at_most_the_size_asked_each_key_a_string() -> None:
    body = json.dumps({"data": {"keys": [f"k{i}" for i in range(7)] + [5, "f/"]}}).encode()
    batches = list(stream_key_batches(body, 4))
    assert [len(b) for b in batches] == [4, 4, 1]
    assert [k for b in batches for k in b] == [f"k{i}" for i in range(7)] + ["5", "f/"]


def _lookup(folder: str) -> str:
    return f"/sys/leases/lookup/{folder}"


def test_a_walk_hands_leaves_in_chunks_and_walks_the_folders_met_among_them(
    server_of: list[Threaded],
) -> None:
    trees = {
        "/v1/sys/leases/lookup/": ["a1", "a2", "sub/", "a3", "a4", "a5"],
        "/v1/sys/leases/lookup/sub/": ["b1"],
    }

    def answer_of(head: bytes, n: int) -> tuple[bytes, bool]:
        return _listing(trees[_path(head)[1]]), False

    server = Threaded(answer_of)
    server_of.append(server)
    walk = Walk()
    with _client(server) as bao:
        got = list(walk_tree(bao.leases._http, [""], path_of=_lookup, walk=walk, chunk=3))
    # A chunk of three keys holding a folder hands two leaves; the folder is walked next.
    assert got == [("", ["a1", "a2"]), ("", ["a3", "a4", "a5"]), ("sub/", ["b1"])]
    assert (walk.folders, walk.leaves, walk.complete) == (2, 6, True)


def test_a_mistyped_mount_is_named_by_the_lease_ids_and_the_scan(demo_sandbox) -> None:
    from toolkit import MountNotFound
    from toolkit.secrets import SecretsClient

    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        with pytest.raises(MountNotFound, match="databse"):
            client.leases.list_lease_ids("databse/creds/")
        with pytest.raises(MountNotFound, match="nope"):
            client.leases.scan(mounts=["nope/"])


def test_a_404_with_words_below_the_start_is_recorded_not_read_as_empty(
    server_of: list[Threaded],
) -> None:
    def answer_of(head: bytes, n: int) -> tuple[bytes, bool]:
        if _path(head)[1].rstrip("/").endswith("lookup"):
            return _listing(["odd/", "lease-1"]), False
        return answer(404, b'{"errors":["1 error occurred:\\n\\t* unsupported path\\n\\n"]}'), False

    server = Threaded(answer_of)
    server_of.append(server)
    with _client(server) as bao:
        counts = bao.leases.lease_counts(mounts=[])
    gaps = counts.attrs["coverage"]["gaps"]
    assert [g["path"] for g in gaps] == ["odd/"] and "unsupported path" in gaps[0]["reason"]


def test_a_server_listing_the_same_folders_under_every_folder_is_walked_to_a_limit(
    server_of: list[Threaded],
) -> None:
    """Twelve folder keys under every folder make a tree of every order of them (a
    billion folders, the cycle check passing each): the walk lists at most its limit
    and records the rest as one gap, within a bounded time and memory."""
    keys = [f"{chr(ord('a') + i)}/" for i in range(12)] + ["lease-1"]

    def answer_of(head: bytes, n: int) -> tuple[bytes, bool]:
        return _listing(keys), False

    server = Threaded(answer_of)
    server_of.append(server)
    started = time.monotonic()
    with _client(server) as bao:
        walk = Walk()
        folders = [
            f
            for f, _ in walk_tree(
                bao.http,
                [""],
                path_of=lambda f: f"/sys/leases/lookup/{f}",
                walk=walk,
                max_folders=200,
            )
        ]
    assert time.monotonic() - started < 10
    assert walk.folders == 200 and len(set(folders)) == 200
    limit = [u for u in walk.unread if "at most 200 folders" in u.reason]
    assert len(limit) == 1 and "more folder(s)" in limit[0].reason
    assert not walk.complete


@pytest.mark.parametrize(
    "body",
    [b"[" * 200_000, b'{"data":{"keys":' + b'[{"a":' * 50_000, b'{"data":{"keys":[' + b"[" * 100],
    ids=["open-brackets", "objects-in-the-keys", "just-past-the-limit"],
)
def test_an_answer_nested_past_any_list_of_keys_is_refused_in_bounded_memory(body: bytes) -> None:
    """The streaming parser keeps the path of every open level as text: 200,000 open
    brackets (a 200 kB answer) took all the memory of the machine."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(DecodeError, match="nests deeper than 64 levels"):
            list(stream_key_batches(body))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024


def test_brackets_inside_keys_are_not_nesting() -> None:
    keys = ["[" * 100, "{" * 100 + '"', "a\\" + "[" * 70]
    body = json.dumps({"data": {"keys": keys}}).encode()
    assert [k for batch in stream_key_batches(body) for k in batch] == keys
