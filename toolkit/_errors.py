"""The toolkit's one exception hierarchy.

    ToolkitError
    ├── ConfigurationError      no address or token configured, bad TLS options
    ├── TransportError          the server could not be reached or did not answer usefully
    │   ├── ConnectError        connection refused, DNS failure
    │   ├── TLSError            certificate or handshake failure
    │   ├── TimeoutError        no answer within the timeout (or the deadline of a fan-out)
    │   ├── DecodeError         the answer was not the JSON the API promises
    │   │   └── MissingField    a field the API promises is not there (also a KeyError)
    │   ├── ProtocolError       the answer broke HTTP's rules: its framing, a status
    │   │                       that is no final one (1xx, outside 200-599), a pause
    │   │                       header that is not a number, a body over the size limit
    │   └── OutcomeUnknown      a write that is not safe to repeat was sent, and no
    │                           usable answer came back (the connection broke after
    │                           the request was written, a gateway answered 502/504,
    │                           or the deadline passed): the server may or may not
    │                           have acted. It is never sent again by the toolkit;
    │                           the message says how to check. A write that timed
    │                           out is both an OutcomeUnknown and a TimeoutError.
    ├── APIError                the server answered with an error status
    │   ├── Redirected          3xx the toolkit would not follow (see the client's redirect rule)
    │   ├── BadRequest          400
    │   ├── Unauthorized        401
    │   ├── PermissionDenied    403 (the token lacks a capability)
    │   │   └── TokenRefused    403/401 for a token the server does not accept at all
    │   ├── NotFound            404
    │   │   ├── NamespaceNotFound  the namespace the client is set to does not exist
    │   │   └── MountNotFound      nothing is mounted at the path (no handler for route)
    │   ├── MethodNotAllowed    405 (OpenBao's "unsupported operation")
    │   ├── Conflict            409
    │   ├── PreconditionFailed  412 (agent still idle or busy)
    │   ├── Unprocessable       422
    │   ├── RateLimited         429
    │   └── ServerError         5xx
    ├── InputError              the toolkit refused bad input before sending anything
    └── PartialCoverage         an audit could not read all it was asked to (toolkit.coverage)

Every message names the address and what went wrong, and never carries a request
body, a header or any other value that could be a secret. An error may carry a
``hint``, what the operator can do about it (log in again, ask for a policy, fix
the address); ``str(error)`` ends with it, so the last line of a traceback, a
papermill failure and the one-line rendering in Jupyter (:mod:`toolkit._ipython`)
all name both.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

# The error tree users catch, and only it: ``toolkit`` offers every name listed here.
# The HTTP layer's own helpers below (WriteTimedOut, error_for_status, one_line) are
# imported by name.
__all__ = [
    "APIError",
    "BadRequest",
    "ConfigurationError",
    "Conflict",
    "ConnectError",
    "DecodeError",
    "InputError",
    "MethodNotAllowed",
    "MissingField",
    "MountNotFound",
    "NamespaceNotFound",
    "NotFound",
    "OutcomeUnknown",
    "PartialCoverage",
    "PermissionDenied",
    "PreconditionFailed",
    "ProtocolError",
    "RateLimited",
    "Redirected",
    "ServerError",
    "TLSError",
    "TimeoutError",
    "TokenRefused",
    "ToolkitError",
    "TransportError",
    "Unauthorized",
    "Unprocessable",
]


# How OpenBao (go-multierror) wraps a message: "1 error occurred:\n\t* permission denied\n\n".
_WRAPPED = re.compile(r"\d+ errors? occurred:\s*\*\s*(.*?)\s*", re.S)


def one_line(message: str) -> str:
    """A server's error message on one line: OpenBao's ``N error(s) occurred: * ...``
    wrapping taken off (several items joined by "; "), whitespace runs made one space."""
    found = _WRAPPED.fullmatch(message)
    if found:
        items = re.split(r"\s*\n\s*\*\s*", found.group(1))
        message = "; ".join(i for i in items if i)
    return " ".join(message.split())


def is_wrapped(message: str) -> bool:
    """Whether ``message`` carries OpenBao's ``N error(s) occurred:`` wrapping."""
    return _WRAPPED.fullmatch(message) is not None


E = TypeVar("E", bound="APIError")


class ToolkitError(Exception):
    """Base of every error the toolkit raises.

    ``hint`` says what to do about it, in one sentence (empty when the message
    says it already); ``str()`` gives the message and the hint on one line.
    """

    hint: str = ""

    def __str__(self) -> str:
        text = super().__str__()
        hint = self.hint
        if hint and hint not in text:
            return f"{text} (hint: {hint})"
        return text


class ConfigurationError(ToolkitError):
    """The client is missing an address or token, or its options conflict."""


class InputError(ToolkitError, ValueError):
    """The toolkit refused a value before sending it (wrong format, out of range)."""


