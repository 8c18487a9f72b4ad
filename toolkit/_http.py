"""The one HTTP layer both service clients stand on.

It owns: the base address, the auth headers, timeouts and TLS options, the
mapping of error answers to :mod:`toolkit._errors`, retries with backoff for
idempotent calls (429 / 502 / 503 / 504 and dropped connections, honouring
``Retry-After`` and ``X-RateLimit-Reset``), the server's clock (its ``Date``
header), and bounded concurrency for fan-out calls.

Requests are built as ``httpx.Request`` objects and sent straight to
:class:`~toolkit._transport.ThreadConnectionTransport`: httpx's ``Client.send``
machinery (cookies, redirects, auth flows) costs more CPU than the exchange
itself and none of it is used here. Two kinds of fan-out:

- :meth:`HTTPLayer.many` sends many requests described as data (:class:`Call`)
  over at most ``max_concurrency`` non-blocking connections from the calling
  thread, pipelined when every call is safe to repeat. The views that read
  thousands of records (pages, lease lookups) use it.
- :meth:`HTTPLayer.map` runs any function over items on a pool of at most
  ``max_concurrency`` threads kept for the layer's lifetime, each thread with
  its own keep-alive connection: for fan-outs of client calls that are more
  than one request each.

A transport passed in, or a proxy named in the environment, goes through
``httpx.Client`` as usual (and ``many`` through ``map``). See docs/decisions.md
(performance) for the measurements behind this.

Nothing here knows either API's paths; the service packages build on it.
"""

from __future__ import annotations

import heapq
import json as jsonlib
import ssl
import threading
import time
import urllib.request
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import orjson

from ._errors import (
    ConfigurationError,
    ConnectError,
    DecodeError,
    TimeoutError,
    TLSError,
    ToolkitError,
    TransportError,
    error_for_status,
)
from ._masking import Sensitive, reveal
from ._tls import client_context
from ._transport import FanOut, ThreadConnectionTransport

__all__ = ["Call", "HTTPLayer", "RetryPolicy", "segment"]

T = TypeVar("T")
R = TypeVar("R")

