"""A lean HTTP/1.1 connection layer under httpx: blocking per thread, or many at once.

httpx stays the client API (requests, responses, timeouts, errors are httpx's);
this replaces only the connection layer under it. httpcore's pool does work for
every request in proportion to the requests waiting on it, and its sync path
costs several times the CPU of the exchange itself; on a two-core machine that
shares the cores with the server, client CPU is server time lost.

Two ways of sending, over the same connection and answer-parsing code:

- :class:`ThreadConnectionTransport` is an ``httpx.BaseTransport``: one request,
  one answer, on a keep-alive connection the calling thread owns outright (no
  pool, no locks; a request is one ``sendall`` and a buffered read).
- :meth:`ThreadConnectionTransport.fan_out` returns a :class:`FanOut`: many
  requests over up to ``n`` non-blocking connections, driven from the calling
  thread by one ``selectors`` loop. No thread switches and no lock per request:
  the client's CPU per request is close to a hand-written socket loop's, which
  leaves the cores to the server. Connections left idle are kept for the next
  fan-out.

What it does: plain and TLS connections (the caller's ``ssl.SSLContext``),
``Content-Length``, chunked and read-to-close bodies, answers without a body
(HEAD, 1xx, 204, 304), ``Connection: close``, and a fresh-connection retry when
a kept-alive connection turns out closed before any byte of the answer arrived
(the server dropped it while idle). What it leaves to httpx's own transport:
proxies (the HTTP layer uses httpx's transport when the environment names one).
"""

from __future__ import annotations

import contextlib
import errno
import selectors
import socket
import ssl
import threading
import time
from collections import deque
from typing import Any

import httpx

__all__ = ["FanOut", "ThreadConnectionTransport"]

_NO_BODY_STATUSES = frozenset({204, 304})
_READ_SIZE = 262144
_HEAD_LIMIT = 1 << 20
# Idle fan-out connections kept per transport for the next fan-out.
_IDLE_LIMIT = 64

Origin = tuple[str, str, int]


class _Closed(Exception):
    """The stream ended; ``partial`` when some bytes of an answer had arrived."""

    def __init__(self, partial: bool) -> None:
        super().__init__("closed")
        self.partial = partial


class _Connection:
    """One socket to one origin, with a read buffer and the answer being parsed.

    ``used``: it has carried a request (a thread's connection). In a fan-out it
    also holds the requests sent and not yet answered (``inflight``), the bytes
    not yet written (``out``), its state (``connecting``, ``handshake``,
    ``open``, ``closed``), and ``kept``: taken from the idle list with no answer read since.
    """

    __slots__ = (
        "sock",
        "buffer",
        "origin",
        "used",
        "kept",
        "head",
        "inflight",
        "out",
        "state",
        "deadline",
        "events",
    )

    def __init__(self, sock: socket.socket, origin: Origin) -> None:
        self.sock = sock
        self.buffer = bytearray()
        self.origin = origin
        self.used = False
        self.kept = False
        self.head: _Head | None = None
        self.inflight: deque[tuple[Any, httpx.Request]] = deque()
        self.out = b""
        self.state = "open"
        self.deadline = 0.0
        self.events = 0

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def fill(self) -> bool:
        """Read more bytes into the buffer (blocking); False at end of stream."""
        chunk = self.sock.recv(_READ_SIZE)
        if not chunk:
            return False
        self.buffer += chunk
        return True


# -- answers -------------------------------------------------------------------------------


class _Head:
    """The parsed status line and headers of an answer, and how its body is framed."""

    __slots__ = ("status", "version", "headers", "length", "chunked", "close", "size")

    def __init__(self) -> None:
        self.status = 0
        self.version = b"HTTP/1.1"
        self.headers: list[tuple[bytes, bytes]] = []
        self.length: int | None = None
        self.chunked = False
        self.close = False
        self.size = 0


