"""``HTTPLayer.many``: many requests described as data, at most ``max_concurrency`` in flight.

Two kinds of server: a real sandbox (order, coverage, failures part-way,
429s, leaving early), and a socket server answering as each test scripts, one
thread a connection, to produce what a sandbox does not on demand: how many
requests arrive on a connection at once, connections closed between answers
or while idle, answers that never come.
"""

from __future__ import annotations

import gc
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from tests._sockets import Answer, Threaded, certificate_files
from toolkit import ConnectError, NotFound, RetryPolicy, SecretsClient, TimeoutError, TLSError
from toolkit._http import HTTPLayer, Request
from toolkit._tls import ClientTLS
from toolkit.sandbox import Sandbox

# -- against the sandbox ---------------------------------------------------------------------


def platform_layer(sandbox: Sandbox, **options) -> HTTPLayer:
    return HTTPLayer(
        sandbox.address,
        "/api/v2",
        headers={"Authorization": f"Bearer {sandbox.token}"},
        **options,
    )


def statuses_seen(http: HTTPLayer) -> list[int]:
    seen: list[int] = []
    http.response_hooks.append(lambda r: seen.append(r.status_code))
    return seen


def org_calls(names: list[str]) -> list[Request]:
    return [Request("GET", f"/organizations/{n}") for n in names]


def test_many_keeps_call_order_and_misses_nothing(demo_sandbox: Sandbox):
    names = ["acme", "globex", "initech"] * 100
    wide = platform_layer(demo_sandbox, max_concurrency=6)
    narrow = platform_layer(demo_sandbox, max_concurrency=1)
    for http in (wide, narrow):
        got = [r.json()["data"]["id"] for r in http.many(org_calls(names))]
        http.close()
        assert got == names


def test_a_failure_part_way_raises_after_the_responses_before_it_and_stops_the_rest(
    demo_sandbox: Sandbox,
):
    http = platform_layer(demo_sandbox, max_concurrency=4, retry=RetryPolicy(attempts=1))
    seen = statuses_seen(http)
    names = ["acme"] * 5 + ["no-such-org"] + ["globex"] * 300
    yielded: list[str] = []
    with pytest.raises(NotFound) as err:
        for response in http.many(org_calls(names)):
            yielded.append(response.json()["data"]["id"])
    http.close()
    assert yielded == ["acme"] * 5
    assert "no-such-org" in str(err.value)
    # Nothing new is sent after the failure: far fewer than all 306.
    assert len(seen) < 100


def test_statuses_the_caller_expects_come_back_as_responses(demo_sandbox: Sandbox):
    http = platform_layer(demo_sandbox, max_concurrency=4)
    calls = [
        Request("GET", f"/organizations/{n}", ok_statuses=frozenset({404}))
        for n in ("acme", "nope")
    ]
    assert [r.status_code for r in http.many(calls * 10)] == [200, 404] * 10
    http.close()


def test_leaving_the_iteration_early_sends_no_more(demo_sandbox: Sandbox):
    http = platform_layer(demo_sandbox, max_concurrency=4)
    seen = statuses_seen(http)
    responses = http.many(org_calls(["acme"] * 400))
    assert next(responses).status_code == 200
    responses.close()
    count = len(seen)
    list(http.many(org_calls(["acme"])))  # the layer still works after an abandoned fan-out
    http.close()
    assert count < 100
    assert len(seen) == count + 1


@pytest.mark.slow  # it waits out the sandbox's rate-limit windows, a second each
def test_a_429_in_the_middle_is_waited_out_and_every_call_answered():
    with Sandbox(demo=True, rate_limit=30) as sandbox:
        http = platform_layer(
            sandbox, max_concurrency=8, retry=RetryPolicy(attempts=6, backoff=0.05, max_pause=5.0)
        )
        seen = statuses_seen(http)
        time.sleep(1.05)  # start on a fresh window
        started = time.monotonic()
        got = [r.json()["data"]["id"] for r in http.many(org_calls(["acme"] * 75))]
        elapsed = time.monotonic() - started
        http.close()
    assert got == ["acme"] * 75
    assert 429 in seen
    assert seen.count(200) == 75
    # 75 calls at 30 a second take at least two windows, waited out as told.
    assert elapsed >= 1.5


