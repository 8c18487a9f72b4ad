"""How bytes move: one aiohttp session on a private event loop in a daemon thread.

Single calls and fan-outs take the same path. Callers in any thread (a
notebook's, whose own event loop may be running, or a pool's) hand coroutines
to the loop with ``run_coroutine_threadsafe`` and wait for the result, so the
layer works the same inside Jupyter and outside.

aiohttp (with its llhttp C parser) does the framing, connection reuse, TLS
and proxies (``HTTP_PROXY``, ``HTTPS_PROXY``, ``NO_PROXY``); it is imported on
the first request, so that ``import toolkit`` stays light. Its own quiet
re-send of a PUT or DELETE on a kept connection that closed is turned off:
only the layer's policy decides what goes twice. No pipelining: aiohttp sends
one request at a time on a connection.

Every exchange runs under one deadline covering connect, write, the head
(1xx answers included) and the whole body. The deadlines of all exchanges in
flight share one timer (:class:`DeadlineWatch`): a timer handle each, as
aiohttp's ``total`` timeout or an ``asyncio.timeout`` keeps, cost 4% of a
small exchange's CPU. What went wrong comes back as a
:class:`~toolkit._http.policy.Failure` naming its kind; the library's
exception is not kept (its frames hold the request).
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import functools
import math
import os
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from .._errors import ConfigurationError
from .policy import Failure
from .response import Response

__all__ = ["ConnectorFactory", "DeadlineWatch", "Transport"]

T = TypeVar("T")

_NO_PROXY: dict[str, Any] = {}  # a server reached directly: no proxy arguments

# Builds the connector inside the engine's loop (connectors bind to a running loop).
ConnectorFactory = Callable[[], Any]

# Every engine of this process, for the fork hook below.
_ENGINES: weakref.WeakSet[Transport] = weakref.WeakSet()
# In a forked child, what the parent's engines left: kept, never closed here.
_ORPHANS: list[Any] = []


def _after_fork() -> None:
    for engine in list(_ENGINES):
        engine._forked()


os.register_at_fork(after_in_child=_after_fork)


def _refuse_unread(connector: Any) -> None:
    """Make ``connector``'s pool refuse a kept connection that received bytes while
    idle (an answer nobody asked for): aiohttp reuses any connection whose socket
    is open, and every later answer on it would be one out of step.

    aiohttp's protocol already knows such a connection ``should_close`` (it
    parsed the stray bytes into its buffer); the pool asks only
    ``is_connected()`` before reuse and before keeping it, so the protocol
    built for each connection answers that with both (docs/decisions.md,
    "Answers in step"). The protocol class is set on the connector's private
    ``_factory``; a test in tests/_http/test_hostile_servers_bounds.py fails if it
    stops taking effect.
    """
    factory = getattr(connector, "_factory", None)
    if isinstance(factory, functools.partial) and factory.func is _protocol_class().__base__:
        connector._factory = functools.partial(_protocol_class(), *factory.args, **factory.keywords)


@functools.cache
def _protocol_class() -> type:
    from aiohttp.client_proto import ResponseHandler

    class KeptInStep(ResponseHandler):
        """aiohttp's protocol, not reusable once it has bytes nobody asked for."""

        def is_connected(self) -> bool:
            transport = self.transport
            return transport is not None and not transport.is_closing() and not self.should_close

    return KeptInStep


