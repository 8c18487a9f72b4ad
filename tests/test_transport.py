"""The per-thread connection transport against a real socket server that answers as scripted.

Each test scripts the raw bytes of the answers, so the framing cases a server
may send (chunked bodies, no length, ``Connection: close``, an interim 100, a
kept-alive connection closed while idle) are exercised over a real socket.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import httpx
import pytest

from tests._sockets import read_request
from toolkit import RetryPolicy, TransportError
from toolkit._http import HTTPLayer
from toolkit._transport import ThreadConnectionTransport


class Scripted:
    """A one-thread TCP server: answers each request with the next scripted bytes.

    A script entry ``(answer, close)`` sends ``answer`` and then closes the
    connection when ``close`` is true. ``connections`` counts accepted sockets.
    """

    def __init__(self, script: list[tuple[bytes, bool]]) -> None:
        self.script = list(script)
        self.connections = 0
        self.requests: list[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.script:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                buffer = b""
                while self.script:
                    request = read_request(conn, buffer)
                    if request is None:
                        break
                    head, buffer = request
                    self.requests.append(head)
                    answer, close = self.script.pop(0)
                    conn.sendall(answer)
                    if close:
                        break

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.sock.close()


@pytest.fixture
def serve() -> Iterator[list[Scripted]]:
    servers: list[Scripted] = []
    yield servers
    for s in servers:
        s.stop()


def scripted(serve: list[Scripted], *script: tuple[bytes, bool]) -> Scripted:
    server = Scripted(list(script))
    serve.append(server)
    return server


def ok(body: bytes, *headers: str) -> bytes:
    extra = "".join(f"{h}\r\n" for h in headers).encode()
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + extra
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def test_a_connection_is_kept_alive_across_requests(serve):
    server = scripted(serve, (ok(b'{"n": 1}'), False), (ok(b'{"n": 2}'), False))
    http = HTTPLayer(server.address, "/v1")
    assert [http.json("GET", "/a")["n"], http.json("GET", "/b")["n"]] == [1, 2]
    assert server.connections == 1


def test_a_chunked_answer_is_put_together(serve):
    chunked = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'5\r\n{"a":\r\n4;ext=1\r\n [1,\r\n3\r\n 2]\r\n1\r\n}\r\n0\r\n\r\n'
    )
    server = scripted(serve, (chunked, False), (ok(b"{}"), False))
    http = HTTPLayer(server.address, "/v1")
    assert http.json("GET", "/c") == {"a": [1, 2]}
    assert http.json("GET", "/d") == {}
    assert server.connections == 1


def test_an_answer_without_length_is_read_to_the_close(serve):
    server = scripted(
        serve,
        (b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"all": true}', True),
        (ok(b'{"next": true}'), False),
    )
    http = HTTPLayer(server.address, "/v1")
    assert http.json("GET", "/e") == {"all": True}
    assert http.json("GET", "/f") == {"next": True}
    assert server.connections == 2


def test_connection_close_opens_a_new_connection_for_the_next_request(serve):
    server = scripted(serve, (ok(b"[1]", "Connection: close"), True), (ok(b"[2]"), False))
    http = HTTPLayer(server.address, "/v1")
    assert http.json("GET", "/g") == [1]
    assert http.json("GET", "/h") == [2]
    assert server.connections == 2


def test_an_idle_connection_the_server_closed_is_replaced_without_an_error(serve):
    # The server answers and then closes without saying so, as a server does
    # when a kept-alive connection sits idle past its timeout.
    server = scripted(serve, (ok(b"[1]"), True), (ok(b"[2]"), False))
    http = HTTPLayer(server.address, "/v1", retry=RetryPolicy(attempts=1))
    assert http.json("GET", "/i") == [1]
    assert http.json("POST", "/j", json={}) == [2]
    assert server.connections == 2
    assert len(server.requests) == 2


def test_an_interim_100_continue_is_skipped(serve):
    server = scripted(serve, (b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b'"final"'), False))
    http = HTTPLayer(server.address, "/v1")
    assert http.json("PUT", "/k", json={"x": 1}) == "final"


def test_head_and_204_answers_carry_no_body(serve):
    server = scripted(
        serve,
        (b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", False),
        (b"HTTP/1.1 204 No Content\r\n\r\n", False),
        (ok(b"[3]"), False),
    )
    http = HTTPLayer(server.address, "/v1")
    assert http.request("HEAD", "/l").content == b""
    assert http.json("DELETE", "/m") is None
    assert http.json("GET", "/n") == [3]
    assert server.connections == 1


def test_an_answer_cut_short_is_a_transport_error_naming_the_address(serve):
    server = scripted(
        serve,
        (b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"partial"', True),
    )
    http = HTTPLayer(server.address, "/v1", retry=RetryPolicy(attempts=1))
    with pytest.raises(TransportError) as err:
        http.json("GET", "/o")
    assert server.address in str(err.value)


def test_the_request_carries_method_target_headers_and_body(serve):
    server = scripted(serve, (ok(b"{}"), False))
    http = HTTPLayer(server.address, "/v1", headers={"X-Vault-Token": "t-1"})
    http.json("PUT", "/sys/leases/lookup", json={"lease_id": "a/b"}, params={"q": "x y"})
    head = server.requests[0].decode()
    assert head.startswith("PUT /v1/sys/leases/lookup?q=x+y HTTP/1.1\r\n")
    lower = head.lower()
    assert "x-vault-token: t-1" in lower
    assert "content-type: application/json" in lower
    assert f"host: 127.0.0.1:{server.port}" in lower


def test_the_transport_serves_httpx_clients_too(serve):
    server = scripted(serve, (ok(b'{"via": "httpx"}'), False))
    with httpx.Client(transport=ThreadConnectionTransport()) as client:
        assert client.get(f"{server.address}/x").json() == {"via": "httpx"}


def test_an_answer_only_the_standard_decoder_takes_is_still_decoded(serve):
    # orjson refuses the NaN a lenient server may write; the standard decoder takes it.
    server = scripted(serve, (ok(b'{"ratio": NaN, "n": 1}'), False))
    http = HTTPLayer(server.address, "/v1")
    answer = http.json("GET", "/q")
    assert answer["n"] == 1 and answer["ratio"] != answer["ratio"]
