"""The HTTP layer against hostile servers, second round (issue 24): everything
bounded in time and memory, answers never out of step, honest outcomes,
process and thread life, errors that name the right party.

Every server is a scripted socket server (tests/_sockets.py) whose sockets
time out; every case ends within the layer's own deadlines, a second or two.
"""

from __future__ import annotations

import json
import os
import resource
import threading
import time
import zlib
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._http.test_hostile_servers import FAST, TOKEN, keep_answering, layer, serve
from tests._sockets import Peer, answer
from tests._stress import stress
from toolkit import (
    APIError,
    ConfigurationError,
    ConnectError,
    DecodeError,
    InputError,
    OutcomeUnknown,
    ProtocolError,
    RateLimited,
    RetryPolicy,
    ToolkitError,
)
from toolkit._http import HTTPLayer, Request
from toolkit._tls import ClientTLS
from toolkit.secrets import SecretsClient

__all__ = ["serve"]  # the scripted servers' fixture, shared with the first round


@pytest.fixture(autouse=True, scope="module")
def _aiohttp_imported() -> None:
    """The first call of a process imports aiohttp (half a second on a busy
    machine), inside that call's time: not the time of whichever case runs first."""
    import aiohttp  # noqa: F401


def answering(make: Callable[[int], bytes]) -> Callable[[Peer], None]:
    """A handler answering the n-th request on the server (1-based) with ``make(n)``."""
    count = [0]
    lock = threading.Lock()

    def handler(peer: Peer) -> None:
        while peer.request() is not None:
            with lock:
                count[0] += 1
                n = count[0]
            if not peer.send(make(n)):
                return

    return handler


# -- 2. a retry never stalls a fan-out --------------------------------------------------------


def test_a_fan_out_with_resets_429s_and_stale_connections_keeps_its_pace():
    """Faults at random positions of 600 reads: within twice a clean run (the
    fan-out once waited a minute for each retry behind the reader's position,
    and a dropped connection's first retry 0.2 s), the best of two each, with
    half a second for a shared machine's spells."""
    clean, hostile, served = stress(600, 15, seed=7, rounds=2)
    assert served == {"reset": 5, "429": 5, "stale": 5}
    assert hostile < 2 * clean + 0.5, (clean, hostile)


@pytest.mark.parametrize("fault", ["reset", "502"])
def test_one_retry_in_a_fan_out_longer_than_its_read_ahead_waits_only_its_pause(serve, fault):
    """The retry of request 3 is due while sending has run ``ahead`` answers
    past the reader (who waits for request 3): the fan-out once slept a minute."""
    done = threading.Event()

    def handler(peer: Peer) -> None:
        while (seen := peer.request()) is not None:
            if seen.target == "/v1/lookup/3" and not done.is_set():
                done.set()
                if fault == "reset":
                    peer.reset()
                    return
                peer.send(answer(502, b"{}"))
                continue
            peer.send(answer(200, b"{}"))

    server = serve(handler)
    # A reset is tried again at once, then after pauses; a 502 after 0.3 s.
    http = layer(server.address, retry=RetryPolicy(backoff=0.3), fan_out_timeout=10)
    started = time.perf_counter()
    assert len(list(http.many(Request("GET", f"/lookup/{i}") for i in range(300)))) == 300
    http.close()
    # The stall this guards against was 60 s a retry round; the bound leaves room for a
    # loaded machine.
    assert time.perf_counter() - started < 5.0
    assert sum(s.target == "/v1/lookup/3" for s in server.requests()) == 2


# -- 1. everything bounded -----------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    ["Retry-After: nan", "Retry-After: 1e999", "X-RateLimit-Reset: inf", "Retry-After: soon"],
)
def test_a_pause_that_is_not_a_finite_number_is_a_protocol_error(serve, header):
    server = serve(answering(lambda n: answer(429, b"{}", header)))
    http = layer(server.address)
    started = time.perf_counter()
    with pytest.raises(ProtocolError) as err:
        http.request("GET", "/sys/health")
    http.close()
    assert time.perf_counter() - started < 1.0
    assert header.split(":")[0] in str(err.value)
    assert len(server.requests()) == 1