# Methods httpx sends a Content-Length with even when the body is empty.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "LIST", "OPTIONS"})
RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Parsed request addresses kept per layer (paths without a query repeat a lot:
# ten thousand lease lookups share one); parsing one costs more than sending it.
_URL_CACHE_SIZE = 512
# Marks the threads of a layer's fan-out pool, so that a map() inside a map()
# on the same layer runs inline instead of waiting for a thread of its own pool.
_worker = threading.local()


def _repeatable(method: str, idempotent: bool | None) -> bool:
    """Whether a call may be sent again (``idempotent`` overrides the method's default)."""
    return idempotent if idempotent is not None else method in IDEMPOTENT_METHODS


def segment(value: str) -> str:
    """Percent-encode one path segment (ids and names may hold ``/`` or spaces)."""
    return quote(str(value), safe="")


@dataclass(frozen=True)
class RetryPolicy:
    """How idempotent calls are retried.

    ``attempts`` counts the first try; ``backoff`` is the first pause in seconds,
    doubled on each retry up to ``max_pause``; a server's ``X-RateLimit-Reset`` or
    ``Retry-After`` wins over the computed pause (up to ``max_pause``).
    """

    attempts: int = 4
    backoff: float = 0.2
    max_pause: float = 30.0
    statuses: frozenset[int] = field(default=RETRY_STATUSES)

    def pause(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            hinted = _server_pause(response)
            if hinted is not None:
                return min(max(hinted, 0.0), self.max_pause)
        return min(self.backoff * (2 ** (attempt - 1)), self.max_pause)


@dataclass(frozen=True)
class Call:
    """One request of a fan-out (:meth:`HTTPLayer.many`), with :meth:`HTTPLayer.request`'s
    meaning for each field."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    idempotent: bool | None = None
    ok_statuses: frozenset[int] = frozenset()


def _server_pause(response: httpx.Response) -> float | None:
    # X-RateLimit-Reset (seconds, fractional) is the more precise of the two hints.
    reset = response.headers.get("X-RateLimit-Reset")
    if reset:
        try:
            value = float(reset)
        except ValueError:
            value = None
        if value is not None:
            # Seconds until the window resets; a large value is an epoch timestamp.
            return value - time.time() if value > 1e9 else value
    retry_after = response.headers.get("Retry-After")
    if retry_after:
        try:
            return float(retry_after)
        except ValueError:
            try:
                when = parsedate_to_datetime(retry_after)
            except (TypeError, ValueError):
                return None
            return (when - datetime.now(UTC)).total_seconds()
    return None


class HTTPLayer:
    """A configured connection to one service.

    ``address`` is the server's base address (scheme, host, port, optional path
    prefix); ``api_prefix`` (``/api/v2`` or ``/v1``) is added to every path.
    ``headers`` carry authentication; they are never shown in an error or a repr.
    """

    def __init__(
        self,
        address: str,
        api_prefix: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        verify: bool = True,
        ca_file: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
        server_name: str | None = None,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 8,
        pipeline: int = 8,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not address:
            raise ConfigurationError("no server address given")
        if not address.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"server address {address!r} must start with http:// or https://"
            )
        if max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1")
        if pipeline < 1:
            raise ConfigurationError("pipeline must be at least 1")
        self.address = address.rstrip("/")
        self.api_prefix = api_prefix
        self.retry = retry or RetryPolicy()
        self.max_concurrency = max_concurrency
        self.pipeline = pipeline
        self._server_time: tuple[datetime, float] | None = None
        self._last_date: str | None = None
        self._lock = threading.Lock()
        verify_opt: bool | ssl.SSLContext = verify
        if ca_file and verify:
            try:
                verify_opt = ssl.create_default_context(cafile=ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigurationError(f"cannot load CA file {ca_file!r}: {exc}") from None
        if client_cert or client_key or server_name:
            # A client certificate or a server name other than the address's host.
            verify_opt = client_context(
                verify=verify,
                ca_file=ca_file,
                client_cert=client_cert,
                client_key=client_key,
                server_name=server_name,
            )
        limits = httpx.Limits(
            max_connections=max_concurrency, max_keepalive_connections=max_concurrency
        )
        # Our own transport unless the caller brings one or a proxy is configured.
        self._direct: ThreadConnectionTransport | None = None
        if transport is None and not _environment_proxies():
            context = _ssl_context(verify_opt) if self.address.startswith("https") else None
            self._direct = ThreadConnectionTransport(ssl_context=context, timeout=timeout)
        self._client = httpx.Client(
            base_url=self.address + api_prefix,
            headers=dict(headers or {}),
            timeout=timeout,
            verify=verify_opt,
            limits=limits,
            transport=transport or self._direct,
        )
        self._timeout_ext = self._client.timeout.as_dict()
        self._urls: dict[str, httpx.URL] = {}
        self._host = httpx.URL(self.address).netloc
        self._merged_headers: dict[tuple[Any, ...], httpx.Headers] = {}
        self._pool: ThreadPoolExecutor | None = None

    def __repr__(self) -> str:
        return f"<HTTPLayer {self.address}{self.api_prefix}>"

    # -- lifecycle -----------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()

    def set_token(self, token: Sensitive | str | None) -> None:
        """Send ``token`` from now on (None: send none), in both token headers the
        secrets server reads (``X-Vault-Token``, ``X-Service-Token``)."""
        value = reveal(token) if token else None
        for name in ("X-Vault-Token", "X-Service-Token"):
            self.set_header(name, value)

    def set_header(self, name: str, value: str | None) -> None:
        """Set or remove a default header (used for namespaces and token changes)."""
        if value is None:
            self._client.headers.pop(name, None)
        else:
            self._client.headers[name] = value

    # -- the server's clock ----------------------------------------------------
    def server_now(self) -> datetime:
        """The server's current time, from the ``Date`` header of the latest answer.

        Falls back to this machine's clock before any answer was seen. Views that
        judge staleness use it so that a skewed laptop clock (or the sandbox's
        fixed demo clock) does not change their verdict.
        """
        with self._lock:
            seen = self._server_time
        if seen is None:
            return datetime.now(UTC)
        when, at = seen
        return when + timedelta(seconds=time.monotonic() - at)

    def _note_date(self, response: httpx.Response) -> None:
        date = response.headers.get("Date")
        # The header has a one-second grain: the first answer carrying a given
        # value places the server's clock best, and parsing it again costs time.
        if not date or date == self._last_date:
            return
        self._last_date = date
        try:
            when = parsedate_to_datetime(date)
        except (TypeError, ValueError):
            return
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        with self._lock:
            self._server_time = (when, time.monotonic())

    # -- requests ------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
        ok_statuses: Iterable[int] = (),
    ) -> httpx.Response:
        """Send one request and return the response, or raise a ToolkitError.

        ``idempotent`` defaults from the method (GET, PUT, DELETE, LIST, ...);
        only idempotent calls are retried. ``ok_statuses`` are error statuses the
        caller wants back as a response instead of an exception.
        """
        method = method.upper()
        attempts = self._attempts(method, idempotent)
        url = self.address + self.api_prefix + path
        ok = frozenset(ok_statuses)
        body, send_headers = _payload(json, headers)
        attempt = 0
        while True:
            attempt += 1
            response: httpx.Response | None = None
            failure: httpx.HTTPError | None = None
            try:
                response = self._send(method, path, params, body, send_headers)
            except httpx.HTTPError as exc:
                failure = exc
            pause = self._verdict(method, url, attempt, attempts, ok, response, failure)
            if pause is None:
                assert response is not None
                return response
            time.sleep(pause)

    def _attempts(self, method: str, idempotent: bool | None) -> int:
        return self.retry.attempts if _repeatable(method, idempotent) else 1

    def _verdict(
        self,
        method: str,
        url: str,
        attempt: int,
        attempts: int,
        ok: frozenset[int],
        response: httpx.Response | None,
        failure: httpx.HTTPError | None,
    ) -> float | None:
        """What to do after one try: None (the response stands), a pause before the
        next try, or raise the ToolkitError that says what went wrong."""
        if failure is not None:
            if isinstance(failure, httpx.TimeoutException):
                if attempt < attempts and method in IDEMPOTENT_METHODS:
                    return self.retry.pause(attempt, None)
                raise TimeoutError(
                    f"{method} {url}: no answer within the timeout", method=method, url=url
                ) from None
            if isinstance(failure, httpx.ConnectError):
                if _is_tls_failure(failure):
                    raise TLSError(
                        f"{method} {url}: TLS failure: {_reason(failure)}", method=method, url=url
                    ) from None
                if attempt < attempts:
                    return self.retry.pause(attempt, None)
                raise ConnectError(
                    f"{method} {url}: cannot connect to {self.address}: {_reason(failure)}",
                    method=method,
                    url=url,
                ) from None
            if isinstance(failure, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
                # The connection dropped: the server may have applied the request,
                # so only idempotent calls are sent again.
                if attempt < attempts:
                    return self.retry.pause(attempt, None)
                raise TransportError(
                    f"{method} {url}: the connection to {self.address} broke: {_reason(failure)}",
                    method=method,
                    url=url,
                ) from None
            raise TransportError(
                f"{method} {url}: {type(failure).__name__}: {_reason(failure)}",
                method=method,
                url=url,
            ) from None
        assert response is not None
        self._note_date(response)
        status = response.status_code
        if status in self.retry.statuses and attempt < attempts and status not in ok:
            return self.retry.pause(attempt, response)
        if status >= 400 and status not in ok:
            raise _api_error(response, method, url)
        return None

    def _headers(self, extra: Mapping[str, str], length: int | None) -> httpx.Headers:
        # Nearly every request carries the same headers: the merged object, with
        # the Host and Content-Length httpx would add, is kept and copied.
        base = tuple(self._client.headers.raw)
        key = (base, tuple(extra.items()), length)
        merged = self._merged_headers.get(key)
        if merged is None:
            pairs = [(b"Host", self._host)]
            pairs += [(k.encode(), v.encode()) for k, v in extra.items()]
            if length is not None:
                pairs.append((b"Content-Length", str(length).encode()))
            names = {k.lower() for k, _ in pairs}
            merged = httpx.Headers([kv for kv in base if kv[0].lower() not in names] + pairs)
            if len(self._merged_headers) >= 64:
                self._merged_headers.clear()
            self._merged_headers[key] = merged
        return merged

    def _url(self, path: str) -> httpx.URL:
        url = self._urls.get(path)
        if url is None:
            url = httpx.URL(self.address + self.api_prefix + path)
            if len(self._urls) < _URL_CACHE_SIZE:
                self._urls[path] = url
        return url

    def _build(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        body: bytes | None,
        headers: Mapping[str, str],
    ) -> httpx.Request:
        # The body as a ready stream and the headers complete: httpx has nothing
        # left to encode or add (what it would add is in ``_headers``).
        empty = body is None and method not in _BODY_METHODS
        length = None if empty else len(body or b"")
        url = self._url(path)
        request = httpx.Request(
            method,
            url if not params else url.copy_merge_params(params),
            headers=self._headers(headers, length),
            stream=httpx.ByteStream(body or b""),
            extensions={"timeout": self._timeout_ext},
        )
        for hook in self._client.event_hooks["request"]:
            hook(request)
        return request

    def _answered(self, response: httpx.Response) -> httpx.Response:
        for hook in self._client.event_hooks["response"]:
            hook(response)
        return response

    def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        body: bytes | None,
        headers: Mapping[str, str],
    ) -> httpx.Response:
        if self._direct is None:
            return self._client.request(method, path, params=params, content=body, headers=headers)
        request = self._build(method, path, params, body, headers)
        return self._answered(self._direct.handle_request(request))

    def json(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool | None = None,
    ) -> Any:
        """Send a request and decode its JSON body (``None`` for an empty answer)."""
        response = self.request(
            method, path, params=params, json=json, headers=headers, idempotent=idempotent
        )
        return decode_json(response, method)

    def map(
        self, fn: Callable[[T], R], items: Iterable[T], *, workers: int | None = None
    ) -> Iterator[R]:
        """Apply ``fn`` to every item with bounded concurrency, results in input order.

        At most ``max_concurrency`` calls run at once (fewer when ``workers`` is
        smaller), on the layer's thread pool; results are yielded as soon as they
        and all before them are done. The first exception stops the iteration
        (no new item is started) and is raised where its item would have been
        yielded. Called from inside a ``map`` of the same layer, it runs inline.
        """
        items = list(items)
        n = min(workers or self.max_concurrency, self.max_concurrency, len(items))
        if n <= 1 or _worker_layer() is self:
            for item in items:
                yield fn(item)
            return
        fan = _FanOut(fn, items, n, self._executor())
        try:
            yield from fan
        finally:
            fan.stop()

    def many(
        self, calls: Iterable[Call], *, workers: int | None = None
    ) -> Iterator[httpx.Response]:
        """Send every call with bounded concurrency; the responses in call order.

        Each call is retried, and its errors raised, as :meth:`request` does
        (``Call.ok_statuses`` come back as responses). The calls go over at most
        ``max_concurrency`` keep-alive connections (fewer when ``workers`` is
        smaller), all driven from this thread without blocking. When every call
        is safe to repeat, each connection carries up to ``pipeline`` requests
        at once (HTTP/1.1 pipelining: the server still answers them one at a
        time and in order, so its concurrency stays bounded by the connections,
        while the client and server spend far less per request). A response is
        yielded as soon as it and all before it are in. The first failure stops
        the fan-out (no new call is sent) and is raised where its response would
        have been yielded.
        """
        todo = list(calls)
        n = min(workers or self.max_concurrency, self.max_concurrency, len(todo))
        if _worker_layer() is self:
            n = 1  # inside a map() of this layer, whose threads hold the connections allowed
        if self._direct is None or n <= 1:
            # httpx's own transport (a proxy, or one passed in): one thread a request.
            yield from self.map(self._call, todo, workers=n)
            return
        # Only calls safe to repeat are pipelined: when a connection breaks, the
        # calls behind the first on it may or may not have been applied.
        safe = all(_repeatable(c.method.upper(), c.idempotent) for c in todo)
        depth = self.pipeline if safe else 1
        fan = self._direct.fan_out(n, depth=depth)
        try:
            yield from _Many(self, fan, todo, n * depth)
        finally:
            fan.close()

    def _call(self, call: Call) -> httpx.Response:
        return self.request(
            call.method,
            call.path,
            params=call.params,
            json=call.json,
            idempotent=call.idempotent,
            ok_statuses=call.ok_statuses,
        )

    def _executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.max_concurrency,
                    thread_name_prefix="toolkit-http",
                    initializer=_mark_worker,
                    initargs=(weakref.ref(self),),
                )
            return self._pool


def _mark_worker(layer: weakref.ref[HTTPLayer]) -> None:
    # A weak reference: a layer nobody closed can still be collected, and its
    # pool with it (whose threads then end).
    _worker.layer = layer


def _worker_layer() -> HTTPLayer | None:
    ref = getattr(_worker, "layer", None)
    return ref() if ref is not None else None


class _FanOut(Iterator[Any]):
    """``n`` pool jobs pulling items from one shared cursor; results yielded in order."""

    def __init__(
        self, fn: Callable[[Any], Any], items: list[Any], n: int, pool: ThreadPoolExecutor
    ) -> None:
        self.fn = fn
        self.items = items
        self.results: list[Any] = [None] * len(items)
        self.done = [False] * len(items)
        self.errors: dict[int, BaseException] = {}
        self.cursor = 0
        self.next_out = 0
        self.stopped = False
        self.cond = threading.Condition()
        self.jobs = [pool.submit(self._drain) for _ in range(n)]

    def _take(self) -> int | None:
        with self.cond:
            if self.stopped or self.cursor >= len(self.items):
                return None
            k = self.cursor
            self.cursor += 1
            return k

    def _drain(self) -> None:
        while (k := self._take()) is not None:
            try:
                value = self.fn(self.items[k])
            except BaseException as exc:  # handed to the consumer, in order
                with self.cond:
                    self.errors[k] = exc
                    self.stopped = True
                    self.done[k] = True
                    self.cond.notify_all()
                return
            with self.cond:
                self.results[k] = value
                self.done[k] = True
                self.cond.notify_all()

    def __next__(self) -> Any:
        k = self.next_out
        if k >= len(self.items):
            raise StopIteration
        with self.cond:
            while not self.done[k]:
                if self.stopped and k >= self.cursor:
                    break
                self.cond.wait()
            if k in self.errors:
                self.next_out = len(self.items)
                raise self.errors.pop(k)
            if not self.done[k]:
                # Stopped before this item was started: raise the failure now.
                first = min(self.errors)
                self.next_out = len(self.items)
                raise self.errors.pop(first)
            value = self.results[k]
            self.results[k] = None
        self.next_out = k + 1
        return value

    def stop(self) -> None:
        """Start no new item (the consumer stopped early, or is done)."""
        with self.cond:
            self.stopped = True


class _Many(Iterator[httpx.Response]):
    """The responses of one :meth:`HTTPLayer.many` in call order, driving its fan-out.

    At most ``window`` calls are in flight at once: ``n`` at first, halved on
    each refusal to go faster (429, 503), grown back by one for each window's
    worth of answers (as TCP does). Calls to try again wait in ``later`` for
    their pause and go out before new ones, within the window; after a
    refusal nothing goes out until its pause is over.
    """

    def __init__(self, layer: HTTPLayer, fan: FanOut, calls: list[Call], n: int) -> None:
        self.layer = layer
        self.fan = fan
        self.calls = calls
        self.n = n
        self.window = n
        self.answered = 0
        self.hold_until = 0.0
        self.later: list[tuple[float, int, httpx.Request]] = []
        self.results: dict[int, httpx.Response | ToolkitError] = {}
        self.attempts: dict[int, int] = {}
        self.cursor = 0
        self.next_out = 0
        self.stopped = False

    def _feed(self) -> None:
        now = time.monotonic()
        if now < self.hold_until:
            return
        fan = self.fan
        while self.later and self.later[0][0] <= now and fan.pending < self.window:
            _, k, request = heapq.heappop(self.later)
            fan.submit(k, request, alone=True)
        layer, calls = self.layer, self.calls
        while not self.stopped and self.cursor < len(calls) and fan.pending < self.window:
            k = self.cursor
            self.cursor += 1
            call = calls[k]
            body, headers = _payload(call.json)
            method = call.method.upper()
            fan.submit(k, layer._build(method, call.path, call.params, body, headers))

    def _judge(
        self,
        k: int,
        request: httpx.Request,
        response: httpx.Response | None,
        failure: httpx.HTTPError | None,
    ) -> None:
        layer, call = self.layer, self.calls[k]
        attempt = self.attempts.get(k, 0) + 1
        self.attempts[k] = attempt
        method = request.method
        if response is not None:
            layer._answered(response)
        try:
            pause = layer._verdict(
                method,
                layer.address + layer.api_prefix + call.path,
                attempt,
                layer._attempts(method, call.idempotent),
                call.ok_statuses,
                response,
                failure,
            )
        except ToolkitError as exc:
            self.results[k] = exc
            self.stopped = True
            return
        if pause is None:
            assert response is not None
            self.results[k] = response
            if self.window < self.n:
                self.answered += 1
                if self.answered >= self.window:
                    self.window, self.answered = self.window + 1, 0
            return
        at = time.monotonic() + pause
        if response is not None and response.status_code in _SLOW_DOWN:
            self.window, self.answered = max(1, self.window // 2), 0
            self.hold_until = max(self.hold_until, at)
        heapq.heappush(self.later, (at, k, request))

    def __next__(self) -> httpx.Response:
        k = self.next_out
        if k >= len(self.calls):
            raise StopIteration
        while k not in self.results:
            # Calls are sent in order and the first failure is raised in its
            # place, so call k is in flight or waiting to go again whenever
            # its result is not in.
            self._feed()
            if not self.fan.pending:
                if not self.later:
                    raise RuntimeError(f"the fan-out lost call {k}")  # a bug, not a server's
                time.sleep(max(0.0, max(self.later[0][0], self.hold_until) - time.monotonic()))
                continue
            for key, request, response, failure in self.fan.step():
                self._judge(key, request, response, failure)
        result = self.results.pop(k)
        if isinstance(result, ToolkitError):
            self.next_out = len(self.calls)
            raise result
        self.next_out = k + 1
        return result


# Answers that ask the client to send less: the fan-out narrows on them.
_SLOW_DOWN = frozenset({429, 503})
_JSON_CONTENT = {"Content-Type": "application/json"}
_NO_HEADERS: dict[str, str] = {}


def _payload(
    json: Any, headers: Mapping[str, str] | None = None
) -> tuple[bytes | None, Mapping[str, str]]:
    """A JSON body (None without one) and the headers to send it with."""
    body = None if json is None else jsonlib.dumps(json).encode()
    if headers:
        merged = dict(headers)
        if body is not None:
            merged.setdefault("Content-Type", "application/json")
        return body, merged
    return body, _JSON_CONTENT if body is not None else _NO_HEADERS


def decode_json(response: httpx.Response, method: str = "GET") -> Any:
    """Decode a response body, raising :class:`DecodeError` naming the address."""
    content = response.content
    if response.status_code == 204 or not content:
        return None
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        pass  # what orjson refuses and the standard decoder takes (NaN, Infinity)
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError):
        raise DecodeError(
            f"{method} {response.request.url}: the answer ({response.status_code}, "
            f"{len(response.content)} bytes, {response.headers.get('Content-Type', 'no type')})"
            " is not valid JSON",
            method=method,
            url=str(response.request.url),
        ) from None


def _api_error(response: httpx.Response, method: str, url: str) -> Exception:
    messages: list[str] = []
    errors: list[Any] = []
    try:
        payload = response.json()
    except (ValueError, UnicodeDecodeError):
        payload = None
    if isinstance(payload, dict):
        raw = payload.get("errors")
        if isinstance(raw, list):
            errors = raw
            for item in raw:
                if isinstance(item, str):
                    messages.append(item)
                elif isinstance(item, dict):
                    text = item.get("detail") or item.get("title") or ""
                    if item.get("title") and item.get("detail") and item["title"] not in text:
                        text = f"{item['title']}: {item['detail']}"
                    pointer = (item.get("source") or {}).get("pointer")
                    if pointer and pointer not in text:
                        text = f"{text} ({pointer})"
                    messages.append(str(text))
        elif isinstance(payload.get("message"), str):
            messages.append(payload["message"])
    elif response.content and not messages:
        snippet = response.text[:200].strip()
        if snippet:
            messages.append(snippet)
    cls = error_for_status(response.status_code)
    return cls(
        response.status_code,
        messages,
        method=method,
        url=url,
        errors=errors,
        headers={k: v for k, v in response.headers.items() if k.lower() != "set-cookie"},
    )


def _environment_proxies() -> bool:
    proxies = urllib.request.getproxies()
    return any(proxies.get(k) for k in ("http", "https", "all"))


def _ssl_context(verify: bool | ssl.SSLContext) -> ssl.SSLContext:
    if isinstance(verify, ssl.SSLContext):
        return verify
    return httpx.create_ssl_context(verify=verify)


def _is_tls_failure(exc: Exception) -> bool:
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            return True
        cause = cause.__cause__ or cause.__context__
    text = str(exc)
    return "SSL" in text or "CERTIFICATE" in text.upper()


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
