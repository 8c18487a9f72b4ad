"""What the layer decides, apart from how bytes move: which calls may be sent
again, how long to wait before they are, which error an answer or a failure
becomes, and which redirects are followed.

Nothing here does I/O; the engine reports what happened (an answer, or a
:class:`Failure` naming its kind) and :func:`judge` says what to do next.

The rules (issue 13, "safe repetition"):

- GET, HEAD and LIST may always be sent again. Anything else only when the
  call site marks it ``idempotent=True`` (read-only calls sent as POST, such
  as a lease lookup; calls whose repetition changes nothing, such as a lease
  revoke). On the secrets API a PUT is a POST.
- A connection that could not be opened sent nothing: any call may go again.
- 429 means the server did not act: waited out and sent again for every method.
- 503 (and 502 / 504, a dropped connection, a timeout) only for repeatable calls.
- A non-repeatable call whose outcome is unknown raises :class:`OutcomeUnknown`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal

from .._errors import (
    APIError,
    ConnectError,
    OutcomeUnknown,
    TimeoutError,
    TLSError,
    TransportError,
    WriteTimedOut,
    error_for_status,
)
from .response import Response

__all__ = [
    "REPEATABLE_METHODS",
    "Failure",
    "RetryPolicy",
    "api_error",
    "judge",
    "repeatable",
    "server_pause",
]

REPEATABLE_METHODS = frozenset({"GET", "HEAD", "LIST", "OPTIONS"})
RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Answers that ask the client to send less: a fan-out narrows on them.
SLOW_DOWN = frozenset({429, 503})
# A gateway's word that it does not know what its upstream did.
_GATEWAY_UNSURE = frozenset({502, 504})

FailureKind = Literal["connect", "tls", "timeout", "dropped", "malformed"]


@dataclass(frozen=True)
class Failure:
    """A call that got no answer: what kind of failure, and a reason to show.

    ``connect``: no connection, nothing sent. ``tls``: the handshake or the
    certificate failed, nothing sent. ``timeout``: the deadline passed.
    ``dropped``: the connection broke after the request may have been written.
    ``malformed``: the answer broke HTTP's framing rules.
    """

    kind: FailureKind
    reason: str


def repeatable(method: str, idempotent: bool | None) -> bool:
    """Whether a call may be sent again (``idempotent`` marks a call site's own knowledge)."""
    return idempotent if idempotent is not None else method in REPEATABLE_METHODS


@dataclass(frozen=True)
class RetryPolicy:
    """How calls are sent again.

    ``attempts`` counts the first try; ``backoff`` is the first pause in seconds,
    doubled on each retry up to ``max_pause``; a server's ``X-RateLimit-Reset`` or
    ``Retry-After`` wins over the computed pause (up to ``max_pause``).
    ``statuses`` are the answers that may be retried at all (see the module's rules).
    """

    attempts: int = 4
    backoff: float = 0.2
    max_pause: float = 30.0
    statuses: frozenset[int] = field(default=RETRY_STATUSES)

    def pause(self, attempt: int, response: Response | None) -> float:
        """Seconds to wait after try number ``attempt`` (1-based) before the next."""
        if response is not None:
            hinted = server_pause(response.headers)
            if hinted is not None:
                return min(max(hinted, 0.0), self.max_pause)
        return min(self.backoff * (2 ** (attempt - 1)), self.max_pause)


def server_pause(headers: Mapping[str, str]) -> float | None:
    """The wait a server asked for, in seconds: ``X-RateLimit-Reset`` (seconds, or an
    epoch time) or ``Retry-After`` (seconds, or an HTTP date); None without one."""
    reset = headers.get("X-RateLimit-Reset")
    if reset:
        try:
            value = float(reset)
        except ValueError:
            value = None
        if value is not None:
            return value - time.time() if value > 1e9 else value
    retry_after = headers.get("Retry-After")
    if retry_after:
        try:
            return float(retry_after)
        except ValueError:
            try:
                when = parsedate_to_datetime(retry_after)
            except (TypeError, ValueError):
                return None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            return (when - datetime.now(UTC)).total_seconds()
    return None


def _unknown(method: str, url: str, what: str, check: str) -> str:
    how = check or "read the record back"
    return (
        f"{method} {url}: {what}. The request was sent, so the server may or may not "
        f"have acted on it; it was not sent again. Check before trying again: {how}."
    )


def judge(
    policy: RetryPolicy,
    method: str,
    url: str,
    address: str,
    *,
    may_repeat: bool,
    attempt: int,
    ok: frozenset[int],
    check: str,
    response: Response | None,
    failure: Failure | None,
) -> float | None:
    """After one try: ``None`` when the answer stands, a pause in seconds before the
    next try, or the error to raise (raised here)."""
    more = attempt < policy.attempts
    if failure is not None:
        kind, reason = failure.kind, failure.reason
        if kind == "tls":
            raise TLSError(f"{method} {url}: TLS failure: {reason}", method=method, url=url)
        if kind == "connect":
            if more:
                return policy.pause(attempt, None)
            raise ConnectError(
                f"{method} {url}: cannot connect to {address}: {reason}", method=method, url=url
            )
        if kind == "timeout":
            if not may_repeat:
                raise WriteTimedOut(
                    _unknown(method, url, "no answer within the timeout", check),
                    method=method,
                    url=url,
                    check=check,
                )
            if more:
                return policy.pause(attempt, None)
            raise TimeoutError(
                f"{method} {url}: no answer within the timeout", method=method, url=url
            )
        if not may_repeat:
            what = (
                f"the answer from {address} was malformed ({reason})"
                if kind == "malformed"
                else f"the connection to {address} broke before an answer ({reason})"
            )
            raise OutcomeUnknown(
                _unknown(method, url, what, check), method=method, url=url, check=check
            )
        if kind == "dropped" and more:
            return policy.pause(attempt, None)
        what = "sent a malformed answer" if kind == "malformed" else "broke the connection"
        raise TransportError(f"{method} {url}: {address} {what}: {reason}", method=method, url=url)
    assert response is not None
    status = response.status_code
    if status < 300 or status == 304 or status in ok:
        return None
    if status in policy.statuses and more and (status == 429 or may_repeat):
        return policy.pause(attempt, response)
    if status in _GATEWAY_UNSURE and not may_repeat:
        raise OutcomeUnknown(
            _unknown(method, url, f"a gateway answered {status}", check),
            method=method,
            url=url,
            check=check,
        )
    raise api_error(response, method, url)


def api_error(response: Response, method: str, url: str) -> APIError:
    """The :class:`APIError` subclass for an error answer, with the server's messages."""
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
                    text = str(item.get("detail") or item.get("title") or "")
                    if item.get("title") and item.get("detail") and str(item["title"]) not in text:
                        text = f"{item['title']}: {item['detail']}"
                    source = item.get("source")
                    pointer = source.get("pointer") if isinstance(source, dict) else None
                    if pointer and str(pointer) not in text:
                        text = f"{text} ({pointer})"
                    messages.append(str(text))
        elif isinstance(payload.get("message"), str):
            messages.append(payload["message"])
    elif response.content:
        snippet = response.text[:200].strip()
        if snippet:
            messages.append(snippet)
    if response.note:
        messages.insert(0, response.note)
    cls = error_for_status(response.status_code)
    return cls(
        response.status_code,
        messages,
        method=method,
        url=url,
        errors=errors,
        headers={k: v for k, v in response.headers.items() if k.lower() != "set-cookie"},
    )