@pytest.mark.slow  # it waits out the sandbox's rate-limit windows, a second each
def test_a_long_fan_out_against_the_rate_limit_gets_every_answer_with_default_retries():
    """Far more calls than the limit allows a second, eight in flight at first: the
    fan-out narrows after a 429 instead of exhausting any call's retries."""
    with Sandbox(demo=True, rate_limit=30) as sandbox:
        http = platform_layer(sandbox)
        seen = statuses_seen(http)
        time.sleep(1.05)
        got = [r.json()["data"]["id"] for r in http.many(org_calls(["acme"] * 150))]
        http.close()
    assert got == ["acme"] * 150
    # After the first burst a handful a window: fewer refusals than calls, where
    # retrying every refusal at once gives more.
    assert seen.count(429) < 150


def test_bulk_views_pause_the_collector_and_leave_it_as_they_found_it(sandbox: Sandbox):
    paused: list[bool] = []
    with SecretsClient(sandbox.address, sandbox.token) as client:
        client.http.response_hooks.append(lambda r: paused.append(gc.isenabled()))
        frame = client.leases.leases_by_mount(mounts=["broker/"])
        assert gc.isenabled()
        gc.disable()
        try:
            client.leases.leases_by_mount(mounts=["broker/"])
            assert not gc.isenabled()
        finally:
            gc.enable()
    assert len(frame) > 0
    # The lookups ran with the collector off; the listing before them with it on.
    assert paused.count(False) >= len(frame)


# -- against a scripted server ----------------------------------------------------------------


