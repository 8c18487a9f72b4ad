"""The layer facade both service clients stand on: :class:`HTTPLayer`.

It owns the base address, the auth headers (kept as :class:`Sensitive` and
revealed only when a request is sent), the deadlines, the server's clock (its
``Date`` header) and the redirect rule, and it puts together the engine (how
bytes move), the policy (what goes again, which error an answer becomes) and
the fan-outs. Nothing here knows either API's paths.
"""

from __future__ import annotations

import copy
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import CancelledError, ThreadPoolExecutor
from datetime import datetime
from typing import Any, TypedDict, TypeVar, Unpack

import orjson

from .._errors import (
    ConfigurationError,
    OutcomeUnknown,
)
from .._masking import Sensitive
from .._tls import ClientTLS
from .clock import ServerClock
from .fanout import (
    Request,
    map_calls,
    mark_worker,
    send_many,
)
from .headers import check_header, put_header
from .paths import check_path, query_string, yarl_url
from .policy import Failure, RetryPolicy, judge, mask, repeatable, tries_after_the_first
from .redirects import NO_REDIRECTS, RedirectRule
from .response import CREDENTIAL_HEADERS, Headers, Response, decode_json
from .transport import ConnectorFactory, Transport

__all__ = ["HTTPLayer", "decode_json"]

T = TypeVar("T")
R = TypeVar("R")

# The deadline of a whole fan-out: ten thousand lease lookups take seconds on
# a healthy server; a quarter of an hour means something is wrong.
FAN_OUT_TIMEOUT = 900.0
# The largest body taken, as it arrives and decoded: a LIST of a million lease
# ids is some 70 MB.
MAX_BODY = 256 * 1024 * 1024
# Parsed addresses kept per layer (ten thousand lease lookups share one path).
_URL_CACHE_SIZE = 512
_JSON = "application/json"


def _reveal(value: Any) -> Any:
    """orjson's hook for what it cannot encode: a Sensitive is revealed only here."""
    if isinstance(value, Sensitive):
        return value.reveal()
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