def test_a_pause_beyond_the_calls_budget_ends_it_with_rate_limited(serve):
    server = serve(answering(lambda n: answer(429, b'{"errors": ["busy"]}', "Retry-After: 1e6")))
    http = layer(server.address, timeout=0.5, retry=RetryPolicy(attempts=4, max_pause=3600))
    started = time.perf_counter()
    with pytest.raises(RateLimited) as err:
        http.request("POST", "/auth/token/create", json={})
    http.close()
    assert time.perf_counter() - started < 2.0  # the server asked for 1e6 s
    assert "beyond" in str(err.value) and "busy" in str(err.value)


def test_a_calls_retries_and_pauses_end_within_its_call_timeout(serve):
    # A server that asks for a pause again and again: each pause is taken only
    # when it leaves the next try its timeout (0.15 s) within the call's 0.7 s.
    server = serve(answering(lambda n: answer(503, b"{}", "Retry-After: 0.2")))
    http = layer(server.address, timeout=0.15, call_timeout=0.7, retry=RetryPolicy(attempts=10))
    started = time.perf_counter()
    with pytest.raises(APIError):
        http.request("GET", "/sys/health")
    took = time.perf_counter() - started  # the call's time, not close()'s
    http.close()
    assert 0.35 < took < 0.7, took
    assert len(server.requests()) == 3  # at 0, 0.2 and 0.4 s; a pause then would leave 0.1


def test_a_fan_out_ends_with_rate_limited_when_a_pause_outlasts_it(serve):
    server = serve(
        answering(lambda n: answer(429, b"{}", "Retry-After: 20") if n == 5 else answer())
    )
    http = layer(server.address, fan_out_timeout=1.0, retry=RetryPolicy(attempts=3, max_pause=60))
    started = time.perf_counter()
    with pytest.raises(RateLimited):
        list(http.many(Request("GET", f"/x/{i}") for i in range(20)))
    http.close()
    assert time.perf_counter() - started < 1.0


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


BOMB = 2**30  # what the bombs below inflate to: a gibibyte of zeros


