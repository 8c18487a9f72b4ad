"""The HTTP layer against hostile servers: cases a second reading of issue 24's
change found. Every server is a scripted socket server (tests/_sockets.py);
every case ends within the layer's own deadlines, a second or two.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import traceback

import pytest

from tests._http.test_hostile_servers import TOKEN, keep_answering, layer, serve, tls
from tests._http.test_hostile_servers_bounds import exit_code
from tests._sockets import Peer, answer
from toolkit import ConfigurationError, OutcomeUnknown, ProtocolError, Redirected, TimeoutError
from toolkit._http import transport as transport_module
from toolkit._tls import ClientTLS
from toolkit.secrets.standby import FollowStandby

__all__ = ["serve", "tls"]  # the scripted servers' fixture, shared with the first round


@pytest.fixture(autouse=True, scope="module")
def _aiohttp_imported() -> None:
    """The first call of a process imports aiohttp (half a second on a busy
    machine), inside that call's time: not the time of whichever case runs first."""
    import aiohttp  # noqa: F401


@pytest.mark.parametrize(
    ("location", "leader"),
    [
        ("http://[::1", "http://127.0.0.1:1"),  # urlsplit: "Invalid IPv6 URL"
        ("http://127.0.0.1:1/v1/sys/health", "http://[zz]/"),  # not an address
        ("http://bad host:8200/v1/x", "http://bad host:8200"),  # yarl: no host name
    ],
)
def test_a_standby_redirect_to_an_address_that_does_not_parse_is_a_redirected_error(
    serve, location, leader
):
    """A raw ValueError once escaped from the redirect rule, with the layer's
    frames (their revealed token headers) in its traceback."""

    def handler(peer: Peer) -> None:
        while (seen := peer.request()) is not None:
            if seen.target == "/v1/sys/leader":
                peer.send(answer(200, f'{{"leader_address": "{leader}"}}'.encode()))
            else:
                peer.send(answer(307, b"", f"Location: {location}"))

    server = serve(handler)
    http = layer(server.address, redirects=FollowStandby())
    with pytest.raises(Redirected) as err:
        http.request("GET", "/secret/data/app")
    http.close()
    assert "not followed" in str(err.value)
    shown = "".join(
        traceback.TracebackException.from_exception(err.value, capture_locals=True).format()
    )
    assert TOKEN not in shown


def test_a_call_timeout_shorter_than_the_timeout_bounds_the_first_try(serve):
    """``call_timeout`` bounds the whole call: the first try once had the
    per-try ``timeout`` whatever the call had left."""

    def silent(peer: Peer) -> None:
        peer.request()
        time.sleep(3)

    server = serve(silent)
    http = layer(server.address, timeout=5.0, call_timeout=0.3)
    started = time.perf_counter()
    with pytest.raises(TimeoutError):
        http.request("GET", "/sys/health")
    http.close()
    assert time.perf_counter() - started < 1.5


@pytest.mark.parametrize(
    ("method", "error"), [("POST", OutcomeUnknown), ("GET", ConfigurationError)]
)
def test_a_call_in_flight_when_the_client_is_closed_fails_as_its_method_allows(
    serve, method, error
):
    """A POST whose bytes left before close() is an unknown outcome (it was a
    ConfigurationError: its caller could read "closed" as "not done"); a GET
    says the client was closed."""
    arrived = threading.Event()

    def slow(peer: Peer) -> None:
        peer.request()
        arrived.set()
        time.sleep(3)

    server = serve(slow)
    http = layer(server.address)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            http.request(method, "/sys/rotate")
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert arrived.wait(2)
    http.close()
    caller.join(3)
    assert not caller.is_alive()
    assert isinstance(outcome[0], error), outcome
    assert len(server.requests()) == 1


@pytest.mark.parametrize(
    "raw",
    [
        "HTTP/1.1 4000 {token}\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: {token}\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{token}\r\n",
    ],
    ids=["status line", "content-length", "chunk size"],
)
def test_a_token_echoed_in_a_broken_answer_is_in_no_frame_of_the_error(serve, raw):
    """aiohttp's parser quotes the broken line: the message was masked, but the
    layer's frames held the unmasked reason (their Failure)."""

    def handler(peer: Peer) -> None:
        if peer.request() is not None:
            peer.send(raw.format(token=TOKEN).encode())

    server = serve(handler)
    http = layer(server.address)
    with pytest.raises(ProtocolError) as err:
        http.request("GET", "/sys/health")
    http.close()
    shown = "".join(
        traceback.TracebackException.from_exception(err.value, capture_locals=True).format()
    )
    assert "<hidden>" in str(err.value)
    assert TOKEN not in shown


@pytest.mark.slow  # it starts a process (a fork)
def test_what_a_forked_child_drops_of_the_parents_engine_says_nothing_on_its_connections(
    serve, tls
):
    """The child keeps the parent's loop and its kept TLS connection; when those
    are collected (the child's interpreter ending), aiohttp closes the idle
    connection, and a TLS close once wrote a close_notify from the child's copy
    of the session: the server ended the parent's connection."""
    ca_file, context = tls
    server = serve(keep_answering, context)
    http = layer(server.address, tls=ClientTLS(ca_file=ca_file))
    http.request("GET", "/sys/health")  # a kept TLS connection
    pid = os.fork()
    if pid == 0:  # the child: lets go of what the parent's engine left, as its end would
        code = 1
        try:
            transport_module._ORPHANS.clear()
            gc.collect()
            code = 0
        finally:
            os._exit(code)
    assert exit_code(pid) == 0
    time.sleep(0.05)  # a close_notify, had it been sent, reaches the server
    http.request("GET", "/sys/health")
    http.close()
    assert server.connections == 1  # the parent's connection went on


def test_a_proxy_named_with_credentials_gets_them_for_an_http_server(serve, monkeypatch):
    """An http:// server through ``HTTP_PROXY=http://user:pass@...``: aiohttp sends
    ``proxy_headers`` on a CONNECT only, so the credentials once never reached
    the proxy (407) unless given as ``proxy_auth``."""

    def proxy(peer: Peer) -> None:
        while (seen := peer.request()) is not None:
            given = seen.headers.get("proxy-authorization")
            peer.send(answer(200, b"{}") if given else answer(407, b"{}"))

    server = serve(proxy)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://operator:pr0xy-pass@127.0.0.1:{server.port}")
    http = layer("http://secrets.example:8200")
    http.request("GET", "/sys/health")
    http.close()
    (seen,) = server.requests()
    assert seen.target == "http://secrets.example:8200/v1/sys/health"  # it went by the proxy
    assert seen.headers["proxy-authorization"] == "Basic b3BlcmF0b3I6cHIweHktcGFzcw=="
