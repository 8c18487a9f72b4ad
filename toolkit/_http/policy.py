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
- A non-repeatable call whose outcome is unknown raises :class:`OutcomeUnknown`:
  whatever failed once the request's bytes left (TCP, TLS, a proxy).
- A request the library refused before sending is an :class:`InputError`, never retried.
- A dropped connection is tried again at once the first time (a kept connection
  the server or a proxy closed while idle is the common case), then after pauses.
- Every pause is finite, non-negative and at most ``max_pause``; a pause header
  that is not a number is a :class:`ProtocolError`. A call's pauses and tries
  stay within its budget: a pause beyond it ends the call (a 429 with
  :class:`RateLimited`, anything else with the error of its last try).
"""

from __future__ import annotations

import asyncio
import html
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from html.parser import HTMLParser
from typing import Any, Literal

from .._errors import (
    APIError,
    ConnectError,
    InputError,
    OutcomeUnknown,
    ProtocolError,
    TimeoutError,
    TLSError,
    TransportError,
    WriteTimedOut,
    error_for_status,
    one_line,
)
from .._masking import HIDDEN, Sensitive
from .response import Response

__all__ = [
    "REPEATABLE_METHODS",
    "Failure",
    "RetryPolicy",
    "api_error",
    "judge",
    "mask",
    "repeatable",
    "server_pause",
]

REPEATABLE_METHODS = frozenset({"GET", "HEAD", "LIST", "OPTIONS"})
RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Answers that ask the client to send less: a fan-out narrows on them.
SLOW_DOWN = frozenset({429, 503})
# A gateway's word that it does not know what its upstream did.
_GATEWAY_UNSURE = frozenset({502, 504})

FailureKind = Literal["connect", "tls", "timeout", "dropped", "malformed", "oversize", "refused"]


@dataclass(frozen=True)
class Failure:
    """A call that got no answer: what kind of failure, and a reason to show.

    ``connect``: no connection, nothing sent. ``tls``: the handshake or the
    certificate failed, nothing sent. ``timeout``: the deadline passed.
    ``dropped``: the connection broke after the request may have been written.
    ``malformed``: the answer broke HTTP's framing rules (or its status is no
    final one). ``oversize``: the answer's body is over the client's limit.
    ``refused``: the library would not send the request (a header
    or address it cannot carry); nothing was sent. ``via`` names the proxy the
    connection went through (its address, never its credentials, and the
    variable it came from), or is empty.
    """

    kind: FailureKind
    reason: str
    via: str = ""


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

    def pause(self, attempt: int, response: Response | None, *, dropped: bool = False) -> float:
        """Seconds to wait after try number ``attempt`` (1-based) before the next:
        finite, at least 0, at most ``max_pause``. The first retry of a dropped
        connection goes at once. Raises ValueError for a pause header that is
        not a number."""
        if response is not None:
            hinted = server_pause(response.headers)
            if hinted is not None:
                return min(max(hinted, 0.0), self.max_pause)
        if dropped:
            if attempt == 1:
                return 0.0
            attempt -= 1
        return min(self.backoff * (2 ** (attempt - 1)), self.max_pause)


def server_pause(headers: Mapping[str, str]) -> float | None:
    """The wait a server asked for, in seconds: ``X-RateLimit-Reset`` (seconds, or an
    epoch time) or ``Retry-After`` (seconds, or an HTTP date); None without one.
    Raises ValueError when a header is there but holds no finite number or date."""
    reset = headers.get("X-RateLimit-Reset")
    if reset:
        value = _finite(reset, "X-RateLimit-Reset")
        return value - time.time() if value > 1e9 else value
    retry_after = headers.get("Retry-After")
    if retry_after:
        try:
            return _finite(retry_after, "Retry-After")
        except ValueError:
            try:
                when = parsedate_to_datetime(retry_after)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(
                    "its Retry-After header is neither a number of seconds nor a date"
                ) from None
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            return (when - datetime.now(UTC)).total_seconds()
    return None


def _finite(text: str, name: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"its {name} header is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"its {name} header is not a finite number")
    return value


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
    budget: float = math.inf,
    secrets: tuple[Sensitive, ...] = (),
) -> float | None:
    """After one try: ``None`` when the answer stands, a pause in seconds before the
    next try, or the error to raise (raised here). ``budget`` is what is left of
    the call's time: a pause must end within it. ``secrets`` are the client's own
    credentials, masked wherever the server's words reach the error."""
    more = attempt < policy.attempts
    if failure is not None:
        kind, reason = failure.kind, mask(failure.reason, secrets)
        where = f"{address} through the proxy {failure.via}" if failure.via else address
        if kind == "refused":
            raise InputError(f"{method} {url}: not sent: {reason}")
        if kind == "tls":
            raise TLSError(
                f"{method} {url}: TLS failure with {where}: {reason}", method=method, url=url
            )
        if kind == "connect":
            if more and (pause := policy.pause(attempt, None)) < budget:
                return pause
            raise ConnectError(
                f"{method} {url}: cannot connect to {where}: {reason}", method=method, url=url
            )
        if kind == "timeout":
            if not may_repeat:
                raise WriteTimedOut(
                    _unknown(method, url, "no answer within the timeout", check),
                    method=method,
                    url=url,
                    check=check,
                )
            if more and (pause := policy.pause(attempt, None)) < budget:
                return pause
            raise TimeoutError(
                f"{method} {url}: no answer within the timeout", method=method, url=url
            )
        if not may_repeat:
            what = (
                f"the answer from {where} was malformed ({reason})"
                if kind == "malformed"
                else f"the answer from {where} was too large ({reason})"
                if kind == "oversize"
                else f"the connection to {where} broke before an answer ({reason})"
            )
            raise OutcomeUnknown(
                _unknown(method, url, what, check), method=method, url=url, check=check
            )
        if (
            kind == "dropped"
            and more
            and (pause := policy.pause(attempt, None, dropped=True)) < budget
        ):
            return pause
        if kind in ("malformed", "oversize"):
            what = "a malformed answer" if kind == "malformed" else "an answer too large"
            raise ProtocolError(
                f"{method} {url}: {where} sent {what}: {reason}", method=method, url=url
            )
        raise TransportError(
            f"{method} {url}: {where} broke the connection: {reason}", method=method, url=url
        )
    assert response is not None
    status = response.status_code
    if status < 300 or status == 304 or status in ok:
        return None
    if status in policy.statuses and more and (status == 429 or may_repeat):
        try:
            pause = policy.pause(attempt, response)
        except ValueError as exc:  # the server did not act (429) or may be repeated
            raise ProtocolError(
                f"{method} {url}: {address} answered {status}, and {exc}",
                method=method,
                url=url,
            ) from None
        if pause < budget:
            return pause
        response.note = (
            f"the server asked for a pause of {pause:g} s before trying again, beyond "
            f"the {max(budget, 0.0):.3g} s left of this call's time; not tried again"
        )
    if status in _GATEWAY_UNSURE and not may_repeat:
        raise OutcomeUnknown(
            _unknown(method, url, f"a gateway answered {status}", check),
            method=method,
            url=url,
            check=check,
        )
    raise api_error(response, method, url, secrets)