def _bomb(wbits: int) -> bytes:
    """About a megabyte of gzip (``wbits`` 31) or deflate (15) inflating to ``BOMB``
    bytes: one block of zeros compressed, then the same bytes again (each block
    ends in a full flush, so the next compresses alike). No trailer: a client
    that reads to the end is the bug."""
    block = bytes(2**20)
    squeeze = zlib.compressobj(9, zlib.DEFLATED, wbits)
    first = squeeze.compress(block) + squeeze.flush(zlib.Z_FULL_FLUSH)
    again = squeeze.compress(block) + squeeze.flush(zlib.Z_FULL_FLUSH)
    return first + again * (BOMB // len(block) - 1)


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    return {"gzip": _bomb(31), "deflate": _bomb(15)}


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_a_compression_bomb_stops_at_the_decompressed_limit(serve, bombs, encoding):
    body = bombs[encoding]
    assert len(body) < 1.1 * 2**20  # a megabyte on the wire
    server = serve(
        answering(lambda n: answer(200, body, f"Content-Encoding: {encoding}")),
    )
    http = layer(server.address, max_decompressed=2**20)
    before = _rss_mb()
    with pytest.raises(ProtocolError) as err:
        http.request("GET", "/sys/leases/lookup")
    grew = _rss_mb() - before
    http.close()
    assert "max_decompressed" in str(err.value)
    assert grew < 60, f"the client grew {grew:.0f} MB on a {BOMB >> 20} MB bomb"
    assert len(server.requests()) == 1  # not tried again: the same answer would come


def test_a_body_over_the_limit_is_refused_by_its_length_before_it_is_read(serve):
    def handler(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 4294967296\r\n\r\n" + bytes(65536))
        time.sleep(2)

    server = serve(handler)
    http = layer(server.address, max_body=2**20)
    started = time.perf_counter()
    with pytest.raises(ProtocolError, match="Content-Length is 4294967296 bytes.*max_body"):
        http.request("GET", "/big")
    http.close()
    assert time.perf_counter() - started < 1.0


def test_an_endless_plain_body_stops_at_the_body_limit(serve):
    def handler(peer: Peer) -> None:
        peer.request()
        peer.send(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (65536, bytes(65536))
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and peer.send(chunk):
            pass

    server = serve(handler)
    http = layer(server.address, max_body=4 * 2**20, timeout=3)
    before = _rss_mb()
    with pytest.raises(ProtocolError, match="max_body"):
        http.request("GET", "/big")
    grew = _rss_mb() - before
    http.close()
    assert grew < 40


def test_the_limits_fit_the_largest_real_answer_and_a_client_can_change_them(serve):
    server = serve(answering(lambda n: answer(200, b'"' + bytes(3000) + b'"')))
    with SecretsClient(server.address, TOKEN, retry=FAST) as client:
        http = client.http
        assert http.max_body == http.max_decompressed == 256 * 2**20  # 1e6 lease ids: 70 MB
        http.max_body = 1000
        with pytest.raises(ProtocolError, match="max_body=1000"):
            http.request("GET", "/sys/health")
        with pytest.raises(ConfigurationError):
            http.max_decompressed = 0


# -- 3. answers never out of step -----------------------------------------------------------


def test_a_kept_connection_that_received_an_answer_while_idle_is_not_reused(serve):
    """A server writes an extra answer 30 ms after a complete exchange: on plain
    aiohttp the next call takes it (['REAL-1', 'SMUGGLED', 'REAL-2'])."""

    stray = threading.Event()

    def handler(peer: Peer) -> None:
        n = 0
        while peer.request() is not None:
            n += 1
            peer.send(answer(200, json.dumps(f"REAL-{n}").encode()))
            time.sleep(0.03)
            peer.send(answer(200, b'"SMUGGLED"'))
            stray.set()

    server = serve(handler)
    http = layer(server.address)
    got = []
    for _ in range(3):
        got.append(http.json("GET", "/sys/health"))
        # The next call only once the stray answer is on its way (a loaded
        # machine may hold the server's thread past any fixed sleep).
        assert stray.wait(2)
        stray.clear()
        time.sleep(0.02)
    http.close()
    assert got == ["REAL-1", "REAL-1", "REAL-1"]  # each on a fresh connection
    assert server.connections == 3


# -- 5. honest outcomes ----------------------------------------------------------------------


@pytest.mark.parametrize("status", [101, 600, 999])
def test_a_final_status_that_is_no_answer_is_a_protocol_error(serve, status):
    server = serve(
        answering(lambda n: f"HTTP/1.1 {status} Odd\r\nContent-Length: 2\r\n\r\n{{}}".encode())
    )
    http = layer(server.address)
    with pytest.raises(ProtocolError, match=f"status {status}"):
        http.request("GET", "/sys/health")
    with pytest.raises(OutcomeUnknown, match=f"status {status}"):
        http.request("POST", "/auth/token/create", json={})
    http.close()
    assert len(server.requests("POST")) == 1


def test_an_unrequested_101_to_a_token_create_is_no_success(serve):
    server = serve(answering(lambda n: b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n"))
    with (
        SecretsClient(server.address, TOKEN, retry=FAST, timeout=1) as client,
        pytest.raises(OutcomeUnknown),
    ):
        client.tokens.create(["default"], "1h")
    assert len(server.requests("POST")) == 1


def test_a_tls_record_broken_after_a_post_was_delivered_is_an_unknown_outcome(serve, tmp_path):
    import socket
    import ssl

    from tests._sockets import certificate_files

    ca, cert, key = certificate_files(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    def handler(peer: Peer) -> None:
        if peer.request() is None:
            return
        socket.socket.send(peer.sock, b"\x17\x03\x03\x00\x10" + bytes(16))  # a forged record

    server = serve(handler, context)
    http = layer(server.address, tls=ClientTLS(ca_file=str(ca)))
    with pytest.raises(OutcomeUnknown) as err:
        http.request("POST", "/auth/token/create", json={}, check="list the token accessors")
    http.close()
    assert "TLS" in str(err.value)
    assert len(server.requests("POST")) == 1


@pytest.mark.parametrize("where", ["token", "namespace"])
def test_a_line_break_in_a_header_is_refused_before_sending_naming_the_header(serve, where):
    server = serve(answering(lambda n: answer()))
    with pytest.raises(InputError) as err:
        if where == "token":
            SecretsClient(server.address, TOKEN + "\n", retry=FAST)
        else:
            with SecretsClient(server.address, TOKEN, retry=FAST) as client:
                client.in_namespace("team-a\r\nX-Evil: 1").leases.list_leases("x/")
    name = "Token header" if where == "token" else "X-Vault-Namespace header"
    assert name in str(err.value)
    assert TOKEN not in str(err.value) and "team-a" not in str(err.value)
    assert server.requests() == []


def test_what_the_library_refuses_to_build_is_an_input_error_never_retried(serve):
    server = serve(answering(lambda n: answer()))
    http = layer(server.address)
    with pytest.raises(InputError, match="not sent"):
        http.request("GE T", "/sys/health")
    with pytest.raises(InputError, match="X-Request-Note header"):
        http.request("GET", "/sys/health", headers={"X-Request-Note": "a\nb"})
    http.close()
    assert server.requests() == []


def test_deeply_nested_json_is_a_decode_error(serve):
    server = serve(answering(lambda n: answer(200, b"[" * 100_000 + b"]" * 100_000)))
    http = layer(server.address)
    with pytest.raises(DecodeError):
        http.json("GET", "/sys/health")
    server_error = serve(answering(lambda n: answer(400, b'{"errors": ' + b"[" * 50_000)))
    with pytest.raises(APIError):
        layer(server_error.address).request("GET", "/x")
    http.close()


@pytest.mark.parametrize("number", [b"1e999", b"-1e400", b"1" * 5000])
def test_a_number_out_of_range_is_a_decode_error(serve, number):
    server = serve(answering(lambda n: answer(200, b'{"data": {"ttl": ' + number + b"}}")))
    http = layer(server.address)
    with pytest.raises(DecodeError):
        http.json("GET", "/sys/leases/lookup")
    http.close()


def test_a_date_header_in_the_year_9999_does_not_move_the_servers_clock(serve):
    server = serve(answering(lambda n: answer(200, b"{}", "Date: Fri, 31 Dec 9999 23:59:59 GMT")))
    http = layer(server.address)
    http.request("GET", "/sys/health")
    http.close()
    assert http.server_now().year < 2200


def test_a_server_echoing_the_token_never_shows_it(serve):
    body = json.dumps({"errors": [f"token {TOKEN} is not allowed", {"detail": TOKEN}]})
    server = serve(answering(lambda n: answer(403, body.encode(), f"X-Echo: {TOKEN}")))
    http = layer(server.address)
    with pytest.raises(APIError) as err:
        http.request("GET", "/sys/health")
    http.close()
    error = err.value
    shown = " ".join(
        [str(error), repr(error), repr(error.headers), repr(error.errors), error.message]
    )
    assert TOKEN not in shown
    assert "<hidden>" in error.message


def test_a_short_token_does_not_mask_the_servers_words(serve):
    # A one-letter "token" must not turn every "e" of the message into <hidden>.
    body = b'{"errors": ["permission denied"]}'
    server = serve(answering(lambda n: answer(403, body)))
    http = HTTPLayer(
        server.address, "/v1", headers={"X-Vault-Token": "e"}, token_headers=("X-Vault-Token",)
    )
    with pytest.raises(APIError) as err:
        http.request("GET", "/sys/health")
    http.close()
    assert err.value.message == "permission denied"


def test_a_bearer_token_echoed_alone_never_shows_it(serve):
    # The platform's credential is "Bearer <token>"; a server quotes the token alone.
    body = json.dumps({"errors": [{"detail": f"token {TOKEN} is not valid"}]}).encode()
    server = serve(answering(lambda n: answer(401, body, f"X-Echo: {TOKEN}")))
    http = HTTPLayer(server.address, "/api/v2", headers={"Authorization": f"Bearer {TOKEN}"})
    with pytest.raises(APIError) as err:
        http.request("GET", "/account/details")
    http.close()
    shown = " ".join([str(err.value), repr(err.value.headers), repr(err.value.errors)])
    assert TOKEN not in shown and "<hidden>" in err.value.message


def test_a_redirect_quoting_the_token_never_shows_it(serve):
    server = serve(answering(lambda n: answer(302, b"", f"Location: /login?token={TOKEN}")))
    http = layer(server.address)
    with pytest.raises(APIError) as err:
        http.request("GET", "/sys/health")
    http.close()
    assert TOKEN not in str(err.value) and TOKEN not in repr(err.value.headers)
    assert "/login?token=<hidden>" in str(err.value)


# -- 6. process and thread life --------------------------------------------------------------


@pytest.mark.slow  # it starts a process (a fork)
def test_a_forked_child_gets_a_fresh_engine(serve):
    server = serve(answering(lambda n: answer(200, b'{"n": %d}' % n)))
    http = layer(server.address)

    def numbers() -> list[int]:
        """One call, then two on the layer's thread pool (map)."""
        first = http.json("GET", "/sys/health")["n"]
        pooled = http.map(lambda _: http.json("GET", "/sys/health")["n"], range(2))
        return [first, *sorted(pooled)]

    assert numbers() == [1, 2, 3]  # the parent's loop thread and pool threads run
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the same calls, their answers to the pipe
        code = 1
        try:
            os.write(write, json.dumps(numbers()).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    assert exit_code(pid) == 0
    assert json.loads(os.read(read, 100)) == [4, 5, 6]
    os.close(read)
    assert numbers() == [7, 8, 9]  # the parent's engine and pool go on
    http.close()


def exit_code(pid: int, within: float = 5.0) -> int:
    """The exit code of the forked child ``pid``; the test fails if it does not end
    ``within`` seconds (it is killed)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")


def _never_answering(peer: Peer) -> None:
    while peer.request() is not None:
        time.sleep(5)


def _call_or_fan_out(http: HTTPLayer, what: str, n: int, outcome: list[BaseException]) -> None:
    """One read, or a fan-out of ``n``; what it raised goes into ``outcome``."""
    try:
        if what == "call":
            http.request("GET", "/x")
        else:
            list(http.many(Request("GET", f"/x/{i}") for i in range(n)))
    except BaseException as exc:  # noqa: BLE001 - the test looks at it
        outcome.append(exc)


@pytest.mark.parametrize("what", ["call", "fan-out"])
def test_close_from_another_thread_fails_what_is_in_flight_at_once(serve, what):
    server = serve(_never_answering)
    http = layer(server.address, timeout=30)
    outcome: list[BaseException] = []
    caller = threading.Thread(target=_call_or_fan_out, args=(http, what, 50, outcome))
    caller.start()
    while not server.requests():
        time.sleep(0.01)
    started = time.perf_counter()
    http.close()
    caller.join(3)
    assert not caller.is_alive(), "the caller still waits after close()"
    assert time.perf_counter() - started < 1.5
    assert isinstance(outcome[0], ConfigurationError)
    assert "closed while" in str(outcome[0])


def test_calls_racing_close_all_end_at_once_with_a_toolkit_error(serve):
    """Callers that take the loop just as another thread closes the client hand
    their call to a loop that is stopping: each still ends at once, with an error
    of the toolkit, never waiting on a loop that will not run it."""
    server = serve(keep_answering)
    for round_ in range(25):
        http = layer(server.address, timeout=5)
        http.request("GET", "/warm")
        ended: list[BaseException | None] = []

        def call(fan: bool, http: HTTPLayer = http, ended: list = ended) -> None:
            try:
                while True:
                    if fan:
                        list(http.many(Request("GET", f"/x/{i}") for i in range(8)))
                    else:
                        http.request("GET", "/x")
            except BaseException as exc:  # noqa: BLE001 - the test looks at it
                ended.append(exc)

        callers = [threading.Thread(target=call, args=(k % 2 == 0,)) for k in range(6)]
        for c in callers:
            c.start()
        time.sleep(0.002 * (round_ % 5))
        http.close()
        for c in callers:
            c.join(5)
        assert not any(c.is_alive() for c in callers), f"round {round_}: a caller hangs"
        assert len(ended) == 6
        assert all(isinstance(e, ToolkitError) for e in ended), ended


@pytest.mark.parametrize("what", ["call", "fan-out"])
def test_a_call_handed_to_the_loop_as_close_stops_it_ends_at_once(serve, what):
    """The narrow window of the race above, held open: the caller has taken the
    loop, another thread closes the client (its loop stops), then the caller hands
    its call over. The loop will never run it; the call must still end, at once."""
    from toolkit._http.transport import Transport

    server = serve(keep_answering)
    http = layer(server.address, timeout=5)
    http.request("GET", "/warm")
    taken, closed = threading.Event(), threading.Event()

    class HeldHandOver(Transport):  # widens the window only; the code under test is Transport's
        def loop(self):  # type: ignore[no-untyped-def]
            loop = super().loop()
            if threading.current_thread().name == "caller":
                taken.set()
                closed.wait(2)
            return loop

    http._engine.__class__ = HeldHandOver
    outcome: list[BaseException] = []
    caller = threading.Thread(target=_call_or_fan_out, args=(http, what, 8, outcome), name="caller")
    caller.start()
    assert taken.wait(2)
    http.close()
    closed.set()
    caller.join(3)
    assert not caller.is_alive(), "the call waits on a loop that will never run it"
    assert isinstance(outcome[0], ConfigurationError), outcome


# -- 7. errors that name the right party -----------------------------------------------------


def _no_proxy_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_a_proxy_refusing_the_tunnel_is_named_and_a_write_through_it_is_no_unknown(
    serve, monkeypatch
):
    def refuse(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")

    proxy = serve(refuse)
    _no_proxy_settings(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", f"http://auditor:s3cret-pw@127.0.0.1:{proxy.port}")
    http = HTTPLayer("https://secrets.example.internal:8200", "/v1", retry=FAST, timeout=2)
    with pytest.raises(ConnectError) as err:
        http.request("POST", "/auth/token/create", json={})
    http.close()
    message = str(err.value)
    assert f"127.0.0.1:{proxy.port} (from HTTPS_PROXY)" in message and "407" in message
    assert "s3cret-pw" not in message and "auditor" not in message
    assert {s.method for s in proxy.requests()} == {"CONNECT"}
    assert proxy.requests()[0].headers["proxy-authorization"].startswith("Basic ")


def test_a_dead_proxy_is_named_without_its_credentials(monkeypatch):
    import socket

    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]  # nothing listens there once closed
    _no_proxy_settings(monkeypatch)
    monkeypatch.setenv("HTTP_PROXY", f"http://operator:hunter2@127.0.0.1:{port}")
    http = layer("http://secrets.example.internal:8200")
    with pytest.raises(ConnectError) as err:
        http.request("GET", "/sys/health")
    http.close()
    message = str(err.value)
    assert f"127.0.0.1:{port}" in message and "HTTP_PROXY" in message
    assert "hunter2" not in message and "operator" not in message


# -- every failure is a toolkit error: a fuzz of answers against the layer ----------------

_STATUSES = st.one_of(
    st.sampled_from([101, 200, 204, 304, 307, 400, 404, 429, 500, 502, 503, 504, 599, 600, 999]),
    st.integers(200, 599),
)
_TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30)
_HEADERS = st.lists(
    st.tuples(
        st.sampled_from(
            ["Retry-After", "X-RateLimit-Reset", "Date", "Content-Encoding", "Location", "X-Any"]
        ),
        st.one_of(_TEXT, st.sampled_from(["nan", "-1", "1e999", "0", "gzip", "deflate", "br"])),
    ),
    max_size=3,
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_BODIES = st.one_of(
    _JSON.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=40),
    st.sampled_from([b"[" * 3000, b'{"errors": [{"source": "x", "title": 1}]}', b"1e999"]),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(status=_STATUSES, headers=_HEADERS, body=_BODIES, method=st.sampled_from(["GET", "POST"]))
def test_whatever_a_server_answers_only_toolkit_errors_escape(serve, status, headers, body, method):
    head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    raw = head.encode() + b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(body) + body

    def once(peer: Peer) -> None:
        if peer.request() is not None:
            peer.send(raw)

    server = serve(once)
    http = layer(
        server.address, timeout=0.5, retry=RetryPolicy(attempts=2, backoff=0.0, max_pause=0.01)
    )
    try:
        http.json(method, "/sys/health", json={} if method == "POST" else None)
    except ToolkitError:
        pass
    finally:
        http.close()
        server.stop()


@pytest.mark.parametrize("workers", [1, 4])
def test_a_map_of_client_calls_ends_within_the_fan_out_timeout(workers):
    from toolkit import TimeoutError as ToolkitTimeout

    http = HTTPLayer("http://127.0.0.1:1", "/v1", fan_out_timeout=0.3)
    started = time.perf_counter()
    with pytest.raises(ToolkitTimeout, match="deadline of 0.3 s"):
        list(http.map(lambda _: time.sleep(0.1), range(40), workers=workers))
    http.close()
    assert time.perf_counter() - started < 0.9  # unbounded, 4 workers take 1 s, 1 takes 4 s
