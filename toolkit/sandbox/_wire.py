"""What both halves of the sandbox say on the wire alike: the request a handler sees, and errors.

- :class:`SandboxRequest` is the one request class of both APIs. A handler is
  ``async def handler(call: <Side>Request) -> Response``; ``SecretsRequest`` and
  ``PlatformRequest`` are this class with its service and caller types filled
  in, not classes of their own.
- :func:`error_response` is the one function that shapes an API error, in the
  shape of the API it answers for: the secrets API's ``{"errors": ["text"]}``
  and the platform's JSON:API ``{"errors": [{"status": ..., "title": ...}]}``.
  Every refusal of either half, and the app's own (an unknown path, a Host
  refused, a rate limit, a sandbox bug), goes through it; ``tests/sandbox/
  test_house.py`` fails if a second one appears.

State never sees either: it raises typed errors (``platform.errors``,
``secrets.errors``) and the HTTP side of each half maps them to a status here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import JSONResponse

from .._spec.jsonapi import MEDIA_TYPE

__all__ = ["API", "JSON_API", "SandboxRequest", "api_of", "error_response"]

ServiceT = TypeVar("ServiceT")
CallerT = TypeVar("CallerT")

API = Literal["secrets", "platform"]
JSON_API = MEDIA_TYPE


@dataclass
class SandboxRequest(Generic[ServiceT, CallerT]):
    """One request, as a handler of either API sees it: the HTTP request, the
    service state it acts on, who is calling and the decoded body.

    The secrets API routes by more than the path, and fills in the rest:
    ``path`` (below ``/v1/``), ``is_list`` (``LIST`` or ``?list=true``), the
    ``namespace`` and the engine ``mount`` the call was routed to. The
    platform's calls leave them at their defaults.
    """

    request: Request
    service: ServiceT
    caller: CallerT
    body: Any
    path: str = ""
    is_list: bool = False
    namespace: str = ""
    mount: Any = None

    @property
    def params(self) -> dict[str, str]:
        """The path's parameters (``{name}`` in a route)."""
        return {k: str(v) for k, v in self.request.path_params.items()}

    @property
    def query(self) -> QueryParams:
        return self.request.query_params

    def arg(self, name: str, default: Any = None) -> Any:
        """A parameter from the JSON body, else the query string, else ``default``."""
        if isinstance(self.body, Mapping) and name in self.body:
            return self.body[name]
        if name in self.request.query_params:
            return self.request.query_params[name]
        return default


def api_of(path: str) -> API:
    """Which API a request path belongs to (``/v1`` is the secrets server's)."""
    return "secrets" if path.startswith("/v1") else "platform"


def error_response(
    api: API,
    status: int,
    *errors: str | Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """The API's error answer, the one place either shape is built.

    Secrets: each error is a message (``error_response("secrets", 404)`` has
    none, as the server's bare 404). Platform: each error is a title, or the
    members of a JSON:API error object after ``status`` (``title``,
    ``detail``, ``source``), which is filled in from ``status``.
    """
    if api == "secrets":
        return JSONResponse(
            {"errors": [str(e) for e in errors]}, status_code=status, headers=headers
        )
    objects = [
        {"status": str(status), **({"title": e} if isinstance(e, str) else e)} for e in errors
    ]
    return JSONResponse(
        {"errors": objects}, status_code=status, media_type=JSON_API, headers=headers
    )
