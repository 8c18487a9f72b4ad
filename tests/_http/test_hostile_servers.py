"""The HTTP layer against servers that behave the way real networks and front ends do.

Each server is a scripted socket server (tests/_sockets.py): it writes the
exact bytes a broken peer, a gateway or a standby node would, and records
what arrived. Every case is bounded in time by the layer's own deadlines (a
second or two), and asserts the exact outcome: which error, and how many
requests the server received. The rule under test above all: a write is
never sent twice without proof that repeating it is harmless.
"""

from __future__ import annotations

import resource
import ssl
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests._sockets import Peer, Scripted, answer, certificate_files
from toolkit import (
    BadRequest,
    OutcomeUnknown,
    PlatformClient,
    Redirected,
    RetryPolicy,
    ServerError,
    TimeoutError,
    TLSError,
    ToolkitError,
    TransportError,
)
from toolkit._http import HTTPLayer, Request
from toolkit._tls import ClientTLS
from toolkit.secrets import SecretsClient

FAST = RetryPolicy(attempts=3, backoff=0.01, max_pause=1.0)
TOKEN = "s.hostile-test-token-9f2c"


@pytest.fixture
def serve() -> Iterator[Callable[..., Scripted]]:
    servers: list[Scripted] = []

    def start(handler: Callable[[Peer], None], tls: ssl.SSLContext | None = None) -> Scripted:
        server = Scripted(handler, tls)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def layer(address: str, **options: Any) -> HTTPLayer:
    options.setdefault("retry", FAST)
    options.setdefault("timeout", 2.0)
    options.setdefault("token_headers", ("X-Vault-Token",))
    return HTTPLayer(address, "/v1", headers={"X-Vault-Token": TOKEN}, **options)


def keep_answering(peer: Peer) -> None:
    while peer.request() is not None:
        peer.send(answer(200, b'{"ok": true}'))


def first_ok_then(after: Callable[[Peer], None]) -> Callable[[Peer], None]:
    """Answer the first request on a connection, then do ``after`` with the next."""

    def handler(peer: Peer) -> None:
        if peer.request() is None:
            return
        peer.send(answer(200, b'{"ok": true}'))
        after(peer)

    return handler


def read_then_close(peer: Peer) -> None:
    peer.request()
    peer.sock.close()


# -- writes are sent once ------------------------------------------------------------------


def test_a_post_on_a_kept_connection_closed_after_reading_it_is_sent_once(serve):
    server = serve(first_ok_then(read_then_close))
    with SecretsClient(server.address, TOKEN, retry=FAST, timeout=2) as client:
        client.seal.status()  # the connection is now a kept one
        with pytest.raises(OutcomeUnknown) as err:
            client.tokens.create(["default"], "1h")
    assert len(server.requests("POST")) == 1
    assert server.connections == 1
    assert "may or may not" in str(err.value)
    assert "accessor" in str(err.value)  # how to check
    assert TOKEN not in str(err.value)


def test_posts_in_a_fan_out_whose_connections_close_after_reading_them_go_once_each(serve):
    server = serve(read_then_close)
    http = layer(server.address, max_concurrency=4)
    names = [f"host-{i}.example.com" for i in range(12)]
    calls = [Request("POST", "/pki/issue/web", json={"common_name": n}) for n in names]
    with pytest.raises(OutcomeUnknown):
        list(http.many(calls))
    http.close()
    bodies = [s.body for s in server.requests("POST")]
    assert bodies, "the server saw the first certificate request"
    assert len(bodies) == len(set(bodies)), "a certificate request went twice"
    assert len(bodies) <= 4  # the first failure stopped new sends


@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_put_and_delete_on_a_kept_connection_closed_after_reading_are_sent_once(serve, method):
    """aiohttp re-sends PUT and DELETE on such a connection unless the layer turns that
    off (ClientSession._retry_connection, private): this fails if it stops working."""
    server = serve(first_ok_then(read_then_close))
    http = layer(server.address)
    http.json("GET", "/warm")
    with pytest.raises(OutcomeUnknown):
        http.json(method, "/sys/policies/acl/x", json={"policy": "x"})
    http.close()
    assert len(server.requests(method)) == 1