def mask(text: str, secrets: tuple[Sensitive, ...]) -> str:
    """``text`` with every one of ``secrets`` (the client's own credentials) hidden.
    They stay Sensitive until here, so that no frame of an error holds them plain."""
    for secret in secrets:
        value = secret.reveal()
        # "Bearer <token>": a server may quote the token alone.
        scheme, _, credential = value.partition(" ")
        for part in (value, credential) if scheme.isalpha() and credential else (value,):
            # Only a value long enough to be a secret: a short one ("e", "root")
            # would hide those letters in every word of the message.
            if len(part) >= MASKED_LENGTH and part in text:
                text = text.replace(part, HIDDEN)
    return text


# The shortest credential masked in a server's words.
MASKED_LENGTH = 8


def _masked(value: Any, secrets: tuple[Sensitive, ...]) -> Any:
    """A server's JSON value with the client's credentials hidden in every string."""
    if isinstance(value, str):
        return mask(value, secrets)
    if isinstance(value, list):
        return [_masked(v, secrets) for v in value]
    if isinstance(value, dict):
        return {mask(str(k), secrets): _masked(v, secrets) for k, v in value.items()}
    return value


def api_error(
    response: Response, method: str, url: str, secrets: tuple[Sensitive, ...] = ()
) -> APIError:
    """The :class:`APIError` subclass for an error answer, with the server's messages
    (any of ``secrets``, the client's credentials, that the server echoed hidden)."""
    messages: list[str] = []
    errors: list[Any] = []
    try:
        payload = response.json()
    except (ValueError, UnicodeDecodeError, RecursionError):
        payload = None
    if secrets:
        payload = _masked(payload, secrets)
    if isinstance(payload, dict):
        raw = payload.get("errors")
        if isinstance(raw, list):
            errors = raw
            for item in raw:
                if isinstance(item, str):
                    messages.append(one_line(item))
                elif isinstance(item, dict):
                    title, detail = str(item.get("title") or ""), str(item.get("detail") or "")
                    text = detail or title
                    if title and detail and title not in text:
                        text = f"{title}: {detail}"
                    source = item.get("source")
                    pointer = str(source.get("pointer") or "") if isinstance(source, dict) else ""
                    if pointer and pointer not in text:
                        text = f"{text} ({pointer})"
                    messages.append(one_line(text))
        elif isinstance(payload.get("message"), str):
            messages.append(one_line(payload["message"]))
    elif response.content:
        # Masked before the page's words are taken (a secret split by markup is
        # hidden whole) and after (one written with character references).
        text = mask(response.text, secrets)
        if "html" in response.headers.get("content-type", "").lower():
            text = mask(_html_words(text), secrets)
        snippet = one_line(text)[:200].strip()
        if snippet:
            messages.append(snippet)
    if response.note:
        messages.insert(0, mask(response.note, secrets))  # it may quote a Location
    cls = error_for_status(response.status_code)
    return cls(
        response.status_code,
        messages,
        method=method,
        url=url,
        errors=errors,
        headers={
            k: mask(v, secrets) for k, v in response.headers.items() if k.lower() != "set-cookie"
        },
    )


