"""The secrets server's HTTP conventions, in one place (spec part 1).

- errors are ``{"errors": ["message"]}``;
- answers use the envelope ``request_id, lease_id, renewable, lease_duration,
  data, wrap_info, warnings, auth`` unless an endpoint shows its fields bare;
- the token arrives in ``X-Service-Token``, ``X-Vault-Token`` or
  ``Authorization: Bearer``; the namespace in ``X-Vault-Namespace``;
- ``LIST`` and ``GET ?list=true`` are the same request;
- ACL capabilities are checked here, before any handler runs, so a handler
  only sees permitted requests.

Handlers are written as ``async def handler(call: Call) -> Response`` and
registered with :func:`route`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import SecretsError

if TYPE_CHECKING:
    from ..models import SecretsService
    from ..tokens import Token

__all__ = ["Call", "SecretsError", "envelope", "error", "route", "no_content"]

TOKEN_HEADERS = ("x-service-token", "x-vault-token")
NAMESPACE_HEADERS = ("x-vault-namespace", "x-service-namespace")


def error(status: int, *messages: str) -> JSONResponse:
    return JSONResponse({"errors": list(messages)}, status_code=status)


def no_content() -> Response:
    return Response(status_code=204)


def envelope(
    data: Any = None,
    *,
    status: int = 200,
    lease_id: str = "",
    renewable: bool = False,
    lease_duration: int = 0,
    warnings: list[str] | None = None,
    auth: Any = None,
    wrap_info: Any = None,
    top_level: bool = False,
) -> JSONResponse:
    """The standard response envelope (spec part 1, convention 4).

    ``top_level`` also copies the fields of ``data`` beside the envelope, as the
    server does for ``sys/`` paths (``{"keys": [...], "data": {"keys": [...]}, ...}``).
    """
    payload: dict[str, Any] = {}
    if top_level and isinstance(data, dict):
        payload.update(data)
    payload.update(
        {
            "request_id": str(uuid.uuid4()),
            "lease_id": lease_id,
            "renewable": renewable,
            "lease_duration": lease_duration,
            "data": data,
            "wrap_info": wrap_info,
            "warnings": warnings or None,
            "auth": auth,
        }
    )
    return JSONResponse(payload, status_code=status)


def bare(payload: Any, status: int = 200) -> JSONResponse:
    """An answer that shows its fields directly (for example ``sys/seal-status``)."""
    return JSONResponse(payload, status_code=status)


@dataclass
class Call:
    """One permitted request, as a handler sees it."""

    request: Request
    service: SecretsService
    token: Token | None
    body: dict[str, Any]
    path: str  # the API path without /v1, e.g. "sys/policies/acl/admin"
    is_list: bool
    namespace: str

    @property
    def params(self) -> dict[str, str]:
        return dict(self.request.path_params)

    @property
    def query(self) -> Any:
        return self.request.query_params

    def arg(self, name: str, default: Any = None) -> Any:
        """A parameter from the JSON body, else the query string, else ``default``."""
        if name in self.body:
            return self.body[name]
        if name in self.request.query_params:
            return self.request.query_params[name]
        return default

    def flag(self, name: str, default: bool = False) -> bool:
        """A boolean parameter: a JSON boolean, or ``true``/``false``/``1``/``0`` in the query."""
        value = self.arg(name, default)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "1", "false", "0"):
            return value.lower() in ("true", "1")
        raise SecretsError(400, f"{name}: expected a boolean, got {value!r}")


async def read_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SecretsError(400, f"failed to parse JSON input: {exc}") from None
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        raise SecretsError(400, "failed to parse JSON input: the body must be a JSON object")
    return parsed


def request_token(request: Request) -> str | None:
    for name in TOKEN_HEADERS:
        value = request.headers.get(name)
        if value:
            return value
    auth = request.headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip() or None
    return None


def request_namespace(request: Request) -> str:
    for name in NAMESPACE_HEADERS:
        value = request.headers.get(name)
        if value is not None:
            return value.strip().strip("/")
    return ""


Handler = Callable[[Call], Awaitable[Response]]


def route(
    service: SecretsService,
    path: str,
    handler: Handler,
    methods: Iterable[str],
    *,
    capability: str | Callable[[Call], str] | None = None,
    sudo: bool = False,
    restricted: bool = False,
    authenticated: bool = True,
) -> Route:
    """Register ``handler`` at ``path`` (Starlette syntax, relative to /v1).

    ``methods`` lists the HTTP methods; ``LIST`` also registers ``GET`` and a
    ``GET ?list=true`` counts as ``LIST``. ``capability`` overrides the ACL
    capability derived from the method (GET read, LIST list, POST/PUT update,
    DELETE delete); a callable decides per call (create versus update).
    ``sudo`` and ``restricted`` follow spec part 1, convention 5.
    """
    wanted = {m.upper() for m in methods}
    http_methods = set(wanted)
    if "LIST" in wanted:
        http_methods.add("GET")

    async def endpoint(request: Request) -> Response:
        method = request.method.upper()
        is_list = method == "LIST" or (
            method == "GET" and request.query_params.get("list", "").lower() in ("true", "1")
        )
        if is_list and "LIST" not in wanted:
            return error(405, "unsupported operation")
        if not is_list and method not in wanted:
            return error(405, "unsupported operation")
        api_path = request.url.path[len("/v1/") :] if request.url.path.startswith("/v1/") else ""
        namespace = request_namespace(request)
        try:
            body = await read_body(request) if method in ("POST", "PUT", "PATCH") else {}
            # Everything from here reads or changes state: one request at a time.
            with service.lock:
                token = None
                if authenticated:
                    if service.sealed:
                        raise SecretsError(503, "Vault is sealed")
                    token = service.authenticate(request_token(request))
                call = Call(request, service, token, body, api_path, is_list, namespace)
                if token is not None:
                    if restricted and namespace not in ("", "root"):
                        # Not the caller's to do from here: refused like any denied request.
                        raise SecretsError(
                            403,
                            f"permission denied: {api_path} is restricted to the root "
                            f"namespace, not {namespace!r}",
                        )
                    if callable(capability):
                        needed = capability(call)
                    elif capability:
                        needed = capability
                    else:
                        needed = _capability_for(method, is_list)
                    service.authorize(token, api_path, needed, sudo=sudo)
                return await handler(call)
        except SecretsError as exc:
            return error(exc.status, *exc.messages)

    return Route("/" + path.lstrip("/"), endpoint, methods=sorted(http_methods))


def _capability_for(method: str, is_list: bool) -> str:
    if is_list:
        return "list"
    return {
        "GET": "read",
        "HEAD": "read",
        "POST": "update",
        "PUT": "update",
        "PATCH": "patch",
        "DELETE": "delete",
    }.get(method, "read")
