"""The sandbox's ASGI application: both services' route tables under one address.

The platform API is served under ``/api/v2`` and the secrets server under
``/v1``. Each service package contributes its routes; this module only mounts
them, stamps every answer with the sandbox clock's ``Date`` header, and turns
an unexpected exception into a shaped 500 (which is always a sandbox bug: a
client's mistake gets a 4xx from the handlers).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from email.utils import format_datetime
from typing import TYPE_CHECKING, Any, Protocol

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount

from ._clock import Clock
from ._faults import Faults, InjectFaults
from ._wire import api_of, error_response

if TYPE_CHECKING:
    from .platform.models import PlatformService
    from .secrets.models import SecretsService

log = logging.getLogger("toolkit.sandbox")

__all__ = ["Served", "build_app"]


class _ServedOptions(Protocol):
    @property
    def state(self) -> str | None: ...
    @property
    def rate_limit(self) -> float | None: ...
    @property
    def allow_hosts(self) -> list[str]: ...


class Served(Protocol):
    """What the application serves: a :class:`toolkit.sandbox.Sandbox`, named by what the
    application reads of it so that it does not import the sandbox that builds it."""

    rate_limited: int

    @property
    def clock(self) -> Clock: ...
    @property
    def faults(self) -> Faults: ...
    @property
    def options(self) -> _ServedOptions: ...
    @property
    def platform(self) -> PlatformService: ...
    @property
    def secrets(self) -> SecretsService: ...
    def persist(self, *, service: str | None = None) -> None: ...


# The names a sandbox is served under on this machine; any other Host is refused,
# so a page from elsewhere cannot reach it by pointing its own name at 127.0.0.1
# (DNS rebinding). ``--allow-host`` adds names (a proxy's, say).
LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")


def _split_host(value: str) -> tuple[str, str | None]:
    """``name:port`` or ``[v6]:port`` into the name (lower case) and the port, if any."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value.partition("]")
        port = rest[1:] if rest.startswith(":") else None
        return name + "]", port
    name, colon, port = value.partition(":")
    return name, (port if colon else None)


class HostCheck:
    """Pure ASGI middleware: only the Host values the sandbox is served under get through.

    Those are ``localhost``, ``127.0.0.1`` and ``[::1]`` (and the address it
    listens on, when that is not a wildcard), each with or without the port it
    serves on, plus each ``--allow-host`` name (any port, unless it names one).
    Anything else gets 400 naming the Host and the option that would accept it.
    """

    def __init__(self, app: Any, allowed: Sequence[str] = ()) -> None:
        self.app = app
        self.allowed = [_split_host(name) for name in allowed]

    def accepts(self, host: str, server: tuple[str, int] | None) -> bool:
        name, port = _split_host(host)
        if not name:
            return False
        served = set(LOCAL_NAMES)
        if server is not None and server[0] not in ("0.0.0.0", "::", ""):
            served.add(f"[{server[0]}]" if ":" in server[0] else server[0])
        if name in served:
            return port is None or server is None or port == str(server[1])
        return any(name == n and (p is None or p == port) for n, p in self.allowed)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = ""
        for name, value in scope.get("headers", []):
            if name == b"host":
                host = value.decode("latin-1")
                break
        server = scope.get("server")
        if self.accepts(host, tuple(server) if server else None):
            await self.app(scope, receive, send)
            return
        shown = host or "(none)"
        text = (
            f"Host header {shown!r} is not a name this sandbox is served under "
            f"({', '.join(LOCAL_NAMES)}); start it with --allow-host NAME to accept another"
        )
        await error_response(api_of(scope["path"]), 400, text)(scope, receive, send)