class Transport:
    """A private event loop with one aiohttp session, started on first use.

    ``limit`` bounds the connections kept and opened at once; ``connector``
    replaces the TCP connector aiohttp would build (tests, custom sockets),
    and everything else stays the same. ``max_body`` bounds an answer's body
    as it arrives (its ``Content-Length``, or the bytes read when it is not
    encoded), ``max_decompressed`` the bytes a gzip or deflate body decodes to.

    A forked child gets a fresh engine on its first call (the parent's loop
    has no thread there). :meth:`close` from any thread fails every call in
    flight at once.
    """

    def __init__(
        self,
        *,
        tls: ssl.SSLContext | bool,
        limit: int,
        connector: ConnectorFactory | None = None,
        max_body: int = 256 * 1024 * 1024,
        max_decompressed: int = 256 * 1024 * 1024,
    ) -> None:
        self._tls = tls
        self._limit = limit
        self._connector = connector
        self.max_body = max_body
        self.max_decompressed = max_decompressed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._session: Any = None
        self._lock = threading.Lock()
        self._closed = False
        self._proxies: dict[tuple[str, str, int | None], dict[str, Any]] | None = None
        self._proxy_names: dict[tuple[str, str, int | None], str] = {}
        self._deadlines: DeadlineWatch | None = None
        _ENGINES.add(self)

    @property
    def closed(self) -> bool:
        return self._closed

    def _forked(self) -> None:
        """In a forked child: forget the parent's loop, thread and connections
        (they are the parent's; the next call starts afresh).

        The parent's loop, session and connections are left untouched and kept
        from collection: the loop's selector is shared with the parent across the
        fork, so anything that unregistered a socket from it here (closing a
        connection, or the loop) would stop the parent's answers waking it, and a
        TLS close would send a close_notify on the parent's connection. Marked
        closed (asyncio's and aiohttp's own ``_closed`` flags), neither the loop
        nor the connector closes anything when the child ends; the child's own
        calls run on a new loop. tests/_http/test_hostile_servers_bounds.py checks
        the parent goes on.
        """
        self._lock = threading.Lock()  # it may have been held at the fork
        loop = self._loop
        if loop is not None:
            loop._closed = True  # type: ignore[attr-defined]
            connector = getattr(self._session, "connector", None)
            if connector is not None:
                connector._closed = True
            _ORPHANS.append((loop, self._session))
        self._loop = self._thread = self._session = self._deadlines = None
        self._proxies = None
        self._proxy_names = {}

    # -- the loop --------------------------------------------------------------------------
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is not None:
            return loop
        with self._lock:
            if self._closed:
                raise ConfigurationError("this client was closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=_serve, args=(loop,), name="toolkit-http-loop", daemon=True
                )
                thread.start()
                self._thread = thread
                self._loop = loop
            return self._loop

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule ``coro`` on the loop. When :meth:`close` ran between taking the
        loop and scheduling (the loop may stop before it runs the coroutine), the
        future is cancelled at once instead of never completing."""
        try:
            loop = self.loop()
        except BaseException:
            coro.close()  # never to run: closed here, not left to the collector's warning
            raise
        try:
            future = asyncio.run_coroutine_threadsafe(coro, loop)
        except RuntimeError:  # the loop closed since it was taken: close() ran
            coro.close()
            raise ConfigurationError("this client was closed") from None
        if self._closed:
            future.cancel()
        return future

    def close(self) -> None:
        """Close the connections and stop the loop; every call and fan-out in
        flight is cancelled at once (its caller gets a ConfigurationError)."""
        with self._lock:
            self._closed = True
            loop, self._loop = self._loop, None
            thread, self._thread = self._thread, None
        if loop is None or loop.is_closed():
            return
        if thread is threading.current_thread():
            loop.call_soon(loop.stop)
            return
        with contextlib.suppress(Exception):  # closing is best effort
            asyncio.run_coroutine_threadsafe(self._shut_down(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(5)

    async def _shut_down(self) -> None:
        """Cancel every task in flight (calls, fan-outs), then close the session."""
        here = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not here]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=2)
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    # -- the session ------------------------------------------------------------------------
    def _open_session(self) -> Any:
        import aiohttp  # first use: keeps `import toolkit` light

        connector = (
            self._connector()
            if self._connector is not None
            else aiohttp.TCPConnector(limit=self._limit, limit_per_host=0, ssl=self._tls)
        )
        _refuse_unread(connector)
        session = aiohttp.ClientSession(
            connector=connector,
            # Each exchange has its own deadline (DeadlineWatch).
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=None, sock_read=None),
            # Proxies come from the environment as aiohttp reads them
            # (HTTP_PROXY, HTTPS_PROXY, NO_PROXY), looked up once per server in
            # _proxy_of(): aiohttp's trust_env=True looks them up on every
            # request, some 160 µs each, as much as the exchange itself.
            trust_env=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=True,
            raise_for_status=False,
        )
        # aiohttp re-sends PUT and DELETE once when a kept connection turns out
        # closed (ClientSession._retry_connection, a private attribute; a test
        # in tests/_http/test_hostile_servers.py fails if it stops taking effect).
        # Whether a call goes twice is the layer's decision alone.
        session._retry_connection = False
        # The environment is read once, when the session opens: with no proxy
        # named there (the common case), no request pays for a look-up.
        from aiohttp.helpers import proxies_from_env

        self._proxies = {} if proxies_from_env() else None
        self._proxy_names = {}
        return session

    def _proxy_of(
        self, url: Any, proxies: dict[tuple[str, str, int | None], dict[str, Any]]
    ) -> dict[str, Any]:
        """The proxy arguments (address, credentials) the environment names for ``url``'s server."""
        key = (url.scheme, url.raw_host, url.port)
        found = proxies.get(key)
        if found is None:
            from aiohttp.helpers import get_env_proxy_for_url

            try:
                proxy, auth = get_env_proxy_for_url(url)
                found = {"proxy": proxy}
                if auth is not None:  # as aiohttp 4 will want them (proxy_auth is deprecated)
                    from aiohttp import encode_basic_auth

                    found["proxy_headers"] = {
                        "Proxy-Authorization": encode_basic_auth(auth.login, auth.password)
                    }
                self._proxy_names[key] = _proxy_name(proxy, url.scheme)
            except LookupError:  # none, or NO_PROXY names the host
                found = _NO_PROXY
            proxies[key] = found
        return found

    async def exchange(
        self,
        method: str,
        url: Any,
        headers: Mapping[str, str],
        body: bytes | None,
        deadline: float,
    ) -> Response | Failure:
        """One request and its whole answer within ``deadline`` seconds, or what went wrong."""
        session = self._session
        if session is None:
            if self._closed:
                return Failure("refused", "the client was closed")
            session = self._session = self._open_session()
            self._deadlines = DeadlineWatch(asyncio.get_running_loop())
        deadlines = self._deadlines
        assert deadlines is not None
        task = deadlines.start(deadline)
        answer: Any = None
        try:
            proxies = self._proxies
            proxied = _NO_PROXY if proxies is None else self._proxy_of(url, proxies)
            if "proxy_headers" in proxied and url.scheme == "http":
                # aiohttp sends proxy_headers on a CONNECT (https) only: a request
                # the proxy forwards carries the proxy's credentials itself.
                headers = {**headers, **proxied["proxy_headers"]}
            answer = await session.request(
                method,
                url,
                data=body,
                headers=headers,
                allow_redirects=False,
                **proxied,
            )
            status = answer.status
            if not 200 <= status <= 599:  # 1xx answers are read past by the parser
                answer.close()
                deadlines.stop(task)
                return Failure("malformed", f"the final status {status} is not an answer")
            # The whole body; the connection goes back to the pool at its end. A
            # read that fails or is cancelled closes the answer (and its connection).
            length = answer.content_length
            if (
                length is not None
                and length <= self.max_body
                and not answer.headers.get("Content-Encoding")
            ):
                content = await answer.read()  # the parser reads no more than the length
            else:
                bodiless = method == "HEAD" or status in (204, 304)
                content = await self._read_capped(answer, None if bodiless else length)
        except asyncio.CancelledError:
            if deadlines.stop(task):  # the deadline's cancel, and nobody else's
                return Failure("timeout", f"no answer within {deadline:g} s")
            raise
        except Exception as exc:  # noqa: BLE001 - every library failure becomes a Failure
            if deadlines.stop(task):  # the library turned the deadline's cancel into an error
                return Failure("timeout", f"no answer within {deadline:g} s")
            if isinstance(exc, builtins.TimeoutError):  # the system's own (ETIMEDOUT)
                return Failure("timeout", _reason(exc))
            failure = _failure(exc, answered=answer is not None)
            if proxies:
                key = (url.scheme, url.raw_host, url.port)
                if key in self._proxy_names:
                    return Failure(failure.kind, failure.reason, self._proxy_names[key])
            return failure
        except BaseException:  # an interrupt: the watch lets the task go all the same
            deadlines.stop(task)
            raise
        # A cancel the library swallowed while the answer came in: the answer stands.
        deadlines.stop(task)
        if isinstance(content, Failure):
            return content
        return Response(status, answer.headers, content, method, url)

    async def _read_capped(self, answer: Any, length: int | None) -> bytes | Failure:
        """The body of an answer that may be too large, read a chunk at a time
        (aiohttp inflates a chunk at a time too); the answer and its connection
        are closed at the first byte over the limit."""
        if length is not None and length > self.max_body:
            answer.close()
            return _oversize(f"its Content-Length is {length} bytes", "max_body", self.max_body)
        encoded = bool(answer.headers.get("Content-Encoding"))
        limit, name = (
            (self.max_decompressed, "max_decompressed") if encoded else (self.max_body, "max_body")
        )
        chunks: list[bytes] = []
        size = 0
        stream = answer.content
        while chunk := await stream.readany():
            size += len(chunk)
            if size > limit:
                answer.close()
                what = "its body decodes to more" if encoded else "its body is longer"
                return _oversize(what, name, limit)
            chunks.append(chunk)
        await answer.wait_for_close()  # the request's writer done, the connection back
        return b"".join(chunks)


