"""The sandbox's ASGI application: both services' route tables under one address.

The platform API is served under ``/api/v2`` and the secrets server under
``/v1``. Each service package contributes its routes; this module only mounts
them, stamps every answer with the sandbox clock's ``Date`` header, and turns
an unexpected exception into a shaped 500 (which is always a sandbox bug: a
client's mistake gets a 4xx from the handlers).
"""

from __future__ import annotations

import logging
from email.utils import format_datetime
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount

if TYPE_CHECKING:
    from . import Sandbox

log = logging.getLogger("toolkit.sandbox")

__all__ = ["build_app"]


class _DateHeader:
    """Pure ASGI middleware: the ``Date`` header comes from the sandbox clock."""

    def __init__(self, app: Any, sandbox: Sandbox) -> None:
        self.app = app
        self.sandbox = sandbox

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_date(message: Any) -> None:
            if message["type"] == "http.response.start":
                date = format_datetime(self.sandbox.clock.now(), usegmt=True).encode()
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
                headers.append((b"date", date))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_date)


def build_app(sandbox: Sandbox) -> Any:
    from .platform.routes import routes as platform_routes
    from .secrets.routes import routes as secrets_routes

    async def crashed(request: Request, exc: Exception) -> Response:
        log.exception("sandbox bug while serving %s %s", request.method, request.url.path)
        if request.url.path.startswith("/v1"):
            return JSONResponse({"errors": ["internal error in the sandbox"]}, status_code=500)
        return JSONResponse(
            {"errors": [{"status": "500", "title": "internal error in the sandbox"}]},
            status_code=500,
            media_type="application/vnd.api+json",
        )

    async def http_error(request: Request, exc: Exception) -> Response:
        # Unknown paths and methods, in each API's error shape.
        status = getattr(exc, "status_code", 404)
        if request.url.path.startswith("/v1"):
            text = "unsupported operation" if status == 405 else f"no handler for route {request.url.path!r}"
            return JSONResponse({"errors": [text]}, status)
        title = "method not allowed" if status == 405 else "not found"
        return JSONResponse(
            {"errors": [{"status": str(status), "title": title}]},
            status_code=status,
            media_type="application/vnd.api+json",
        )

    app = Starlette(
        routes=[
            Mount("/api/v2", routes=platform_routes(sandbox.platform)),
            Mount("/v1", routes=secrets_routes(sandbox.secrets)),
        ],
        exception_handlers={Exception: crashed, HTTPException: http_error},
    )
    return _DateHeader(app, sandbox)