class _DateHeader:
    """Pure ASGI middleware: the ``Date`` header comes from the sandbox clock."""

    def __init__(self, app: Any, sandbox: Served) -> None:
        self.app = app
        self.sandbox = sandbox
        # The header of the last second answered in: written once a second, not once
        # an answer (the sandbox serves thousands a second in the scale benchmarks).
        self._second: tuple[int, bytes] = (-1, b"")

    def _date(self) -> bytes:
        now = self.sandbox.clock.now()
        second = int(now.timestamp())
        if self._second[0] != second:
            self._second = (second, format_datetime(now, usegmt=True).encode())
        return self._second[1]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_date(message: Any) -> None:
            if message["type"] == "http.response.start":
                date = self._date()
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
                headers.append((b"date", date))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_date)


class _RateLimit:
    """Pure ASGI middleware: the platform's per-token request limit, when simulated.

    A token may send ``per_second`` requests a second to ``/api/v2`` (the
    public service allows 30); past that it gets 429 with ``Retry-After`` and
    ``X-RateLimit-Reset``, as the real service answers.
    """

    def __init__(self, app: Any, per_second: float, sandbox: Served) -> None:
        self.app = app
        self.per_second = per_second
        self.sandbox = sandbox
        self.windows: dict[bytes, tuple[float, int]] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/api/v2"):
            await self.app(scope, receive, send)
            return
        token = b""
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                token = value
                break
        now = time.monotonic()
        start, count = self.windows.get(token, (now, 0))
        if now - start >= 1.0:
            start, count = now, 0
        if count >= self.per_second:
            self.sandbox.rate_limited += 1
            reset = max(1.0 - (now - start), 0.001)
            response = error_response(
                "platform",
                429,
                "Too many requests",
                headers={
                    "Retry-After": str(math.ceil(reset)),
                    "X-RateLimit-Limit": f"{self.per_second:g}",
                    "X-RateLimit-Reset": f"{reset:.3f}",
                },
            )
            await response(scope, receive, send)
            return
        self.windows[token] = (start, count + 1)
        await self.app(scope, receive, send)


class _Persist:
    """Pure ASGI middleware: with ``--state``, every answer waits until what it changed is stored.

    Reads too: a GET may issue a credential (``database/creds/...``) the client
    then holds (see ``_state``).
    """

    def __init__(self, app: Any, sandbox: Served) -> None:
        self.app = app
        self.sandbox = sandbox

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        # The two APIs' states share only the clock: a write to one leaves the other be.
        service = (
            "platform"
            if path.startswith("/api/v2")
            else "secrets"
            if path.startswith("/v1")
            else None
        )

        async def send_after_store(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.sandbox.persist(service=service)
            await send(message)

        await self.app(scope, receive, send_after_store)


def build_app(sandbox: Served) -> Any:
    from .platform.http.routes import routes as platform_routes
    from .secrets.http.routes import routes as secrets_routes

    async def crashed(request: Request, exc: Exception) -> Response:
        log.exception("sandbox bug while serving %s %s", request.method, request.url.path)
        return error_response(api_of(request.url.path), 500, "internal error in the sandbox")

    async def http_error(request: Request, exc: Exception) -> Response:
        # Unknown paths and methods, in each API's error shape.
        status = getattr(exc, "status_code", 404)
        if request.url.path.startswith("/v1"):
            text = (
                "unsupported operation"
                if status == 405
                else f"no handler for route {request.url.path!r}"
            )
        else:
            text = "method not allowed" if status == 405 else "not found"
        return error_response(api_of(request.url.path), status, text)

    app = Starlette(
        routes=[
            Mount("/api/v2", routes=platform_routes(sandbox.platform)),
            Mount("/v1", routes=secrets_routes(sandbox.secrets)),
        ],
        exception_handlers={Exception: crashed, HTTPException: http_error},
    )
    served: Any = app
    if sandbox.options.state:
        served = _Persist(served, sandbox)
    if sandbox.options.rate_limit:
        served = _RateLimit(served, sandbox.options.rate_limit, sandbox)
    return HostCheck(
        InjectFaults(_DateHeader(served, sandbox), sandbox.faults), sandbox.options.allow_hosts
    )
