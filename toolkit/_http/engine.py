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
import math
import ssl
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future
from typing import Any, TypeVar

from .._errors import ConfigurationError
from .._tls import client_context
from .policy import Failure
from .response import Response

__all__ = ["ConnectorFactory", "DeadlineWatch", "Engine"]

T = TypeVar("T")

_NO_PROXY: dict[str, Any] = {}  # a server reached directly: no proxy arguments

# Builds the connector inside the engine's loop (connectors bind to a running loop).
ConnectorFactory = Callable[[], Any]


def tls_context(
    verify: bool,
    ca_file: str | None,
    *,
    client_cert: str | None = None,
    client_key: str | None = None,
    server_name: str | None = None,
) -> ssl.SSLContext | bool:
    """What aiohttp takes as ``ssl=``: False for no verification and no client
    certificate, else a context from :func:`toolkit._tls.client_context`."""
    if not verify and not (client_cert or client_key):
        return False
    return client_context(
        verify=verify,
        ca_file=ca_file,
        client_cert=client_cert,
        client_key=client_key,
        server_name=server_name,
    )


class Engine:
    """A private event loop with one aiohttp session, started on first use.

    ``limit`` bounds the connections kept and opened at once; ``connector``
    replaces the TCP connector aiohttp would build (tests, custom sockets),
    and everything else stays the same.
    """

    def __init__(
        self,
        *,
        tls: ssl.SSLContext | bool,
        limit: int,
        connector: ConnectorFactory | None = None,
    ) -> None:
        self._tls = tls
        self._limit = limit
        self._connector = connector
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._session: Any = None
        self._lock = threading.Lock()
        self._closed = False
        self._proxies: dict[tuple[str, str, int | None], dict[str, Any]] | None = None
        self._deadlines: DeadlineWatch | None = None

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

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the engine's loop and wait for its result (from any other thread)."""
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop())
        return future.result(timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop())

    def close(self) -> None:
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
            asyncio.run_coroutine_threadsafe(self._close_session(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(5)

    async def _close_session(self) -> None:
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
                found = {"proxy": proxy, "proxy_auth": auth}
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
            session = self._session = self._open_session()
            self._deadlines = DeadlineWatch(asyncio.get_running_loop())
        deadlines = self._deadlines
        assert deadlines is not None
        task = deadlines.start(deadline)
        try:
            proxies = self._proxies
            answer = await session.request(
                method,
                url,
                data=body,
                headers=headers,
                allow_redirects=False,
                **(_NO_PROXY if proxies is None else self._proxy_of(url, proxies)),
            )
            # The whole body; the connection goes back to the pool at its end. A
            # read that fails or is cancelled closes the answer (and its connection).
            content = await answer.read()
        except asyncio.CancelledError:
            if deadlines.stop(task):  # the deadline's cancel, and nobody else's
                return Failure("timeout", f"no answer within {deadline:g} s")
            raise
        except Exception as exc:  # noqa: BLE001 - every library failure becomes a Failure
            if deadlines.stop(task):  # the library turned the deadline's cancel into an error
                return Failure("timeout", f"no answer within {deadline:g} s")
            if isinstance(exc, builtins.TimeoutError):  # the system's own (ETIMEDOUT)
                return Failure("timeout", _reason(exc))
            return _failure(exc)
        except BaseException:  # an interrupt: the watch lets the task go all the same
            deadlines.stop(task)
            raise
        # A cancel the library swallowed while the answer came in: the answer stands.
        deadlines.stop(task)
        return Response(answer.status, answer.headers, content, method, url)


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


def _failure(exc: BaseException) -> Failure:
    """The kind of a library failure, and a reason worth showing (no request content)."""
    import aiohttp

    reason = _reason(exc)
    if isinstance(exc, (aiohttp.ClientSSLError, ssl.SSLError)) or _has_ssl_cause(exc):
        return Failure("tls", reason)
    if isinstance(exc, aiohttp.ClientConnectorError):
        # Includes a proxy refusing the connection: nothing of the request was sent.
        return Failure("connect", reason)
    if isinstance(exc, aiohttp.ClientResponseError):
        # The parser refused the answer's head or framing (or a proxy's CONNECT).
        return Failure("malformed", reason)
    if isinstance(exc, aiohttp.ClientPayloadError):
        return Failure("malformed" if "length" not in reason.lower() else "dropped", reason)
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError, OSError)):
        return Failure("dropped", reason)
    if isinstance(exc, aiohttp.InvalidURL):
        return Failure("connect", reason)
    return Failure("dropped", f"{type(exc).__name__}: {reason}")


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
