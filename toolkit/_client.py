"""What both service clients share: building the HTTP layer from settings, closing it,
and turning an error into one an operator can act on (:meth:`ServiceClient.explain`)."""

from __future__ import annotations

import re
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any, Self
from urllib.parse import urlsplit

from ._config import Settings
from ._errors import (
    BadRequest,
    ConnectError,
    ProtocolError,
    TLSError,
    ToolkitError,
    TransportError,
)
from ._http import HTTPLayer, RetryPolicy
from ._http.redirects import NO_REDIRECTS, RedirectRule
from ._http.response import Response
from ._masking import Sensitive

__all__ = ["ExplainingLayer", "ServiceClient", "transport_hint"]


class ExplainingLayer(HTTPLayer):
    """The HTTP layer, its errors passed through ``explain`` before they are raised.

    ``explain`` (the client's) may give the error a ``hint`` or return a more
    precise error in its place; it runs in the caller's thread, after the call
    has failed, so it may itself send a read (the secrets client looks its token
    up once to tell a refused token from a missing permission). It never sends
    the failed call again. ``check_404`` sees every 404 a caller took back as an
    answer (``ok_statuses``) and may raise instead: the secrets client raises
    there for a missing namespace or mount, so that no walk reads one as an
    empty folder.
    """

    explain: Callable[[ToolkitError], ToolkitError] | None = None
    check_404: Callable[[ExplainingLayer, Response], None] | None = None

    def request(self, *args: Any, **kwargs: Any) -> Any:
        try:
            response = super().request(*args, **kwargs)
            if response.status_code == 404 and self.check_404 is not None:
                self.check_404(self, response)
            return response
        except ToolkitError as exc:
            raise self.explained(exc) from exc.__cause__

    def many(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        answers = super().many(*args, **kwargs)
        try:
            for response in answers:
                if response.status_code == 404 and self.check_404 is not None:
                    self.check_404(self, response)
                yield response
        except ToolkitError as exc:
            raise self.explained(exc) from exc.__cause__
        finally:
            close = getattr(answers, "close", None)
            if close is not None:
                close()  # a raise above stops the fan-out: nothing more is sent

    def explained(self, exc: ToolkitError) -> ToolkitError:
        """``exc`` as the client explains it (also for an error built from an answer
        a caller took back with ``ok_statuses``)."""
        explain = self.explain
        if explain is None or getattr(exc, "_explained", False):
            return exc
        better = explain(exc)
        better._explained = True  # type: ignore[attr-defined]
        if better is not exc:
            better.__traceback__ = exc.__traceback__
            better.__suppress_context__ = True
        return better


# A TLS record where an HTTP status line belongs (an alert or a handshake, version 3.x),
# as the parser quotes the bad line's bytes (its backslashes escaped once more or not).
_TLS_RECORD = re.compile(r"\\+x1[56]\\+x03")


def transport_hint(exc: ToolkitError, address: str) -> str:
    """What to do about an address mistake the error shows, or "".

    Connection refused: is the server running on that port; ``https://`` spoken to
    a plain-HTTP port (OpenSSL's ``WRONG_VERSION_NUMBER``), and ``http://`` spoken
    to a TLS port (a Go server answers 400 "HTTP request to an HTTPS server", nginx
    400 "plain HTTP request was sent to HTTPS port", OpenSSL drops the connection, and
    others send a TLS alert where the status line belongs)."""
    parts = urlsplit(address)
    host = parts.hostname or "?"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    text = str(exc)
    lowered = text.lower()
    other = "http" if parts.scheme == "https" else "https"
    if isinstance(exc, TLSError) and (
        "wrong_version_number" in lowered or "wrong version number" in lowered
    ):
        return (
            f"{host}:{port} does not speak TLS: use http://{host}:{port} (or the server's TLS port)"
        )
    if isinstance(exc, ConnectError) and ("refused" in lowered or "connect call failed" in lowered):
        return f"is the server running on port {port} of {host}? check the address"
    if parts.scheme == "http" and (
        (isinstance(exc, BadRequest) and ("https server" in lowered or "https port" in lowered))
        or (type(exc) is TransportError and "broke" in lowered)
        or (isinstance(exc, ProtocolError) and _TLS_RECORD.search(text) is not None)
    ):
        return f"if {host}:{port} speaks TLS, use {other}://{host}:{port}"
    return ""


class ServiceClient:
    """A connection to one service; subclasses add one attribute per API area."""

    def __init__(
        self,
        settings: Settings,
        api_prefix: str,
        headers: dict[str, str | Sensitive],
        *,
        timeout: float,
        fan_out_timeout: float,
        max_concurrency: int,
        retry: RetryPolicy | None,
        connector: Any,
        redirects: RedirectRule = NO_REDIRECTS,
        token_headers: tuple[str, ...] = (),
    ) -> None:
        self.address = settings.address.rstrip("/")
        self.http = ExplainingLayer(
            settings.address,
            api_prefix,
            headers=headers,
            timeout=timeout,
            fan_out_timeout=fan_out_timeout,
            tls=settings.tls,
            retry=retry,
            max_concurrency=max_concurrency,
            redirects=redirects,
            token_headers=token_headers,
            connector=connector,
        )
        self._explaining = threading.local()
        self._bind_explain()

    def _bind_explain(self) -> None:
        """Have :attr:`http` pass its errors through :meth:`explain` (again for a view
        with its own layer, such as a namespace's)."""
        # A weak reference: the layer must not keep its client alive.
        this = weakref.ref(self)
        busy = self._explaining

        def explain(exc: ToolkitError) -> ToolkitError:
            client = this()
            # An error met while explaining another (the token look-up) stays as it is.
            if client is None or getattr(busy, "on", False):
                return exc
            busy.on = True
            try:
                return client.explain(exc)
            finally:
                busy.on = False

        if isinstance(self.http, ExplainingLayer):
            self.http.explain = explain

    def explain(self, exc: ToolkitError) -> ToolkitError:
        """``exc``, or a more precise error, with a hint of what to do (subclasses add theirs)."""
        if not exc.hint:
            hint = transport_hint(exc, self.address)
            if hint:
                exc.hint = hint
        return exc

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if "http" not in vars(self):  # half-built: a traceback's locals show it too
            return f"<{type(self).__name__} (not built)>"
        return f"<{type(self).__name__} {self.address}>"
