"""A lean HTTP/1.1 transport for httpx: one keep-alive connection per thread.

httpx stays the client API (requests, responses, timeouts, errors are httpx's);
this replaces only the connection layer under it. httpcore's pool does work for
every request in proportion to the requests waiting on it, and its sync path
costs several times the CPU of the exchange itself; on a two-core machine that
shares the cores with the server, client CPU is server time lost. Here a
thread owns its socket outright: no pool, no locks, a request is one
``sendall`` and a buffered read of the answer. The HTTP layer fans out with a
thread per connection, so ``max_concurrency`` threads hold at most as many
connections.

What it does: plain and TLS connections (the caller's ``ssl.SSLContext``),
``Content-Length``, chunked and read-to-close bodies, answers without a body
(HEAD, 1xx, 204, 304), ``Connection: close``, and one fresh-connection retry
when a kept-alive connection turns out closed before any byte of the answer
arrived (the server dropped it while idle). What it leaves to httpx's own
transport: proxies (the HTTP layer uses httpx's transport when the
environment names one).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading

import httpx

__all__ = ["ThreadConnectionTransport"]

_NO_BODY_STATUSES = frozenset({204, 304})
_READ_SIZE = 65536


class _Connection:
    """One socket to one origin, with a read buffer."""

    __slots__ = ("sock", "buffer", "origin", "used")

    def __init__(self, sock: socket.socket, origin: tuple[str, str, int]) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.origin = origin
        self.used = False

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def fill(self) -> bool:
        """Read more bytes into the buffer; False at end of stream."""
        chunk = self.sock.recv(_READ_SIZE)
        if not chunk:
            return False
        self.buffer += chunk
        return True

    def read_until(self, marker: bytes, limit: int = 1 << 20) -> bytes:
        start = 0
        while True:
            at = self.buffer.find(marker, start)
            if at >= 0:
                end = at + len(marker)
                data = bytes(self.buffer[:end])
                del self.buffer[:end]
                return data
            if len(self.buffer) > limit:
                raise httpx.RemoteProtocolError("the answer's header section is too long")
            start = max(len(self.buffer) - len(marker) + 1, 0)
            if not self.fill():
                raise _Closed(bool(self.buffer))

    def read_exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            if not self.fill():
                raise httpx.RemoteProtocolError("the server closed the connection mid-answer")
        data = bytes(self.buffer[:n])
        del self.buffer[:n]
        return data

    def read_to_close(self) -> bytes:
        while self.fill():
            pass
        data = bytes(self.buffer)
        self.buffer.clear()
        return data


class _Closed(Exception):
    """The stream ended; ``partial`` when some bytes of an answer had arrived."""

    def __init__(self, partial: bool) -> None:
        super().__init__("closed")
        self.partial = partial


class ThreadConnectionTransport(httpx.BaseTransport):
    """An httpx transport keeping one HTTP/1.1 connection per thread and origin.

    ``ssl_context`` is used for ``https`` origins; ``timeout`` (seconds) bounds
    connecting and each read or write, as httpx's own timeout does.
    """

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None, timeout: float = 30.0) -> None:
        self._ssl_context = ssl_context
        self._timeout = timeout
        self._local = threading.local()
        self._all: set[_Connection] = set()
        self._lock = threading.Lock()
        self._closed = False

    # -- connections -----------------------------------------------------------
    def _connection(self, origin: tuple[str, str, int], timeout: float | None) -> _Connection:
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is not None and conn.origin == origin:
            return conn
        if conn is not None:
            self._drop(conn)
        scheme, host, port = origin
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out") from exc
        except OSError as exc:
            raise httpx.ConnectError(f"[Errno {exc.errno}] {exc.strerror or exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if scheme == "https":
            context = self._ssl_context or ssl.create_default_context()
            try:
                sock = context.wrap_socket(sock, server_hostname=host)
            except (ssl.SSLError, ssl.CertificateError) as exc:
                sock.close()
                raise httpx.ConnectError(f"SSL: {exc}") from exc
            except TimeoutError as exc:
                sock.close()
                raise httpx.ConnectTimeout(f"TLS handshake with {host}:{port} timed out") from exc
            except OSError as exc:
                sock.close()
                raise httpx.ConnectError(f"SSL handshake failed: {exc}") from exc
        conn = _Connection(sock, origin)
        self._local.conn = conn
        with self._lock:
            if self._closed:
                conn.close()
                raise httpx.ConnectError("the transport is closed")
            self._all.add(conn)
        return conn

    def _drop(self, conn: _Connection) -> None:
        conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            self._all.discard(conn)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns, self._all = list(self._all), set()
        for conn in conns:
            conn.close()

    # -- one exchange ----------------------------------------------------------
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme = url.scheme
        port = url.port or (443 if scheme == "https" else 80)
        origin = (scheme, url.host, port)
        timeouts = request.extensions.get("timeout") or {}
        connect_timeout = timeouts.get("connect", self._timeout)
        read_timeout = timeouts.get("read", self._timeout)
        head = _head(request)
        body = request.read()
        payload = head + body if len(body) < 65536 else None
        while True:
            conn = self._connection(origin, connect_timeout)
            reused = conn.used
            conn.used = True
            conn.sock.settimeout(read_timeout)
            try:
                if payload is not None:
                    conn.sock.sendall(payload)
                else:
                    conn.sock.sendall(head)
                    conn.sock.sendall(body)
            except TimeoutError as exc:
                self._drop(conn)
                raise httpx.WriteTimeout("writing the request timed out") from exc
            except OSError as exc:
                self._drop(conn)
                if reused:
                    continue  # the server closed the idle connection; the request never left
                raise httpx.WriteError(str(exc) or type(exc).__name__) from exc
            try:
                return self._answer(conn, request)
            except _Closed as closed:
                self._drop(conn)
                if reused and not closed.partial:
                    continue  # closed while idle, before reading the request
                raise httpx.RemoteProtocolError(
                    "the server closed the connection without a complete answer"
                ) from None
            except TimeoutError as exc:
                self._drop(conn)
                raise httpx.ReadTimeout("reading the answer timed out") from exc
            except httpx.HTTPError:
                self._drop(conn)
                raise
            except OSError as exc:
                self._drop(conn)
                raise httpx.ReadError(str(exc) or type(exc).__name__) from exc

    def _answer(self, conn: _Connection, request: httpx.Request) -> httpx.Response:
        while True:
            raw = conn.read_until(b"\r\n\r\n")
            lines = raw[:-4].split(b"\r\n")
            status_line = lines[0].split(b" ", 2)
            if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/"):
                raise httpx.RemoteProtocolError(f"not an HTTP answer: {lines[0][:60]!r}")
            try:
                status = int(status_line[1])
            except ValueError:
                raise httpx.RemoteProtocolError(f"bad status line: {lines[0][:60]!r}") from None
            if status < 200 or status == 101:
                continue  # an interim answer (100 Continue); the final one follows
            break
        headers: list[tuple[bytes, bytes]] = []
        length: int | None = None
        chunked = False
        close = status_line[0] == b"HTTP/1.0"
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                raise httpx.RemoteProtocolError(f"bad header line: {line[:60]!r}")
            value = value.strip()
            headers.append((name, value))
            lower = name.lower()
            if lower == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    raise httpx.RemoteProtocolError("bad Content-Length") from None
            elif lower == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif lower == b"connection":
                token = value.lower()
                close = b"close" in token or (close and b"keep-alive" not in token)
        if request.method == "HEAD" or status in _NO_BODY_STATUSES:
            content = b""
        elif chunked:
            content = _read_chunked(conn)
        elif length is not None:
            content = conn.read_exactly(length)
        else:
            content = conn.read_to_close()
            close = True
        if close:
            self._drop(conn)
        return httpx.Response(
            status,
            headers=headers,
            stream=httpx.ByteStream(content),
            extensions={"http_version": status_line[0]},
        )


def _head(request: httpx.Request) -> bytes:
    target = request.url.raw_path
    parts = [request.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        parts += (name, b": ", value, b"\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


def _read_chunked(conn: _Connection) -> bytes:
    body = bytearray()
    while True:
        size_line = conn.read_until(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise httpx.RemoteProtocolError("bad chunk size") from None
        if size == 0:
            # Trailers (rare) end with an empty line.
            while conn.read_until(b"\r\n") != b"\r\n":
                pass
            return bytes(body)
        body += conn.read_exactly(size + 2)[:-2]