def test_a_gateway_504_to_a_key_rotation_leaves_it_unknown_and_it_is_sent_once(serve):
    def gateway(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(answer(504, b"<html>gateway timeout</html>"))

    server = serve(gateway)
    with (
        SecretsClient(server.address, TOKEN, retry=FAST, timeout=2) as client,
        pytest.raises(OutcomeUnknown) as err,
    ):
        client.keymgmt.rotate_key("payments")
    assert [s.method for s in server.seen] == ["POST"]
    assert server.seen[0].target == "/v1/keymgmt/key/payments/rotate"
    assert "latest_version" in str(err.value)


def test_a_429_is_waited_out_and_retried_even_for_a_post(serve):
    def limited(peer: Peer) -> None:
        first = True
        while peer.request() is not None:
            if first:
                peer.send(answer(429, b'{"errors": ["slow down"]}', "Retry-After: 0.3"))
                first = False
            else:
                peer.send(answer(200, b'{"created": true}'))

    server = serve(limited)
    http = layer(server.address)
    started = time.monotonic()
    assert http.json("POST", "/auth/token/create", json={}) == {"created": True}
    elapsed = time.monotonic() - started
    http.close()
    assert len(server.requests("POST")) == 2
    assert elapsed >= 0.29


def test_a_503_on_a_post_is_not_retried(serve):
    def unavailable(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(answer(503, b'{"errors": ["standby"]}'))

    server = serve(unavailable)
    http = layer(server.address)
    with pytest.raises(ServerError) as err:
        http.json("POST", "/auth/token/create", json={})
    http.close()
    assert err.value.status == 503
    assert len(server.requests("POST")) == 1


# -- connections the server closes ---------------------------------------------------------


def test_an_unsolicited_408_and_close_on_an_idle_connection_leads_to_a_new_connection(serve):
    def idle_close(peer: Peer) -> None:
        if peer.request() is None:
            return
        peer.send(answer(200, b'{"n": 1}'))
        time.sleep(0.1)
        peer.send(b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        peer.sock.close()

    def handler(peer: Peer) -> None:
        if peer.number == 1:
            idle_close(peer)
        else:
            keep_answering(peer)

    server = serve(handler)
    http = layer(server.address, retry=RetryPolicy(attempts=1))
    assert http.json("GET", "/a") == {"n": 1}
    time.sleep(0.4)
    assert http.json("POST", "/b", json={"x": 1}) == {"ok": True}
    http.close()
    assert server.connections == 2
    assert len(server.requests("POST")) == 1


def test_a_reset_mid_body_is_retried_for_a_read_and_unknown_for_a_write(serve):
    def reset(peer: Peer) -> None:
        if peer.request() is None:
            return
        peer.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b'{"partial"')
        time.sleep(0.05)
        peer.reset()

    server = serve(reset)
    http = layer(server.address)
    with pytest.raises(TransportError) as err:
        http.json("GET", "/read")
    assert not isinstance(err.value, OutcomeUnknown)
    assert len(server.requests("GET")) == FAST.attempts
    with pytest.raises(OutcomeUnknown):
        http.json("POST", "/write", json={})
    http.close()
    assert len(server.requests("POST")) == 1


# -- framing ------------------------------------------------------------------------------


def one_answer(raw: bytes, *, close_after: float | None = None) -> Callable[[Peer], None]:
    def handler(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(raw)
            if close_after is not None:
                time.sleep(close_after)
                return

    return handler


MALFORMED = {
    "negative chunk size": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-6\r\nhello!\r\n0\r\n\r\n"
    ),
    "two different Content-Length": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello, "
    ),
    "Content-Length 1_7": b"HTTP/1.1 200 OK\r\nContent-Length: 1_7\r\n\r\n{}",
    "chunk size 0x5": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n"
    ),
    "bytes other than CRLF after chunk data": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX0\r\n\r\n"
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_framing_is_an_error_quickly_and_never_data(serve, case):
    server = serve(one_answer(MALFORMED[case]))
    http = layer(server.address)
    cpu, wall = time.process_time(), time.monotonic()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(TransportError) as err:
        http.json("GET", "/framed")
    http.close()
    assert time.monotonic() - wall < 3
    assert time.process_time() - cpu < 2
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 50_000  # KiB
    assert "malformed" in str(err.value)
    assert len(server.requests()) == 1  # a malformed answer is not asked for again


def test_an_unknown_transfer_coding_is_never_parsed_as_chunked_nor_reused(serve):
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunkedx\r\n\r\n5\r\nhello\r\n0\r\n\r\n"

    def handler(peer: Peer) -> None:
        if peer.number == 1:
            one_answer(raw, close_after=0.2)(peer)
        else:
            keep_answering(peer)

    server = serve(handler)
    http = layer(server.address)
    try:
        got = http.request("GET", "/odd").content
    except TransportError:
        got = None
    assert got != b"hello"  # read to the close as RFC 9112 allows, or refused
    assert http.json("GET", "/next") == {"ok": True}
    http.close()
    assert server.connections == 2  # the connection was not reused


def test_a_huge_header_is_refused_quickly(serve):
    server = serve(one_answer(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 1_000_000 + b"\r\n\r\n"))
    http = layer(server.address)
    started = time.monotonic()
    with pytest.raises(TransportError):
        http.json("GET", "/big")
    http.close()
    assert time.monotonic() - started < 3


def test_an_endless_header_is_cut_off(serve):
    def endless(peer: Peer) -> None:
        if peer.request() is None:
            return
        peer.send(b"HTTP/1.1 200 OK\r\n")
        for i in range(100_000):
            if not peer.send(f"X-More-{i}: yes\r\n".encode()):
                return
            time.sleep(0.001)

    server = serve(endless)
    http = layer(server.address, timeout=1.0, retry=RetryPolicy(attempts=1))
    started = time.monotonic()
    with pytest.raises(TransportError):
        http.json("GET", "/endless")
    http.close()
    assert time.monotonic() - started < 3


def test_a_drip_of_100_continue_answers_meets_the_deadline(serve):
    def drip(peer: Peer) -> None:
        if peer.request() is None:
            return
        while peer.send(b"HTTP/1.1 100 Continue\r\n\r\n"):
            time.sleep(0.1)

    server = serve(drip)
    http = layer(server.address, timeout=1.0, retry=RetryPolicy(attempts=1))
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        http.json("GET", "/drip")
    http.close()
    assert 0.9 < time.monotonic() - started < 3


def test_an_answer_sent_before_the_body_was_read_is_the_answer(serve):
    def early(peer: Peer) -> None:
        seen = peer.request(body=False)
        if seen is None:
            return
        peer.send(answer(400, b'{"errors": ["too large"]}', "Connection: close"))
        peer.read_rest(int(seen.headers.get("content-length") or 0))

    server = serve(early)
    http = layer(server.address)
    with pytest.raises(BadRequest) as err:
        http.json("POST", "/upload", json={"blob": "x" * 2_000_000})
    http.close()
    assert err.value.messages == ["too large"]
    assert len(server.requests("POST")) == 1


def test_answers_cannot_be_mismatched_one_request_is_in_flight_per_connection(serve):
    def echo(peer: Peer) -> None:
        while (seen := peer.request()) is not None:
            time.sleep(0.002 * (seen.connection % 3))  # slow and fast connections
            peer.send(answer(200, b'{"path": "%s"}' % seen.target.encode()))

    server = serve(echo)
    http = layer(server.address, max_concurrency=4)
    paths = [f"/p{i}" for i in range(80)]
    got = [r.json()["path"] for r in http.many(Request("GET", p) for p in paths)]
    http.close()
    assert got == ["/v1" + p for p in paths]
    assert not any(s.ahead for s in server.seen)


# -- TLS ----------------------------------------------------------------------------------


@pytest.fixture
def tls(tmp_path) -> tuple[str, ssl.SSLContext]:
    ca, cert, key = certificate_files(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return str(ca), context


def test_a_certificate_for_another_name_is_a_tls_error(serve, tls):
    ca_file, context = tls
    server = serve(keep_answering, context)
    # The certificate names 127.0.0.1 only; "localhost" is another name.
    http = HTTPLayer(
        f"https://localhost:{server.port}", "/v1", tls=ClientTLS(ca_file=ca_file), retry=FAST
    )
    with pytest.raises(TLSError):
        http.json("GET", "/x")
    http.close()
    assert server.requests() == []


# -- redirects ----------------------------------------------------------------------------


def standby_of(leader: str, location: str | None = None) -> Callable[[Peer], None]:
    """A standby node: names ``leader`` in sys/leader, redirects everything else there."""

    def handler(peer: Peer) -> None:
        while (seen := peer.request()) is not None:
            if seen.target == "/v1/sys/leader":
                body = b'{"ha_enabled": true, "is_self": false, "leader_address": "%s"}' % (
                    leader.encode()
                )
                peer.send(answer(200, body))
            else:
                where = location if location is not None else leader + seen.target
                peer.send(answer(307, b"", f"Location: {where}"))

    return handler


def test_a_standby_redirect_is_followed_once_to_the_leader(serve):
    leader = serve(keep_answering)
    standby = serve(standby_of(leader.address))
    with SecretsClient(standby.address, TOKEN, retry=FAST, timeout=2) as client:
        answer_ = client.http.json("POST", "/auth/token/create", json={"policies": ["x"]})
    assert answer_ == {"ok": True}
    assert [s.target for s in leader.seen] == ["/v1/auth/token/create"]
    assert leader.seen[0].headers["x-vault-token"] == TOKEN
    asked = [s for s in standby.seen if s.target == "/v1/sys/leader"]
    assert len(asked) == 1 and "x-vault-token" not in asked[0].headers
    assert len(standby.requests("POST")) == 1


def test_a_redirect_to_a_host_that_is_not_the_leader_raises_and_sends_it_no_token(serve):
    leader = serve(keep_answering)
    stranger = serve(keep_answering)
    standby = serve(standby_of(leader.address, location=stranger.address + "/v1/sys/mounts"))
    with (
        SecretsClient(standby.address, TOKEN, retry=FAST, timeout=2) as client,
        pytest.raises(Redirected) as err,
    ):
        client.mounts()
    assert "not the active node" in str(err.value)
    assert stranger.seen == [] and leader.seen == []


def test_a_standby_redirect_from_https_to_http_is_refused(serve, tls):
    ca_file, context = tls
    leader = serve(keep_answering)  # plain http
    standby = serve(standby_of(leader.address), context)
    with (
        SecretsClient(standby.address, TOKEN, ca_file=ca_file, retry=FAST, timeout=2) as client,
        pytest.raises(Redirected) as err,
    ):
        client.seal.status()
    assert "https to http" in str(err.value)
    assert leader.seen == []


def test_a_second_redirect_is_not_followed(serve):
    elsewhere = serve(keep_answering)
    leader = serve(standby_of(elsewhere.address))  # the "leader" redirects too
    standby = serve(standby_of(leader.address))
    with (
        SecretsClient(standby.address, TOKEN, retry=FAST, timeout=2) as client,
        pytest.raises(Redirected) as err,
    ):
        client.seal.status()
    assert "only one redirect" in str(err.value)
    assert elsewhere.seen == []


def test_other_redirects_raise_for_both_clients(serve):
    target = serve(keep_answering)

    def moved(peer: Peer) -> None:
        while peer.request() is not None:
            peer.send(answer(302, b"", f"Location: {target.address}/elsewhere"))

    server = serve(moved)
    with (
        SecretsClient(server.address, TOKEN, retry=FAST, timeout=2) as client,
        pytest.raises(Redirected) as err,
    ):
        client.seal.status()
    assert err.value.status == 302
    with (
        PlatformClient(server.address, TOKEN, retry=FAST, timeout=2) as platform,
        pytest.raises(Redirected),
    ):
        platform.ping()
    assert target.seen == []


# -- secrets in what is raised -------------------------------------------------------------

SECRETS = {
    "share": "share-7b1d0e5e2c9f4a8bb1c3d5e7f9a0b2c4",
    "password": "password-Qx9!vR2#mT7@kL4$",
    "token": "s.client-token-4e8a2c6f1b3d5e7a",
}


def _raised(call: Callable[[], object]) -> ToolkitError:
    try:
        call()
    except ToolkitError as exc:
        return exc
    raise AssertionError("the call did not fail")


def _shows(exc: BaseException) -> str:
    """Everything a traceback with its frames' locals would show."""
    return "".join(traceback.TracebackException.from_exception(exc, capture_locals=True).format())


@pytest.mark.parametrize("behaviour", ["close after reading", "answer 400", "never answer"])
def test_errors_of_writes_carrying_secrets_hold_no_secret_in_their_frames(serve, behaviour):
    def handler(peer: Peer) -> None:
        while peer.request() is not None:
            if behaviour == "close after reading":
                peer.sock.close()
                return
            if behaviour == "answer 400":
                peer.send(answer(400, b'{"errors": ["refused"]}'))
            else:
                time.sleep(1.5)
                return

    server = serve(handler)
    client = SecretsClient(
        server.address, SECRETS["token"], retry=RetryPolicy(attempts=1), timeout=0.5
    )
    calls = {
        "rekey update": lambda: client.rekey.update(SECRETS["share"], "nonce"),
        "unseal": lambda: client.seal.unseal(SECRETS["share"]),
        "token create": lambda: client.tokens.create(["default"], "1h"),
        "directory bind password": lambda: client.ad.configure("cn=admin", SECRETS["password"]),
        "database password": lambda: client.database.configure_connection(
            "db", "postgresql-database-plugin", password=SECRETS["password"]
        ),
    }
    for name, call in calls.items():
        shown = _shows(_raised(call))
        for label, secret in SECRETS.items():
            assert secret not in shown, f"{name}: the {label} shows in its error's traceback"
    client.close()
    assert server.requests(), "the writes reached the server"


# -- the loop ------------------------------------------------------------------------------


def test_calls_work_from_a_thread_whose_own_event_loop_is_running(serve):
    """As in Jupyter, where the kernel's loop runs in the calling thread."""
    import asyncio

    server = serve(keep_answering)
    http = layer(server.address)
    found: list[Any] = []

    async def notebook_cell() -> None:
        found.append(http.json("GET", "/x"))
        found.extend(r.status_code for r in http.many([Request("GET", "/y")] * 3))

    thread = threading.Thread(target=lambda: asyncio.run(notebook_cell()))
    thread.start()
    thread.join(10)
    http.close()
    assert found == [{"ok": True}, 200, 200, 200]


def test_a_fan_out_has_a_deadline_of_its_own(serve):
    def slow(peer: Peer) -> None:
        while peer.request() is not None:
            time.sleep(0.3)
            peer.send(answer(200, b'{"ok": true}'))

    server = serve(slow)
    http = layer(server.address, max_concurrency=2, fan_out_timeout=1.0)
    started = time.monotonic()
    got: list[int] = []
    with pytest.raises(TimeoutError, match="fan-out"):
        got.extend(r.status_code for r in http.many([Request("GET", "/slow")] * 20))
    http.close()
    assert time.monotonic() - started < 2.5
    assert 2 <= len(got) < 20  # the answers in before the deadline came out first