class PartialCoverage(ToolkitError):
    """An audit's coverage is partial: it could not read everything it was asked to,
    and a partial audit was not allowed.

    The message names the places not read; ``allow_incomplete=True`` lets the audit
    finish marked incomplete instead."""


class TransportError(ToolkitError):
    """The request did not produce a usable answer from the server."""

    def __init__(self, message: str, *, method: str = "", url: str = "") -> None:
        super().__init__(message)
        self.method = method
        self.url = url


class ConnectError(TransportError):
    """The server refused the connection or could not be resolved."""


class TLSError(TransportError):
    """TLS verification or the handshake failed."""


class TimeoutError(TransportError):  # noqa: A001 - deliberately the toolkit's own
    """The server did not answer within the timeout."""


class DecodeError(TransportError):
    """The answer was not valid JSON, or was cut short."""


class MissingField(DecodeError, KeyError):
    """A field the API promises is not in the answer: ``record["name"]`` of a record
    read from the server. Also a KeyError, for code that asks whether it is there."""

    def __str__(self) -> str:  # not quoted, as KeyError's would be
        return str(self.args[0]) if self.args else ""


class ProtocolError(TransportError):
    """The answer broke HTTP's rules, or a limit the client sets on answers."""


class OutcomeUnknown(TransportError):
    """A write was sent and no usable answer came back: it may or may not have been applied.

    ``check`` says how to find out (for example: read the key's ``latest_version``).
    """

    def __init__(self, message: str, *, method: str = "", url: str = "", check: str = "") -> None:
        super().__init__(message, method=method, url=url)
        self.check = check


class WriteTimedOut(OutcomeUnknown, TimeoutError):
    """A write got no answer within the deadline: unknown outcome, and a timeout."""


class APIError(ToolkitError):
    """The server answered with an error status.

    Attributes: ``status`` (int), ``messages`` (the server's error messages as a
    list of strings), ``method`` and ``url`` of the request, ``errors`` (the raw
    error objects for JSON:API answers), ``headers`` (the response headers).
    """

    def __init__(
        self,
        status: int,
        messages: list[str],
        *,
        method: str = "",
        url: str = "",
        errors: list[Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.messages = messages
        self.method = method
        self.url = url
        self.errors = errors or []
        self.headers = headers or {}
        detail = "; ".join(messages) if messages else "no message"
        super().__init__(f"{method} {url} answered {status}: {detail}")

    @property
    def message(self) -> str:
        """The server's messages joined into one line."""
        return "; ".join(self.messages)

    def restated(self, cls: type[E], messages: list[str], *, hint: str = "") -> E:
        """The same answer as a ``cls`` error saying ``messages`` (and ``hint``): for a
        client that knows better what the answer means (a missing namespace, a
        refused token)."""
        error = cls(
            self.status,
            messages,
            method=self.method,
            url=self.url,
            errors=self.errors,
            headers=self.headers,
        )
        error.hint = hint
        return error


class Redirected(APIError):
    """3xx: the server sent the request elsewhere, and the toolkit did not follow."""


class BadRequest(APIError):
    """400: the server refused the request's content."""


class Unauthorized(APIError):
    """401: missing or invalid credentials."""


class PermissionDenied(APIError):
    """403: the token lacks the capability."""


class NotFound(APIError):
    """404: the record does not exist, or the caller may not see it."""


class NamespaceNotFound(NotFound):
    """404 ``namespace not found``: the namespace the client sends does not exist
    (or the token may not see it). ``namespace`` names it."""

    namespace: str = ""


class MountNotFound(NotFound):
    """404 ``no handler for route``: nothing is mounted at the path asked
    (a mistyped mount, or an engine not enabled). ``mount`` names the path."""

    mount: str = ""


class TokenRefused(PermissionDenied):
    """The server does not accept the token at all (invalid, revoked or expired),
    as opposed to a token that lacks one capability (:class:`PermissionDenied`).

    OpenBao answers both with 403 ``permission denied``; the secrets client tells
    them apart by looking the token up once (``auth/token/lookup-self``).
    ``expired`` is True only when the client knew the token's expiry from an
    earlier look-up and that time has passed."""

    expired: bool = False


class MethodNotAllowed(APIError):
    """405: the endpoint is disabled or does not take this method."""


class Conflict(APIError):
    """409: the request conflicts with the current state."""


class PreconditionFailed(APIError):
    """412: the record is not in a state that allows the operation."""


class Unprocessable(APIError):
    """422: the body was malformed or broke a rule."""


class RateLimited(APIError):
    """429: too many requests; retried automatically for idempotent calls."""


class ServerError(APIError):
    """5xx: the server failed."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: PermissionDenied,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    412: PreconditionFailed,
    422: Unprocessable,
    429: RateLimited,
}


def error_for_status(status: int) -> type[APIError]:
    """The exception class for an HTTP error status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    if 300 <= status < 400:
        return Redirected
    return APIError