class DeadlineWatch:
    """The deadlines of the exchanges in flight on one loop, on one timer.

    :meth:`start` notes when the current task's exchange must be over; the
    timer is set for the earliest deadline in flight and, when it fires,
    cancels every task past its deadline (aiohttp's own timeouts cancel the
    task the same way) and is set again for the next. A task still in flight
    :data:`AGAIN` seconds after its cancel (a library swallowed it, as
    aiohappyeyeballs does while it closes a connect's losing attempts) is
    cancelled again. :meth:`stop` ends the watch, takes back the cancels it
    made, and says whether the deadline passed. A new deadline is almost
    never the earliest, so the timer is seldom touched: a fan-out of ten
    thousand exchanges sets it a handful of times instead of ten thousand.
    """

    AGAIN = 0.1
    # The loop runs a timer up to its clock's resolution early.
    _EARLY = max(1e-3, time.get_clock_info("monotonic").resolution)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._due: dict[asyncio.Task[Any], float] = {}
        self._cancels: dict[asyncio.Task[Any], int] = {}  # made by the watch, a task
        self._before: dict[asyncio.Task[Any], int] = {}  # a task's cancels already asked for
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    def start(self, seconds: float) -> asyncio.Task[Any]:
        task = asyncio.current_task(self._loop)
        if task is None:
            raise RuntimeError("an exchange runs in a task of the engine's loop")
        if task.cancelling():  # an exchange in clean-up code after a cancel
            self._before[task] = task.cancelling()
        at = self._loop.time() + seconds
        self._due[task] = at
        if at < self._timer_at:
            self._set_timer(at)
        return task

    def stop(self, task: asyncio.Task[Any]) -> bool:
        """End ``task``'s watch: True when its deadline passed and no one else
        has asked to cancel it meanwhile (the watch's own cancels taken back)."""
        self._due.pop(task, None)
        before = self._before.pop(task, 0) if self._before else 0
        made = self._cancels.pop(task, 0) if self._cancels else 0
        if not made:
            return False
        left = task.cancelling()
        for _ in range(made):
            left = task.uncancel()
        return left <= before

    def _set_timer(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = self._loop.call_at(at, self._fire)

    def _fire(self) -> None:
        self._timer, self._timer_at = None, math.inf
        now = self._loop.time()
        passed = [task for task, at in self._due.items() if at <= now + self._EARLY]
        for task in passed:
            self._cancels[task] = self._cancels.get(task, 0) + 1
            task.cancel()
            self._due[task] = now + self.AGAIN  # cancelled again if it is still in flight then
        following = min(self._due.values(), default=math.inf)
        if following < math.inf:
            self._set_timer(following)


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


def _failure(exc: BaseException, *, answered: bool = False) -> Failure:
    """The kind of a library failure, and a reason worth showing (no request content)."""
    import aiohttp

    reason = _reason(exc)
    if isinstance(exc, aiohttp.ClientConnectorError):
        # No connection (to the server, or to a proxy): nothing of the request was sent.
        tls = isinstance(exc, aiohttp.ClientSSLError) or _has_ssl_cause(exc)
        return Failure("tls" if tls else "connect", reason)
    if isinstance(exc, aiohttp.ClientHttpProxyError):
        # The proxy refused to open a tunnel (CONNECT): nothing reached the server.
        return Failure("connect", f"the proxy answered {exc.status} {exc.message}")
    if not answered and (
        isinstance(exc, aiohttp.InvalidURL)
        or (isinstance(exc, (ValueError, TypeError)) and not isinstance(exc, aiohttp.ClientError))
    ):
        # The library would not build the request (a header or address it cannot
        # carry): refused before anything was sent.
        return Failure("refused", f"the request cannot be sent: {reason}")
    if isinstance(exc, ssl.SSLError) or _has_ssl_cause(exc):
        # A TLS record broken once connected: the request may have left.
        return Failure("dropped", f"TLS failure: {reason}")
    if isinstance(exc, aiohttp.ClientResponseError):
        # The parser refused the answer's head or framing (or a proxy's CONNECT).
        return Failure("malformed", reason)
    if isinstance(exc, aiohttp.ClientPayloadError):
        return Failure("malformed" if "length" not in reason.lower() else "dropped", reason)
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError, OSError)):
        return Failure("dropped", reason)
    return Failure("dropped", f"{type(exc).__name__}: {reason}")


def _oversize(what: str, name: str, limit: int) -> Failure:
    return Failure(
        "oversize",
        f"{what} than this client takes ({name}={limit} bytes); raise {name} "
        "if such answers are expected",
    )


def _proxy_name(proxy: Any, scheme: str) -> str:
    """A proxy's address without its credentials, and the variable naming it."""
    shown = proxy.with_user(None).with_password(None) if proxy.user or proxy.password else proxy
    var = f"{scheme}_proxy"
    var = var if var in os.environ else var.upper()
    return f"{shown} (from {var})"


def _has_ssl_cause(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