def _parse_head(buffer: bytearray) -> _Head | None:
    """The head at the start of ``buffer`` (then removed), or None while incomplete.

    Interim answers (1xx but 101) are dropped on the way.
    """
    while True:
        at = buffer.find(b"\r\n\r\n")
        if at < 0:
            if len(buffer) > _HEAD_LIMIT:
                raise httpx.RemoteProtocolError("the answer's header section is too long")
            return None
        lines = bytes(buffer[:at]).split(b"\r\n")
        del buffer[: at + 4]
        status_line = lines[0].split(b" ", 2)
        if len(status_line) < 2 or not status_line[0].startswith(b"HTTP/"):
            raise httpx.RemoteProtocolError(f"not an HTTP answer: {lines[0][:60]!r}")
        try:
            status = int(status_line[1])
        except ValueError:
            raise httpx.RemoteProtocolError(f"bad status line: {lines[0][:60]!r}") from None
        if status < 200 and status != 101:
            continue  # an interim answer (100 Continue); the final one follows
        head = _Head()
        head.status = status
        head.version = status_line[0]
        head.close = status_line[0] == b"HTTP/1.0"
        headers = head.headers
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep:
                raise httpx.RemoteProtocolError(f"bad header line: {line[:60]!r}")
            value = value.strip()
            headers.append((name, value))
            lower = name.lower()
            if lower == b"content-length":
                try:
                    head.length = int(value)
                except ValueError:
                    raise httpx.RemoteProtocolError("bad Content-Length") from None
            elif lower == b"transfer-encoding":
                head.chunked = b"chunked" in value.lower()
            elif lower == b"connection":
                token = value.lower()
                head.close = b"close" in token or (head.close and b"keep-alive" not in token)
        return head


def _take_body(buffer: bytearray, head: _Head, method: str, eof: bool) -> bytes | None:
    """The body of ``head``'s answer from ``buffer`` (then removed), or None while incomplete."""
    if method == "HEAD" or head.status in _NO_BODY_STATUSES:
        return b""
    if head.chunked:
        return _take_chunked(buffer)
    if head.length is not None:
        if len(buffer) < head.length:
            if eof:
                raise httpx.RemoteProtocolError("the server closed the connection mid-answer")
            return None
        body = bytes(buffer[: head.length])
        del buffer[: head.length]
        return body
    if not eof:
        return None  # read to close
    head.close = True
    body = bytes(buffer)
    buffer.clear()
    return body


