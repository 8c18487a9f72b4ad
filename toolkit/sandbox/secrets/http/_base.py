"""The secrets server's HTTP conventions, in one place (spec part 1).

- errors are ``{"errors": ["message"]}``;
- answers use the envelope ``request_id, lease_id, renewable, lease_duration,
  data, wrap_info, warnings, auth`` unless an endpoint shows its fields bare;
- the token arrives in ``X-Service-Token``, ``X-Vault-Token`` or
  ``Authorization: Bearer``; the namespace in ``X-Vault-Namespace``;
- ``LIST`` and ``GET ?list=true`` are the same request;
- a namespace that does not exist is 404 ``namespace not found``; in a child
  namespace the handler sees that namespace's view of the state, restricted
  endpoints answer only in the root or administrative namespace, and the ACL
  is checked on ``<namespace>/<path>``;
- ACL capabilities are checked here, before any handler runs, so a handler
  only sees permitted requests.

Handlers are written as ``async def handler(call: SecretsRequest) -> Response`` and
registered with :func:`route` (system paths) or declared with
:func:`engine_route` (engine paths, relative to wherever the engine is mounted).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict, TypeVar, Unpack

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ...._spec.headers import NAMESPACE_HEADERS, TOKEN_HEADERS
from ..._wire import SandboxRequest, error_response
from ..errors import AccessDenied, InvalidRequest, PathNotFound, SecretsError, ServerSealed
from ..namespaces import normalize as namespace_key

if TYPE_CHECKING:
    from ..models import SecretsService
    from ..mounts import Mount
    from ..tokens import Token

__all__ = [
    "SecretsRequest",
    "WRITE",
    "EngineRoute",
    "engine_accessor",
    "engine_state",
    "flag",
    "Rule",
    "SecretsError",
    "bare",
    "create_or_update",
    "engine_route",
    "envelope",
    "error",
    "listing",
    "no_content",
    "paged_listing",
    "resource",
    "route",
    "serve",
    "status_of",
]


_State = TypeVar("_State")


class EnvelopeResponse(JSONResponse):
    """A JSON answer rendered with orjson: the sandbox's LIST answers run to
    hundreds of thousands of keys (``--demo-scale``), and the standard
    library's encoder took a fifth of its time serving them. The bytes are the
    same compact JSON; what orjson cannot write (an integer beyond 64 bits) is
    written by the standard encoder as before."""

    def render(self, content: Any) -> bytes:
        try:
            return orjson.dumps(content, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # orjson.JSONEncodeError
            return super().render(content)


def error(status: int, *messages: str) -> JSONResponse:
    """The secrets API's error answer (through the sandbox's one error shaper)."""
    return error_response("secrets", status, *messages)


# The status of each typed refusal of the state, on this API: the one place it is chosen.
STATUS: dict[type[SecretsError], int] = {
    InvalidRequest: 400,
    AccessDenied: 403,
    PathNotFound: 404,
    ServerSealed: 503,
}


def status_of(exc: SecretsError) -> int:
    """The status a refusal is answered with (a refusal of no known kind is the client's: 400)."""
    for kind in type(exc).__mro__:
        if kind in STATUS:
            return STATUS[kind]
    return 400


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
    return EnvelopeResponse(payload, status_code=status)


def bare(payload: Any, status: int = 200) -> JSONResponse:
    """An answer that shows its fields directly (for example ``sys/seal-status``)."""
    return JSONResponse(payload, status_code=status)


# The one request class of the sandbox, as the secrets API's handlers see it:
# ``call.caller`` is the token (None on the few unauthenticated routes).
SecretsRequest: TypeAlias = SandboxRequest["SecretsService", "Token | None"]


def engine_state(call: SecretsRequest) -> Any:
    """The state object of the engine this call was routed to (engine handlers only)."""
    if call.mount is None or call.mount.backend is None:
        raise PathNotFound(f"no engine is mounted for {call.path!r}")
    return call.mount.backend


def engine_accessor(kind: type[_State]) -> Callable[[SecretsRequest], _State]:
    """An engine HTTP module's typed :func:`engine_state`: ``_engine = engine_accessor(PKIEngine)``
    gives a handler its mount's state as a ``PKIEngine`` (a state of another class is a bug
    of the dispatcher, never the caller's)."""

    def state(call: SecretsRequest) -> _State:
        backend = engine_state(call)
        if not isinstance(backend, kind):
            raise TypeError(f"{call.path!r} is served by a {type(backend).__name__}, not a {kind}")
        return backend

    return state


def flag(call: SecretsRequest, name: str, default: bool = False) -> bool:
    """A boolean parameter: a JSON boolean, or ``true``/``false``/``1``/``0`` in the query."""
    value = call.arg(name, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "false", "0"):
        return value.lower() in ("true", "1")
    raise InvalidRequest(f"{name}: expected a boolean, got {value!r}")


async def read_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"failed to parse JSON input: {exc}") from None
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        raise InvalidRequest("failed to parse JSON input: the body must be a JSON object")
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