class _PageWords(HTMLParser):
    """The words of an HTML error page: its title's, else its text's."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.text: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self._in_title = self._in_title or tag == "title"

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        (self.title if self._in_title else self.text).append(data)


def _html_words(page: str) -> str:
    """What an HTML error page (a proxy's, nginx's) says, without its markup:
    ``<title>400 The plain HTTP request was sent to HTTPS port</title>`` is
    ``400 The plain HTTP request was sent to HTTPS port``.

    Only the page's first 2,048 characters are read (the parser's time grows
    with the square of a hostile page's unclosed tags: 36 ms at most here), and
    a page the parser gives up on is its text as it came. The placeholder of a
    credential masked before is kept as text, not read as a tag."""
    words = _PageWords()
    head = page[:2048]
    try:
        words.feed(head.replace(HIDDEN, html.escape(HIDDEN)))
        words.close()
    except Exception:  # noqa: BLE001 - html.parser asserts on some markup (`<![x[`)
        return head
    return " ".join(words.title) or " ".join(words.text)


async def tries_after_the_first(
    attempt: Callable[[], Awaitable[Response | Failure]],
    verdict: Callable[[int, Response | Failure], float | None],
    pause: float,
    attempts: int,
) -> Response:
    """After ``pause``, try again until ``verdict`` lets an answer stand (it raises the
    call's error when it should, and otherwise names the pause before the next try), at
    most ``attempts`` tries in all, with tenacity's loop (our predicate, our pauses).

    Only calls that need a second try pay for it: tenacity costs some 40 µs a call, a
    fifth of an exchange (docs/decisions.md).
    """
    from tenacity import AsyncRetrying, retry_if_result, stop_after_attempt

    await asyncio.sleep(pause)
    tries = [1]
    pauses = [0.0]

    async def once() -> Response | None:
        tries[0] += 1
        result = await attempt()
        wait = verdict(tries[0], result)  # raises when it should
        if wait is None:
            assert isinstance(result, Response)
            return result
        pauses[0] = wait
        return None

    retrying = AsyncRetrying(
        retry=retry_if_result(lambda r: r is None),
        wait=lambda _: pauses[0],
        stop=stop_after_attempt(max(1, attempts - 1)),
        sleep=asyncio.sleep,
        reraise=True,
    )
    answer: Response | None = await retrying(once)
    assert answer is not None
    return answer