def _take_chunked(buffer: bytearray) -> bytes | None:
    parts: list[bytes] = []
    at = 0
    while True:
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            return None
        try:
            size = int(bytes(buffer[at:line_end]).split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise httpx.RemoteProtocolError("bad chunk size") from None
        at = line_end + 2
        if size == 0:
            # Trailers (rare) end with an empty line.
            while True:
                line_end = buffer.find(b"\r\n", at)
                if line_end < 0:
                    return None
                empty = line_end == at
                at = line_end + 2
                if empty:
                    del buffer[:at]
                    return b"".join(parts)
        if len(buffer) < at + size + 2:
            return None
        parts.append(bytes(buffer[at : at + size]))
        at += size + 2


def _response(head: _Head, body: bytes, request: httpx.Request) -> httpx.Response:
    response = httpx.Response(
        head.status,
        headers=head.headers,
        stream=httpx.ByteStream(body),
        extensions={"http_version": head.version},
        request=request,
    )
    # The body is here already: set it as read() would, without its stream walk.
    response._content = body
    return response


def _head_bytes(request: httpx.Request) -> bytes:
    target = request.url.raw_path
    parts = [request.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        parts += (name, b": ", value, b"\r\n")
    parts.append(b"\r\n")
    return b"".join(parts)


def _origin(url: httpx.URL) -> Origin:
    scheme = url.scheme
    return (scheme, url.host, url.port or (443 if scheme == "https" else 80))


# -- the transport -------------------------------------------------------------------------


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
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    # -- connections -----------------------------------------------------------
    def _context(self) -> ssl.SSLContext:
        return self._ssl_context or ssl.create_default_context()

    def _connection(self, origin: Origin, timeout: float | None) -> _Connection:
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
            try:
                sock = self._context().wrap_socket(sock, server_hostname=host)
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
        self._track(conn)
        return conn

    def _track(self, conn: _Connection) -> None:
        with self._lock:
            if self._closed:
                conn.close()
                raise httpx.ConnectError("the transport is closed")
            self._all.add(conn)

    def _drop(self, conn: _Connection) -> None:
        conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            self._all.discard(conn)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns, self._all, self._idle = list(self._all), set(), []
        for conn in conns:
            conn.close()

    # -- one exchange ----------------------------------------------------------
    def handle_request(self, request: httpx.Request) -> httpx.Response:
        origin = _origin(request.url)
        timeouts = request.extensions.get("timeout") or {}
        connect_timeout = timeouts.get("connect", self._timeout)
        read_timeout = timeouts.get("read", self._timeout)
        head = _head_bytes(request)
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
                if reused and isinstance(exc, ConnectionResetError) and not conn.buffer:
                    continue  # reset while idle: the close reached us as a reset
                raise httpx.ReadError(str(exc) or type(exc).__name__) from exc

    def _answer(self, conn: _Connection, request: httpx.Request) -> httpx.Response:
        buffer = conn.buffer
        while (head := _parse_head(buffer)) is None:
            if not conn.fill():
                raise _Closed(bool(buffer))
        eof = False
        while (body := _take_body(buffer, head, request.method, eof)) is None:
            eof = not conn.fill()
        if head.close:
            self._drop(conn)
        return _response(head, body, request)

    # -- many exchanges --------------------------------------------------------
    def fan_out(self, n: int, *, depth: int = 1) -> FanOut:
        """A :class:`FanOut` over up to ``n`` connections, ``depth`` requests in
        flight on each (more than one pipelines; only for requests safe to repeat)."""
        return FanOut(self, n, depth)

    def _take_idle(self, origin: Origin) -> _Connection | None:
        with self._lock:
            for i in range(len(self._idle) - 1, -1, -1):
                if self._idle[i].origin == origin:
                    return self._idle.pop(i)
        return None

    def _give_idle(self, conn: _Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < _IDLE_LIMIT:
                self._idle.append(conn)
                return
            self._all.discard(conn)
        conn.close()

    def _forget(self, conn: _Connection) -> None:
        conn.state = "closed"
        conn.close()
        with self._lock:
            self._all.discard(conn)


# How many clean closes between answers a pipelined request may meet before
# the next one counts as its failure.
_FREE_CLOSES = 2

Outcome = tuple[Any, httpx.Request, httpx.Response | None, httpx.HTTPError | None]


class FanOut:
    """Many requests over up to ``n`` non-blocking connections, from one thread.

    :meth:`submit` queues a request under a key; :meth:`step` sends what it
    can and waits until some answers (or failures) are in, returning them as
    ``(key, request, response, error)``. Failures are httpx's exceptions: ``ConnectError``,
    ``ConnectTimeout``, ``ReadTimeout``, ``RemoteProtocolError``, ``ReadError``,
    ``WriteError``. A request whose kept-alive connection was found closed before
    any of its answer arrived is sent again on a fresh one. :meth:`close` keeps
    the connections with nothing in flight for the next fan-out.
    """

    def __init__(self, transport: ThreadConnectionTransport, n: int, depth: int = 1) -> None:
        self._transport = transport
        self._n = max(1, n)
        self._depth = max(1, depth)
        self._queue: deque[tuple[Any, httpx.Request]] = deque()
        self._alone: set[int] = set()  # ids of queued requests that go alone
        self._closes: dict[int, int] = {}  # clean closes each request has met
        self._conns: list[_Connection] = []
        self._selector = selectors.DefaultSelector()
        self._done: list[Outcome] = []
        self._addresses: dict[Origin, list[Any]] = {}
        self._flying = 0  # requests sent and not answered, over all connections

    @property
    def pending(self) -> int:
        """Requests queued or in flight."""
        return len(self._queue) + self._flying

    def submit(self, key: Any, request: httpx.Request, *, alone: bool = False) -> None:
        """Queue a request; ``alone``: send it only on a connection with nothing
        in flight (a request tried again, so that a server closing after a few
        answers does not close on it again behind others)."""
        if alone:
            self._alone.add(id(request))
        self._queue.append((key, request))

    def step(self) -> list[Outcome]:
        """Send what can be sent; wait for at least one outcome (unless nothing is pending)."""
        while not self._done and self.pending:
            now = time.monotonic()
            self._dispatch()
            if self._done:
                break
            wait = self._wait(now)
            events = self._selector.select(wait) if self._selector.get_map() else []
            if not events and not self._selector.get_map():
                time.sleep(max(wait or 0.0, 0.0))
            for selected, mask in events:
                self._ready(selected.data, mask)
            self._expire(time.monotonic())
        done, self._done = self._done, []
        return done

    def close(self) -> None:
        """Keep connections with nothing in flight; close the rest."""
        for conn in self._conns:
            with contextlib.suppress(KeyError, ValueError):
                self._selector.unregister(conn.sock)
            if conn.state == "open" and not conn.inflight and not conn.out and not conn.buffer:
                conn.events = 0
                self._transport._give_idle(conn)
            else:
                self._transport._forget(conn)
        self._conns = []
        self._selector.close()

    # -- internals --------------------------------------------------------------
    def _wait(self, now: float) -> float | None:
        deadlines = [c.deadline for c in self._conns if c.inflight or c.state != "open"]
        if not deadlines:
            return None
        return max(min(deadlines) - now, 0.0)

    def _dispatch(self) -> None:
        """Put queued requests on connections with room, opening connections as needed."""
        while self._queue:
            alone = id(self._queue[0][1]) in self._alone
            conn = self._room(alone)
            if conn is None:
                return
            key, request = self._queue.popleft()
            self._alone.discard(id(request))
            self._send(conn, key, request)

    def _room(self, alone: bool = False) -> _Connection | None:
        """An open connection with room (an empty one for a request that goes
        alone), or a new one while fewer than ``n`` are open."""
        best = None
        for conn in self._conns:
            if conn.state == "open" and len(conn.inflight) < self._depth:
                if not conn.inflight:
                    return conn
                if not alone and (best is None or len(conn.inflight) < len(best.inflight)):
                    best = conn
        if len(self._conns) < self._n:
            origin = _origin(self._queue[0][1].url)
            new = self._transport._take_idle(origin)
            if new is not None:
                new.kept = True  # kept alive: the server may have closed it since
            else:
                new = self._open(origin)
                if new is None:
                    return None
            self._conns.append(new)
            if new.state == "open":
                return new
        return best

    def _open(self, origin: Origin) -> _Connection | None:
        """A new connection, connecting without blocking (None if it failed at once)."""
        key, request = self._queue[0]
        scheme, host, port = origin
        timeouts = request.extensions.get("timeout") or {}
        try:
            addresses = self._addresses.get(origin)
            if addresses is None:
                addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
                self._addresses[origin] = addresses
            family, kind, proto, _, address = addresses[0]
            sock = socket.socket(family, kind, proto)
        except OSError as exc:
            self._queue.popleft()
            self._done.append((key, request, None, httpx.ConnectError(f"{host}:{port}: {exc}")))
            return None
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        code = sock.connect_ex(address)
        conn = _Connection(sock, origin)
        conn.state = "connecting" if code in (errno.EINPROGRESS, errno.EWOULDBLOCK) else "open"
        if code not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
            sock.close()
            self._queue.popleft()
            reason = f"[Errno {code}] {errno.errorcode.get(code, code)}"
            self._done.append((key, request, None, httpx.ConnectError(reason)))
            return None
        try:
            self._transport._track(conn)
        except httpx.ConnectError as exc:
            self._queue.popleft()
            self._done.append((key, request, None, exc))
            return None
        conn.deadline = time.monotonic() + timeouts.get("connect", self._transport._timeout)
        if conn.state == "connecting":
            self._watch(conn, selectors.EVENT_WRITE)
        elif scheme == "https":
            self._start_tls(conn)
        return conn

    def _start_tls(self, conn: _Connection) -> None:
        _, host, _ = conn.origin
        conn.sock = self._transport._context().wrap_socket(
            conn.sock, server_hostname=host, do_handshake_on_connect=False
        )
        conn.state = "handshake"
        self._handshake(conn)

    def _handshake(self, conn: _Connection) -> None:
        try:
            conn.sock.do_handshake()  # type: ignore[attr-defined]
        except ssl.SSLWantReadError:
            self._watch(conn, selectors.EVENT_READ)
            return
        except ssl.SSLWantWriteError:
            self._watch(conn, selectors.EVENT_WRITE)
            return
        except (ssl.SSLError, ssl.CertificateError, OSError) as exc:
            self._fail_connect(conn, httpx.ConnectError(f"SSL: {exc}"))
            return
        conn.state = "open"
        self._watch(conn, selectors.EVENT_READ)

    def _watch(self, conn: _Connection, events: int) -> None:
        if events == conn.events:
            return
        if conn.events and events:
            self._selector.modify(conn.sock, events, conn)
        elif events:
            self._selector.register(conn.sock, events, conn)
        else:
            self._selector.unregister(conn.sock)
        conn.events = events

    def _send(self, conn: _Connection, key: Any, request: httpx.Request) -> None:
        body = request.read()
        payload = _head_bytes(request) + body
        conn.inflight.append((key, request))
        self._flying += 1
        timeouts = request.extensions.get("timeout") or {}
        conn.deadline = time.monotonic() + timeouts.get("read", self._transport._timeout)
        if conn.out:
            conn.out += payload
        else:
            conn.out = payload
            self._write(conn)  # may find the connection broken, and close it
        if conn.state == "open":
            self._watch(conn, selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0))

    def _write(self, conn: _Connection) -> None:
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
            return
        except OSError as exc:
            self._broken(conn, exc, writing=True)
            return
        conn.out = conn.out[sent:]

    def _ready(self, conn: _Connection, mask: int) -> None:
        if conn.state == "connecting":
            code = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                reason = f"[Errno {code}] {errno.errorcode.get(code, code)}"
                self._fail_connect(conn, httpx.ConnectError(reason))
                return
            if conn.origin[0] == "https":
                self._start_tls(conn)
            else:
                conn.state = "open"
                self._watch(conn, selectors.EVENT_READ)
            return
        if conn.state == "handshake":
            self._handshake(conn)
            return
        if mask & selectors.EVENT_WRITE and conn.out:
            self._write(conn)
            if conn.state == "open":
                self._watch(conn, selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out else 0))
        if mask & selectors.EVENT_READ and conn.state == "open":
            self._read(conn)

    def _read(self, conn: _Connection) -> None:
        eof = False
        while True:
            try:
                chunk = conn.sock.recv(_READ_SIZE)
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                break
            except OSError as exc:
                self._broken(conn, exc)
                return
            if not chunk:
                eof = True
                break
            conn.buffer += chunk
            if len(chunk) < _READ_SIZE:
                break
        self._parse(conn, eof)

    def _parse(self, conn: _Connection, eof: bool) -> None:
        buffer = conn.buffer
        while conn.inflight:
            try:
                if conn.head is None:
                    conn.head = _parse_head(buffer)
                    if conn.head is None:
                        break
                key, request = conn.inflight[0]
                body = _take_body(buffer, conn.head, request.method, eof)
            except httpx.RemoteProtocolError as exc:
                self._broken(conn, exc)
                return
            if body is None:
                break
            head, conn.head = conn.head, None
            conn.kept = False  # it answers: a failure from now on is a real one
            conn.inflight.popleft()
            self._flying -= 1
            self._done.append((key, request, _response(head, body, request), None))
            if head.close:
                self._retire(conn)
                return
            conn.deadline = time.monotonic() + self._transport._timeout
        if eof:
            self._broken(conn, None)

    def _grounded(self, conn: _Connection) -> list[tuple[Any, httpx.Request]]:
        """Take the requests in flight off ``conn``."""
        inflight = list(conn.inflight)
        conn.inflight.clear()
        self._flying -= len(inflight)
        return inflight

    def _retire(self, conn: _Connection) -> None:
        """The server closes this connection: what was in flight goes again elsewhere."""
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        self._conns.remove(conn)
        self._transport._forget(conn)
        self._queue.extendleft(reversed(self._grounded(conn)))

    def _broken(self, conn: _Connection, exc: Exception | None, *, writing: bool = False) -> None:
        """The connection failed: its requests fail, or go again if it was idle-closed."""
        stale = conn.kept and not conn.head and not conn.buffer
        inflight = self._grounded(conn)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        if conn in self._conns:
            self._conns.remove(conn)
        self._transport._forget(conn)
        if not inflight:
            return
        if stale:
            # A kept-alive connection the server had closed while idle: nothing of
            # any request was read, so all of them go again on a fresh connection.
            self._queue.extendleft(reversed(inflight))
            return
        error: httpx.HTTPError
        if writing:
            error = httpx.WriteError(str(exc) or "the connection broke while sending")
        elif exc is None:
            error = httpx.RemoteProtocolError(
                "the server closed the connection without a complete answer"
            )
        elif isinstance(exc, httpx.HTTPError):
            error = exc
        else:
            error = httpx.ReadError(str(exc) or type(exc).__name__)
        first = 0
        if exc is None and not conn.head and not conn.buffer and self._depth > 1:
            # A clean close between answers, with pipelined (so repeatable)
            # requests unanswered: a server ending the connection after so many
            # requests. Each goes again, alone on a connection, a few times
            # before its failure counts.
            first = len(inflight)
            for k, (_, request) in enumerate(inflight):
                seen = self._closes.get(id(request), 0)
                if seen >= _FREE_CLOSES:
                    first = k
                    break
                self._closes[id(request)] = seen + 1
        # The first request in flight otherwise takes the failure (the caller
        # decides whether to repeat it). Those pipelined behind it are safe to
        # repeat (only such requests are pipelined) and go again at the front.
        again = inflight[:first] + inflight[first + 1 :]
        if first < len(inflight):
            key, request = inflight[first]
            self._done.append((key, request, None, error))
        for _, request in again:
            self._alone.add(id(request))
        self._queue.extendleft(reversed(again))

    def _fail_connect(self, conn: _Connection, error: httpx.HTTPError) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn.sock)
        if conn in self._conns:
            self._conns.remove(conn)
        self._transport._forget(conn)
        # The request that opened it waits in the queue: it fails with the connection.
        if self._queue:
            key, request = self._queue.popleft()
            self._done.append((key, request, None, error))

    def _expire(self, now: float) -> None:
        for conn in list(self._conns):
            if (conn.inflight or conn.state != "open") and conn.deadline <= now:
                if conn.state != "open":
                    self._fail_connect(conn, httpx.ConnectTimeout("connecting timed out"))
                else:
                    conn.kept = False  # a silent server, not a stale connection
                    self._broken(conn, httpx.ReadTimeout("reading the answer timed out"))