Handler = Callable[[SecretsRequest], Awaitable[Response]]

# A write: the secrets API treats POST and PUT alike (spec part 1).
WRITE = ("POST", "PUT")


class RuleOptions(TypedDict, total=False):
    """The options a route declares beside its methods (see :class:`Rule` and :func:`route`)."""

    capability: str | Callable[[SecretsRequest], str] | None
    sudo: bool
    restricted: bool


@dataclass(frozen=True)
class Rule:
    """How a handler is served: its methods, the capability it needs, sudo and restriction."""

    methods: frozenset[str]
    capability: str | Callable[[SecretsRequest], str] | None = None
    sudo: bool = False
    restricted: bool = False
    authenticated: bool = True

    @classmethod
    def of(cls, methods: Iterable[str], **options: Any) -> Rule:
        return cls(frozenset(m.upper() for m in methods), **options)

    @property
    def http_methods(self) -> list[str]:
        return sorted(self.methods | ({"GET"} if "LIST" in self.methods else set()))


async def serve(
    request: Request,
    service: SecretsService,
    handler: Handler,
    rule: Rule,
    mount: Mount | None = None,
) -> Response:
    """Answer one request: body, seal, token, namespace, ACL, method, then ``handler``;
    then log it to the audit devices, when there are any."""
    seen: dict[str, Any] = {}
    response = await _serve(request, service, handler, rule, mount, seen)
    audit = getattr(service, "audit", None)
    if audit is not None and audit.devices:
        from ._audit import log_exchange

        with service.lock:
            log_exchange(service, request, seen, response, mount)
    return response


async def _serve(
    request: Request,
    service: SecretsService,
    handler: Handler,
    rule: Rule,
    mount: Mount | None,
    seen: dict[str, Any],
) -> Response:
    method = request.method.upper()
    is_list = method == "LIST" or (
        method == "GET" and request.query_params.get("list", "").lower() in ("true", "1")
    )
    supported = ("LIST" in rule.methods) if is_list else (method in rule.methods)
    if not supported and not rule.authenticated:
        return error(405, "unsupported operation")
    api_path = request.url.path[len("/v1/") :] if request.url.path.startswith("/v1/") else ""
    namespace = request_namespace(request)
    try:
        body = await read_body(request) if method in ("POST", "PUT", "PATCH") else {}
        seen.update(body=body, path=api_path, list=is_list, namespace=namespace)
        # Everything from here reads or changes state: one request at a time.
        with service.lock:
            token = None
            if rule.authenticated and service.sealed:
                raise ServerSealed("Vault is sealed")
            # The namespace's own view (404 "namespace not found" for an unknown one).
            scoped = service.in_namespace(namespace)
            if scoped is not service and mount is not None:
                # Engines are mounted in the root namespace only: a child has none.
                return error(404, f"no handler for route {request.url.path!r}")
            if rule.authenticated:
                token = service.authenticate(request_token(request))
                seen["token"] = token
            call = SandboxRequest(request, scoped, token, body, api_path, is_list, namespace, mount)
            if token is not None:
                if rule.restricted and not service.namespaces.may_call_restricted(namespace):
                    # Not the caller's to do from here: refused like any denied request.
                    raise AccessDenied(
                        f"permission denied: {api_path} is restricted to the root or "
                        f"administrative namespace, not {namespace!r}",
                    )
                if callable(rule.capability):
                    needed = rule.capability(call)
                elif rule.capability:
                    needed = rule.capability
                else:
                    needed = _capability_for(method, is_list)
                # A root-namespace token's policies name a child's paths under its prefix.
                where = namespace_key(namespace) + api_path
                seen["capability"] = needed
                audited = bool(getattr(service, "audit", None) and service.audit.devices)
                seen["granting"] = service.authorize(
                    token, where, needed, sudo=rule.sudo, granting=audited
                )
            if not supported:
                # As on the real server: the caller is checked first, then the operation.
                return error(405, "unsupported operation")
            return await handler(call)
    except SecretsError as exc:
        return error(status_of(exc), *exc.messages)