class _TransportLimit:
    """A size limit the layer's transport keeps (shared with views), checked when set."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, layer: Any, owner: type | None = None) -> Any:
        return self if layer is None else int(getattr(layer._engine, self.name))

    def __set__(self, layer: Any, size: int) -> None:
        setattr(layer._engine, self.name, _size(self.name, size))


class CallOptions(TypedDict, total=False):
    """The options of one call that :meth:`HTTPLayer.json` passes on to
    :meth:`HTTPLayer.request` (which documents them)."""

    params: Mapping[str, Any] | None
    json: Any
    headers: Mapping[str, str] | None
    idempotent: bool | None
    check: str


class HTTPLayer:
    """A configured connection to one service.

    ``address`` is the server's base address (scheme, host, port, optional path
    prefix); ``api_prefix`` (``/api/v2`` or ``/v1``) is added to every path.
    ``headers`` carry authentication: give secrets as :class:`Sensitive`; they
    are never shown in an error or a repr. ``timeout`` is the deadline of each
    try (connect, write, the whole answer); ``call_timeout`` (by default
    ``timeout`` times the retry policy's attempts) bounds a whole call, every
    try and every pause between tries: a pause the server asks for beyond what
    is left ends the call (a 429 with :class:`RateLimited`), and the last try
    gets what is left. ``fan_out_timeout`` bounds a whole :meth:`many` the same
    way. ``tls`` (:class:`~toolkit._tls.ClientTLS`) says how an ``https``
    server is checked and which certificate the layer shows it (by default the
    system's CAs, no client certificate). ``max_body`` bounds an answer's body
    as it arrives and ``max_decompressed`` once decoded (gzip, deflate), in
    bytes: an answer over either is a :class:`ProtocolError`. ``connector``
    builds the aiohttp connector to use instead of the TCP one (it is called on
    the layer's event loop). What the layer knows of the service's API comes
    from its client: ``redirects``, the rule for 3xx answers, and
    ``token_headers``, the headers :meth:`set_token` sets.
    """

    def __init__(
        self,
        address: str,
        api_prefix: str,
        *,
        headers: Mapping[str, str | Sensitive] | None = None,
        timeout: float = 30.0,
        fan_out_timeout: float = FAN_OUT_TIMEOUT,
        call_timeout: float | None = None,
        tls: ClientTLS | None = None,
        retry: RetryPolicy | None = None,
        max_concurrency: int = 8,
        redirects: RedirectRule = NO_REDIRECTS,
        token_headers: tuple[str, ...] = (),
        connector: ConnectorFactory | None = None,
        max_body: int = MAX_BODY,
        max_decompressed: int = MAX_BODY,
    ) -> None:
        if not address:
            raise ConfigurationError("no server address given")
        if not address.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"server address {address!r} must start with http:// or https://"
            )
        if max_concurrency < 1:
            raise ConfigurationError("max_concurrency must be at least 1")
        self.retry = retry or RetryPolicy()
        call_timeout = call_timeout or timeout * self.retry.attempts
        if not all(0 < t < math.inf for t in (timeout, fan_out_timeout, call_timeout)):
            raise ConfigurationError("timeouts must be positive numbers of seconds")
        _size("max_body", max_body)
        _size("max_decompressed", max_decompressed)
        self.address = address.rstrip("/")
        self.api_prefix = api_prefix
        self.timeout = timeout
        self.fan_out_timeout = fan_out_timeout
        self.call_timeout = call_timeout
        self.max_concurrency = max_concurrency
        self.redirects = redirects
        self.token_headers = token_headers
        # Header names whose plain values are credentials (hidden like a Sensitive).
        self._credential_names = CREDENTIAL_HEADERS | {h.lower() for h in token_headers}
        self._plain: dict[str, str] = {}
        self._secret: dict[str, Sensitive] = {}
        # A view (:meth:`with_headers`): the layer it views, and its own headers on
        # top of that layer's, read when a request is sent.
        self._base: HTTPLayer | None = None
        self._overrides: dict[str, str | Sensitive | None] = {}
        for name, value in (headers or {}).items():
            self.set_header(name, value)
        # Shared with the views (with_headers): one server, one clock.
        self._clock = ServerClock()
        self._lock = threading.Lock()
        self._urls: dict[str, Any] = {}
        # Called with every answer, retried ones included (on the layer's event
        # loop thread: keep them short). For metrics, logs and tests.
        self.response_hooks: list[Callable[[Response], None]] = []
        self._pool: ThreadPoolExecutor | None = None
        # The layer a view (:meth:`with_headers`) shares connections with; None for an owner.
        self._owner: HTTPLayer | None = None
        self._engine = Transport(
            tls=(tls or ClientTLS()).context() if self.address.startswith("https") else False,
            limit=max_concurrency,
            connector=connector,
            max_body=max_body,
            max_decompressed=max_decompressed,
        )
        # A layer nobody closed still stops its loop thread when collected.
        weakref.finalize(self, self._engine.close)
        _LAYERS.add(self)

    def __repr__(self) -> str:
        if "api_prefix" not in vars(self):  # half-built: its constructor refused something
            return "<HTTPLayer (not built)>"
        return f"<HTTPLayer {self.address}{self.api_prefix}>"

    # The largest body taken as it arrives, and once decoded (gzip, deflate), in bytes:
    # kept by the transport, so shared with views.
    max_body = _TransportLimit()
    max_decompressed = _TransportLimit()

    @property
    def headers(self) -> Headers:
        """The default headers, credentials masked in their repr."""
        plain, secret = self._header_maps()
        return Headers({**plain, **{k: str(v) for k, v in secret.items()}})

    def credentials(self) -> tuple[Sensitive, ...]:
        """The credential headers' values (still Sensitive): what an error built from
        an answer taken back (``ok_statuses``) masks, as the layer's own errors do."""
        return tuple(self._header_maps()[1].values())

    def with_headers(self, headers: Mapping[str, str | Sensitive | None]) -> HTTPLayer:
        """A view of this layer that sends ``headers`` too (None removes one).

        The view shares the connections, the thread pool, the retry policy and
        the response hooks. Its default headers are this layer's as they are
        when a request is sent (a token set on this layer later reaches the
        view), with ``headers`` applied; :meth:`set_header` on the view changes
        the view alone. Closing a view closes nothing (the owner does). For a
        namespace: ``layer.with_headers({"X-Vault-Namespace": "a/"})``.
        """
        for name, value in headers.items():
            if value is not None:
                check_header(name, value)
        view = copy.copy(self)
        view._owner = self._owner or self
        view._base = self
        view._plain, view._secret = {}, {}
        view._overrides = dict(headers)
        return view

    def _header_maps(self) -> tuple[dict[str, str], dict[str, Sensitive]]:
        """(plain headers, credential headers) as a request would send them now."""
        if self._base is None:
            return self._plain, self._secret
        plain, secret = self._base._header_maps()
        plain, secret = dict(plain), dict(secret)
        for name, value in self._overrides.items():
            put_header(plain, secret, name, value, self._credential_names)
        return plain, secret

    # -- lifecycle -----------------------------------------------------------
    def close(self) -> None:
        if self._owner is not None:
            return  # a view: its owner's connections are not its to close
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        self._engine.close()

    def set_token(self, token: Sensitive | str | None) -> None:
        """Send ``token`` from now on (None: send none), in every one of the
        ``token_headers`` the client named."""
        if not self.token_headers:
            raise ConfigurationError("this client names no header to carry a token")
        value = (
            None
            if not token
            else token
            if isinstance(token, Sensitive)
            else Sensitive(token, "token")
        )
        for name in self.token_headers:
            self.set_header(name, value)

    def set_header(self, name: str, value: str | Sensitive | None) -> None:
        """Set or remove a default header (namespaces, token changes). A credential
        header (or any Sensitive value) is kept hidden until a request is sent.
        On a view it changes the view's headers alone."""
        if self._base is not None:
            if value is not None:
                check_header(name, value)
            self._overrides[name] = value
        else:
            put_header(self._plain, self._secret, name, value, self._credential_names)

    # -- the server's clock ----------------------------------------------------
    def server_now(self) -> datetime:
        """The server's current time, from the ``Date`` header of the latest answer.

        Falls back to this machine's clock before any answer was seen. Views that
        judge staleness use it so that a skewed laptop clock (or the sandbox's
        fixed demo clock) does not change their verdict.
        """
        return self._clock.now()

    # -- one call ----------------------------------------------------------------
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
        check: str = "",
    ) -> Response:
        """Send one request and return the response, or raise a ToolkitError.

        Only GET, HEAD and LIST are sent again by default; ``idempotent=True``
        marks a call whose repetition changes nothing. ``ok_statuses`` are error
        statuses the caller wants back as a response instead of an exception.
        ``check`` tells, for a write whose outcome could be unknown, how to find
        out (it goes into :class:`OutcomeUnknown`'s message).
        """
        check_path(method, self.api_prefix, path)  # nothing leaves on a rewritten path
        call = Request(
            method.upper(), path, params, json, idempotent, frozenset(ok_statuses), check
        )
        if headers:
            for name, value in headers.items():
                check_header(name, value)
        future = self._engine.submit(self._call(call, headers))
        try:
            return future.result()
        except CancelledError:
            if self._engine.closed and not repeatable(call.method, call.idempotent):
                # A write cut short may have left: its outcome is unknown.
                raise OutcomeUnknown(
                    f"{call.method} {self.address}{self.api_prefix}{path}: the client was "
                    "closed while this write was in flight, so the server may or may not "
                    "have acted on it; it was not sent again. Check before trying again: "
                    f"{call.check or 'read the record back'}.",
                    method=call.method,
                    url=f"{self.address}{self.api_prefix}{path}",
                    check=call.check,
                ) from None
            if self._engine.closed:
                raise ConfigurationError(
                    f"{call.method} {self.address}{self.api_prefix}{path}: "
                    "the client was closed while this call was in flight"
                ) from None
            raise
        except BaseException:
            future.cancel()  # an interrupt in the notebook stops the call too
            raise

    def json(self, method: str, path: str, **options: Unpack[CallOptions]) -> Any:
        """Send a request (``options`` as :meth:`request` takes them) and decode its
        JSON body (``None`` for an empty answer)."""
        return decode_json(self.request(method, path, **options), method)

    async def _call(self, call: Request, headers: Mapping[str, str] | None) -> Response:
        ends_at = time.monotonic() + self.call_timeout  # the whole call's budget
        # The first try too ends within the call's time (it may be the shorter).
        result = await self._attempt(call, headers, min(self.timeout, self.call_timeout))
        pause = self._verdict(call, 1, result, ends_at)
        if pause is None:
            assert isinstance(result, Response)
            return result
        return await self._again(call, headers, pause, ends_at)

    async def _again(
        self, call: Request, headers: Mapping[str, str] | None, pause: float, ends_at: float
    ) -> Response:
        """The tries after the first (:func:`~.policy.tries_after_the_first`), each within
        what is left of the call's time (``ends_at``)."""
        return await tries_after_the_first(
            lambda: self._attempt(call, headers, min(self.timeout, _left(ends_at))),
            lambda attempt, result: self._verdict(call, attempt, result, ends_at),
            pause,
            self.retry.attempts,
        )

    def _verdict(
        self,
        call: Request,
        attempt: int,
        result: Response | Failure,
        ends_at: float = math.inf,
    ) -> float | None:
        """None when ``result`` stands, else the pause before the next try (raises
        the call's error instead); a pause is one that leaves the next try time
        to work before ``ends_at``."""
        if isinstance(result, Response):
            # The header has a one-second grain: the first answer carrying a given
            # value places the server's clock best, and parsing it again costs time.
            date = result.raw_headers.get("Date")
            if date and date != self._clock.last_date:
                self._clock.note(date)
            for hook in self.response_hooks:
                hook(result)
            if result.status_code < 300:
                return None  # the answer stands: the common case, decided here
            response, failure = result, None
        else:
            response, failure = None, result
        return judge(
            self.retry,
            call.method,
            self.address + self.api_prefix + call.path,
            self.address,
            may_repeat=repeatable(call.method, call.idempotent),
            attempt=attempt,
            ok=call.ok_statuses,
            check=call.check,
            response=response,
            failure=failure,
            # A pause must leave the next try time to work: a second, or the
            # whole per-try timeout when that is shorter.
            budget=ends_at - time.monotonic() - min(self.timeout, 1.0),
            secrets=self.credentials(),
        )

    # -- one exchange, on the loop ----------------------------------------------------
    def _url(self, path: str, params: Mapping[str, Any] | None) -> Any:
        full = self.address + self.api_prefix + path
        if params:
            return yarl_url()(full + "?" + query_string(params))
        url = self._urls.get(full)
        if url is None:
            url = yarl_url()(full)
            if len(self._urls) < _URL_CACHE_SIZE:
                self._urls[full] = url
        return url

    def _send_headers(self, extra: Mapping[str, str] | None, body: bool) -> dict[str, str]:
        # Credentials are revealed here, in the coroutine that sends them.
        plain, secret = (self._plain, self._secret) if self._base is None else self._header_maps()
        headers = dict(plain)
        for name, value in secret.items():
            headers[name] = value.reveal()
        if body:
            headers["Content-Type"] = _JSON
        if extra:
            headers.update(extra)
        return headers

    async def _attempt(
        self, call: Request, extra: Mapping[str, str] | None = None, deadline: float = 0.0
    ) -> Response | Failure:
        """One try of ``call`` within ``deadline`` seconds (``timeout`` when 0)."""
        url = self._url(call.path, call.params)
        body = None if call.json is None else orjson.dumps(call.json, default=_reveal)
        headers = self._send_headers(extra, body is not None)
        deadline = deadline or self.timeout
        started = time.monotonic()
        result = await self._engine.exchange(call.method, url, headers, body, deadline)
        if (
            isinstance(result, Response)
            and 300 <= result.status_code < 400
            and result.status_code != 304
        ):
            ends_at = started + deadline
            result = await self._redirected(call, result, url, headers, body, ends_at)
        if isinstance(result, Failure):
            # The library's reason may quote what the server echoed (a token in a
            # broken status line): masked before it reaches any frame of an error.
            _, secret = self._header_maps()
            if secret:
                reason = mask(result.reason, tuple(secret.values()))
                result = Failure(result.kind, reason, result.via)
        return result

    async def _redirected(
        self,
        call: Request,
        answer: Response,
        url: Any,
        headers: dict[str, str],
        body: Any,
        ends_at: float,
    ) -> Response | Failure:
        """A 3xx: followed once when the client's rule allows it, else marked for the error."""

        async def ask(path: str) -> Response | Failure:
            return await self._engine.exchange(
                "GET", self._url(path, None), {"Accept": _JSON}, None, _left(ends_at)
            )

        followed = await self.redirects.follow(answer, self.address, ask)
        if isinstance(followed, str):
            answer.note = followed
            return answer
        scheme, host, port = followed
        try:
            target = url.with_scheme(scheme).with_host(host).with_port(port)
        except ValueError:  # yarl refuses the host (a space in it, say)
            answer.note = f"the redirect names {host!r}, which is no host name; not followed"
            return answer
        second = await self._engine.exchange(call.method, target, headers, body, _left(ends_at))
        if isinstance(second, Response) and 300 <= second.status_code < 400:
            second.note = (
                f"the active node redirected again, to {second.headers.get('Location', '')}; "
                "only one redirect is followed"
            )
        return second

    # -- fan-outs ----------------------------------------------------------------------
    def many(
        self, requests: Iterable[Request], *, workers: int | None = None
    ) -> Iterator[Response]:
        """Send every request with bounded concurrency; the responses in request order.

        Each request is retried, and its errors raised, as :meth:`request` does
        (``Request.ok_statuses`` come back as responses). At most
        ``max_concurrency`` requests are in flight (fewer when ``workers`` is
        smaller), each on its own connection: the window halves on 429 and 503
        and grows back. Sending runs at most ``max(64, 8 * n)`` answers ahead
        of the reader, and answers are handed to the reader in order, in batches
        of half that (one wake-up of the reading thread a batch; fewer at the
        end). The first failure stops the fan-out (nothing new is sent) and is
        raised where its response would have been yielded, after the ones before
        it. The whole fan-out has ``fan_out_timeout`` seconds.
        """
        todo = list(requests)
        if not todo:
            return
        checked: set[str] = set()
        for r in todo:  # nothing leaves on a rewritten path (a fan-out shares few paths)
            if r.path not in checked:
                check_path(r.method, self.api_prefix, r.path)
                checked.add(r.path)
        n = min(workers or self.max_concurrency, self.max_concurrency, len(todo))
        closed = ConfigurationError(
            f"{self.address}{self.api_prefix}: the client was closed while this fan-out "
            "was in flight"
        )
        yield from send_many(
            todo, n, self._attempt, self._verdict, self._engine, self.fan_out_timeout, closed
        )

    def map(
        self, fn: Callable[[T], R], items: Iterable[T], *, workers: int | None = None
    ) -> Iterator[R]:
        """Apply ``fn`` to every item with bounded concurrency, results in input order.

        For fan-outs of client calls that are more than one request each. At most
        ``max_concurrency`` calls run at once (fewer when ``workers`` is smaller),
        on the layer's thread pool; results are yielded as soon as they and all
        before them are done. The first exception stops the iteration (no new
        item is started) and is raised where its item would have been yielded,
        once the items already running have ended (within the map's deadline).
        The whole map has ``fan_out_timeout``: past it no item starts, and
        :class:`TimeoutError` is raised where the first unfinished one would
        have been. Called from inside a ``map`` of the same layer, it runs inline.
        """
        items = list(items)
        n = min(workers or self.max_concurrency, self.max_concurrency, len(items))
        yield from map_calls(
            fn, items, n, self._owner or self, self._executor, self.fan_out_timeout
        )

    def _executor(self) -> ThreadPoolExecutor:
        if self._owner is not None:
            return self._owner._executor()
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.max_concurrency,
                    thread_name_prefix="toolkit-http",
                    initializer=mark_worker,
                    initargs=(weakref.ref(self),),
                )
            return self._pool


# Every owner layer of this process: a forked child drops their thread pools
# (the parent's threads do not exist there) and starts new ones on first use.
_LAYERS: weakref.WeakSet[HTTPLayer] = weakref.WeakSet()


def _after_fork() -> None:
    for layer in list(_LAYERS):
        layer._lock = threading.Lock()
        layer._pool = None


os.register_at_fork(after_in_child=_after_fork)


def _size(name: str, size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigurationError(f"{name} must be a whole number of bytes, at least 1")
    return size


def _left(ends_at: float) -> float:
    """Seconds left until ``ends_at`` (a moment, at least, to fail a try cleanly)."""
    return max(ends_at - time.monotonic(), 1e-3)
