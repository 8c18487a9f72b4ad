"""The one HTTP layer both service clients stand on.

It owns: the base address, the auth headers, timeouts and TLS options, the
mapping of error answers to :mod:`toolkit._errors`, retries with backoff for
idempotent calls (429 / 502 / 503 / 504 and dropped connections, honouring
``Retry-After`` and ``X-RateLimit-Reset``), the server's clock (its ``Date``
header), and bounded concurrency for fan-out calls.

Nothing here knows either API's paths; the service packages build on it.
"""

from __future__ import annotations

import json as jsonlib
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from ._errors import (
    ConfigurationError,
    ConnectError,
    DecodeError,
    TimeoutError,
    TLSError,
    TransportError,
    error_for_status,
)

__all__ = ["HTTPLayer", "RetryPolicy", "segment"]

T = TypeVar("T")
R = TypeVar("R")

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "LIST", "OPTIONS"})
RETRY_STATUSES = frozenset({429, 502, 503, 504})


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
        retry: RetryPolicy | None = None,
        max_concurrency: int = 8,
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
        self.address = address.rstrip("/")
        self.api_prefix = api_prefix
        self.retry = retry or RetryPolicy()
        self.max_concurrency = max_concurrency
        self._server_time: tuple[datetime, float] | None = None
        self._lock = threading.Lock()
        verify_opt: bool | ssl.SSLContext = verify
        if ca_file and verify:
            try:
                verify_opt = ssl.create_default_context(cafile=ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigurationError(f"cannot load CA file {ca_file!r}: {exc}") from None
        limits = httpx.Limits(
            max_connections=max_concurrency, max_keepalive_connections=max_concurrency
        )
        self._client = httpx.Client(
            base_url=self.address + api_prefix,
            headers=dict(headers or {}),
            timeout=timeout,
            verify=verify_opt,
            limits=limits,
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"<HTTPLayer {self.address}{self.api_prefix}>"

    # -- lifecycle -----------------------------------------------------------
    def close(self) -> None:
        self._client.close()

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
        if not date:
            return
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
        retryable = idempotent if idempotent is not None else method in IDEMPOTENT_METHODS
        attempts = self.retry.attempts if retryable else 1
        url = self.address + self.api_prefix + path
        ok = set(ok_statuses)
        body = None if json is None else jsonlib.dumps(json).encode()
        send_headers = dict(headers or {})
        if body is not None:
            send_headers.setdefault("Content-Type", "application/json")
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._client.request(
                    method, path, params=params, content=body, headers=send_headers
                )
            except httpx.TimeoutException:
                if attempt < attempts and method in IDEMPOTENT_METHODS:
                    time.sleep(self.retry.pause(attempt, None))
                    continue
                raise TimeoutError(
                    f"{method} {url}: no answer within the timeout", method=method, url=url
                ) from None
            except httpx.ConnectError as exc:
                if _is_tls_failure(exc):
                    raise TLSError(
                        f"{method} {url}: TLS failure: {_reason(exc)}", method=method, url=url
                    ) from None
                if attempt < attempts:
                    time.sleep(self.retry.pause(attempt, None))
                    continue
                raise ConnectError(
                    f"{method} {url}: cannot connect to {self.address}: {_reason(exc)}",
                    method=method,
                    url=url,
                ) from None
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                # The connection dropped: the server may have applied the request,
                # so only idempotent calls are sent again.
                if attempt < attempts:
                    time.sleep(self.retry.pause(attempt, None))
                    continue
                raise TransportError(
                    f"{method} {url}: the connection to {self.address} broke: {_reason(exc)}",
                    method=method,
                    url=url,
                ) from None
            except httpx.HTTPError as exc:
                raise TransportError(
                    f"{method} {url}: {type(exc).__name__}: {_reason(exc)}",
                    method=method,
                    url=url,
                ) from None
            self._note_date(response)
            status = response.status_code
            if status in self.retry.statuses and attempt < attempts and status not in ok:
                time.sleep(self.retry.pause(attempt, response))
                continue
            if status >= 400 and status not in ok:
                raise _api_error(response, method, url)
            return response

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

        The bound is ``max_concurrency`` unless ``workers`` is smaller. The first
        exception stops the iteration and is raised.
        """
        items = list(items)
        n = min(workers or self.max_concurrency, self.max_concurrency, max(len(items), 1))
        if n <= 1 or len(items) <= 1:
            for item in items:
                yield fn(item)
            return
        with ThreadPoolExecutor(max_workers=n) as pool:
            yield from pool.map(fn, items)


def decode_json(response: httpx.Response, method: str = "GET") -> Any:
    """Decode a response body, raising :class:`DecodeError` naming the address."""
    if response.status_code == 204 or not response.content:
        return None
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