def route(
    service: SecretsService,
    path: str,
    handler: Handler,
    methods: Iterable[str],
    *,
    authenticated: bool = True,
    **options: Unpack[RuleOptions],
) -> Route:
    """Register ``handler`` at ``path`` (Starlette syntax, relative to /v1).

    ``methods`` lists the HTTP methods; ``LIST`` also registers ``GET`` and a
    ``GET ?list=true`` counts as ``LIST``. ``capability`` overrides the ACL
    capability derived from the method (GET read, LIST list, POST/PUT update,
    DELETE delete); a callable decides per call (create versus update).
    ``sudo`` and ``restricted`` follow spec part 1, convention 5.
    """
    rule = Rule.of(methods, authenticated=authenticated, **options)

    async def endpoint(request: Request) -> Response:
        return await serve(request, service, handler, rule)

    return Route("/" + path.lstrip("/"), endpoint, methods=rule.http_methods)


@dataclass(frozen=True)
class EngineRoute:
    """One handler of a secrets engine, at ``path`` relative to the engine's mount.

    ``path`` uses Starlette's syntax (``key/{name}``, ``issuer/{ref}/issue/{role}``).
    The dispatcher in ``http/engines.py`` finds the mount, matches the rest of
    the path here and serves the call with ``call.mount`` set (:func:`backend` gives its state);
    the ACL is checked against the full path (``<mount>/<path>``).
    """

    path: str
    handler: Handler
    rule: Rule


def engine_route(
    path: str,
    handler: Handler,
    methods: Iterable[str],
    **options: Unpack[RuleOptions],
) -> EngineRoute:
    """Declare an engine handler at ``path`` relative to the mount; options as :func:`route`."""
    return EngineRoute(path.strip("/"), handler, Rule.of(methods, **options))


def create_or_update(exists: Callable[[SecretsRequest], bool]) -> Callable[[SecretsRequest], str]:
    """A capability chooser for writes that distinguish ``create`` and ``update`` (part 1, 6)."""

    def choose(call: SecretsRequest) -> str:
        return "update" if exists(call) else "create"

    return choose


def resource(
    path: str, handlers: dict[str, Handler], exists: Callable[[SecretsRequest], bool] | None = None
) -> EngineRoute:
    """One route answering each method of ``path`` with its handler.

    The engine dispatcher matches paths only, so the methods of one path share
    a route. ``POST`` also answers ``PUT``; with ``exists``, a write needs
    ``create`` or ``update`` (spec part 1, convention 6), else ``update``.
    """
    table = dict(handlers)
    if "POST" in table:
        table["PUT"] = table["POST"]
    chooser = create_or_update(exists) if exists else None

    async def handle(call: SecretsRequest) -> Response:
        return await table[call.request.method.upper()](call)

    def capability(call: SecretsRequest) -> str:
        method = call.request.method.upper()
        if method in ("POST", "PUT"):
            return chooser(call) if chooser else "update"
        return "delete" if method == "DELETE" else "read"

    return engine_route(path, handle, list(table), capability=capability)


def listing(names: list[str]) -> Response:
    """``data.keys`` sorted, or 404 with no message when there are none (the real server's)."""
    return envelope({"keys": sorted(names)}) if names else error(404)


def paged_listing(call: SecretsRequest, names: list[str]) -> Response:
    """``listing`` of one page, where OpenBao pages a LIST: the keys after ``after``
    (in sorted order), at most ``limit`` of them (every one when absent or not positive)."""
    after = call.arg("after", "")
    if not isinstance(after, str):
        raise InvalidRequest("after: expected a string")
    raw_limit = call.arg("limit", 0)
    try:
        limit = int(raw_limit or 0)
    except (TypeError, ValueError):
        raise InvalidRequest(f"limit: expected an integer, got {raw_limit!r}") from None
    keys = sorted(names)
    if after:
        keys = [k for k in keys if k > after]
    if limit > 0:
        keys = keys[:limit]
    return listing(keys)


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