@pytest.fixture
def serve() -> Iterator[Callable[..., Threaded]]:
    servers: list[Threaded] = []

    def start(answer: Answer, tls: ssl.SSLContext | None = None) -> Threaded:
        server = Threaded(answer, tls)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def echo_path(head: bytes, extra: str = "") -> bytes:
    path = head.split(b" ", 2)[1]
    body = b'{"path": "' + path + b'"}'
    return (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def paths(n: int) -> list[str]:
    return [f"/p{i}" for i in range(n)]


def answered_paths(http: HTTPLayer, calls: list[Request]) -> list[str]:
    return [r.json()["path"].removeprefix("/v1") for r in http.many(calls)]


def test_reads_go_one_at_a_time_on_each_connection_and_are_answered_in_order(serve):
    server = serve(lambda head, n: (echo_path(head), False))
    http = HTTPLayer(server.address, "/v1", max_concurrency=2)
    assert answered_paths(http, [Request("GET", p) for p in paths(200)]) == paths(200)
    http.close()
    assert server.connections <= 2
    # No pipelining: no request ever arrived before the answer to the one before it.
    assert len(server.ahead) == 200 and not any(server.ahead)


def test_writes_are_answered_in_order_one_at_a_time(serve):
    server = serve(lambda head, n: (echo_path(head), False))
    http = HTTPLayer(server.address, "/v1", max_concurrency=2)
    calls = [Request("POST", p, json={"n": i}) for i, p in enumerate(paths(60))]
    assert answered_paths(http, calls) == paths(60)
    http.close()
    assert not any(server.ahead)


def test_connections_dropped_between_answers_are_replaced(serve):
    # Every connection is dropped after its third answer, without a word.
    server = serve(lambda head, n: (echo_path(head), n == 3))
    http = HTTPLayer(server.address, "/v1", max_concurrency=2, retry=RetryPolicy(backoff=0.01))
    assert answered_paths(http, [Request("GET", p) for p in paths(40)]) == paths(40)
    http.close()
    assert server.connections > 2


def test_connection_close_moves_the_rest_to_a_new_connection(serve):
    def answer(head: bytes, n: int) -> tuple[bytes, bool]:
        if n == 2:
            return echo_path(head, "Connection: close\r\n"), True
        return echo_path(head), False

    server = serve(answer)
    http = HTTPLayer(server.address, "/v1", max_concurrency=2)
    assert answered_paths(http, [Request("GET", p) for p in paths(30)]) == paths(30)
    http.close()


def test_a_kept_connection_the_server_closed_while_idle_is_replaced_without_an_error(serve):
    server = serve(lambda head, n: (echo_path(head), False))
    http = HTTPLayer(server.address, "/v1", max_concurrency=3, retry=RetryPolicy(attempts=1))
    assert answered_paths(http, [Request("GET", p) for p in paths(9)]) == paths(9)
    server.close_idle()
    time.sleep(0.05)
    # A write too: the closed connections are noticed before anything is sent on them.
    calls = [Request("POST", p, json={}) for p in paths(9)]
    assert answered_paths(http, calls) == paths(9)
    http.close()
    assert len(server.heads) == 18


def test_fan_out_connections_are_kept_for_the_next_fan_out(serve):
    server = serve(lambda head, n: (echo_path(head), False))
    http = HTTPLayer(server.address, "/v1", max_concurrency=4)
    for _ in range(3):
        assert answered_paths(http, [Request("GET", p) for p in paths(50)]) == paths(50)
    http.close()
    assert server.connections <= 4


def test_many_inside_a_map_of_the_same_layer_stays_within_its_connections(serve):
    server = serve(lambda head, n: (echo_path(head), False))
    http = HTTPLayer(server.address, "/v1", max_concurrency=4)

    def read(_: int) -> list[str]:
        return answered_paths(http, [Request("GET", p) for p in paths(20)])

    results = list(http.map(read, range(8)))
    http.close()
    assert results == [paths(20)] * 8
    assert server.connections <= 4


def test_chunked_head_and_no_content_answers_in_a_fan_out(serve):
    def answer(head: bytes, n: int) -> tuple[bytes, bool]:
        method = head.split(b" ", 1)[0]
        if method == b"HEAD":
            return b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", False
        if method == b"DELETE":
            return b"HTTP/1.1 204 No Content\r\n\r\n", False
        return (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b'3\r\n{"a\r\n6;x=1\r\n": [1]\r\n1\r\n}\r\n0\r\n\r\n'
        ), False

    server = serve(answer)
    http = HTTPLayer(server.address, "/v1", max_concurrency=2)
    calls = [Request(m, "/x") for m in ("GET", "HEAD", "DELETE") * 10]
    got = [(r.status_code, r.content) for r in http.many(calls)]
    http.close()
    assert got == [(200, b'{"a": [1]}'), (200, b""), (204, b"")] * 10


def test_an_answer_that_never_comes_is_a_timeout_naming_the_address(serve):
    server = serve(lambda head, n: (b"", False))
    http = HTTPLayer(
        server.address, "/v1", max_concurrency=2, timeout=0.3, retry=RetryPolicy(attempts=1)
    )
    started = time.monotonic()
    with pytest.raises(TimeoutError) as err:
        list(http.many([Request("GET", p) for p in paths(4)]))
    http.close()
    assert time.monotonic() - started < 5
    assert server.address in str(err.value)


def test_a_server_that_is_not_there_is_a_connect_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    http = HTTPLayer(
        f"http://127.0.0.1:{port}", "/v1", max_concurrency=4, retry=RetryPolicy(backoff=0.01)
    )
    with pytest.raises(ConnectError) as err:
        list(http.many([Request("GET", p) for p in paths(6)]))
    http.close()
    assert f"127.0.0.1:{port}" in str(err.value)


def test_a_connector_passed_in_carries_the_same_calls_through_the_same_rules(serve):
    import aiohttp

    made: list[aiohttp.TCPConnector] = []

    def connector() -> aiohttp.TCPConnector:
        made.append(aiohttp.TCPConnector(limit=2))
        return made[-1]

    server = serve(lambda head, n: (echo_path(head), n == 2))
    http = HTTPLayer(server.address, "/v1", max_concurrency=3, connector=connector)
    assert answered_paths(http, [Request("GET", p) for p in paths(30)]) == paths(30)
    http.close()
    assert len(made) == 1
    assert server.connections >= 15  # the connector's, dropped after two answers each


@pytest.fixture
def tls_files(tmp_path) -> tuple[str, ssl.SSLContext]:
    """(the CA file a client trusts, the server's TLS context)."""
    ca, cert, key = certificate_files(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return str(ca), context


def test_a_fan_out_over_tls_is_answered_in_order(serve, tls_files):
    ca_file, context = tls_files
    server = serve(lambda head, n: (echo_path(head), False), context)
    http = HTTPLayer(server.address, "/v1", max_concurrency=3, tls=ClientTLS(ca_file=ca_file))
    assert answered_paths(http, [Request("GET", p) for p in paths(120)]) == paths(120)
    assert http.json("GET", "/one") == {"path": "/v1/one"}  # one request, the blocking way
    http.close()
    assert server.connections <= 3


def test_a_certificate_the_client_does_not_trust_is_a_tls_error(serve, tls_files):
    _, context = tls_files
    server = serve(lambda head, n: (echo_path(head), False), context)
    http = HTTPLayer(server.address, "/v1", max_concurrency=3, retry=RetryPolicy(attempts=1))
    with pytest.raises(TLSError) as err:
        list(http.many([Request("GET", p) for p in paths(6)]))
    assert server.address in str(err.value)
    with pytest.raises(TLSError):
        http.json("GET", "/one")
    http.close()


def test_a_map_that_fails_returns_only_once_its_running_items_have_ended(serve):
    """The failure of one item stops the map, and the map raises only after the
    items already sent have been answered: nothing of it still reaches the server
    once the caller has the error (a late request would land on the caller's next
    call, as a write after a reported failure)."""
    started: list[bytes] = []
    finished: list[bytes] = []

    def answer(head: bytes, n: int) -> tuple[bytes, bool]:
        started.append(head)
        if b" /v1/fail " not in head:
            time.sleep(0.4)
        finished.append(head)
        if b" /v1/fail " in head:
            return (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", False)
        return (echo_path(head), False)

    server = serve(answer)
    http = HTTPLayer(server.address, "/v1", max_concurrency=4, retry=RetryPolicy(attempts=1))
    items = ["/fail", "/slow1", "/slow2", "/slow3"] + [f"/later{i}" for i in range(20)]

    def one(path: str) -> int:
        return http.request("GET", path).status_code

    with pytest.raises(NotFound):
        list(http.map(one, items, workers=4))
    in_flight = len(started) - len(finished)
    http.close()
    assert in_flight == 0, f"{in_flight} request(s) still being answered after the map raised"


def _held_fan_out(serve, body: bytes, hold: float) -> float:
    """Seconds until the reader of a fan-out of 8 gets its first answer, when the
    first is answered at once with ``body`` and the other seven are held back
    until the reader has the first, or ``hold`` seconds have passed."""
    released = threading.Event()

    def answer(head: bytes, n: int) -> tuple[bytes, bool]:
        if b" /v1/p0 " not in head:
            released.wait(hold)
        head_line = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        return (head_line + body, False)

    server = serve(answer)
    http = HTTPLayer(server.address, "/v1", max_concurrency=8)
    started = time.monotonic()
    first = None
    for response in http.many([Request("GET", p) for p in paths(8)]):
        if first is None:
            first = time.monotonic() - started
            released.set()
        assert response.status_code == 200
    http.close()
    assert first is not None
    return first


def test_a_reader_is_handed_large_answers_without_waiting_for_a_batch(serve):
    """A page of 40 kB is enough reading for one wake-up of the reader: it is
    handed over as it comes, not once the other seven of the batch are in (the
    reader would then be left with all of them to read after the last arrived)."""
    assert _held_fan_out(serve, b"x" * 40_000, hold=3.0) < 1.5


def test_small_answers_are_still_handed_to_the_reader_in_batches(serve):
    """The control: half a kilobyte is not worth a wake-up of the reader, which
    waits for the batch (here the whole fan-out of 8) before it reads."""
    assert _held_fan_out(serve, b"x" * 500, hold=0.6) >= 0.5
