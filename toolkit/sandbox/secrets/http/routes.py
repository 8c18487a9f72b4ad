"""The secrets server's route table: every area's routes, under /v1, then the engines."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match, NoMatchFound, Route

from . import (
    auth_logins,
    auth_token,
    identity,
    sys_audit,
    sys_capabilities,
    sys_mounts,
    sys_namespaces,
    sys_password_policies,
    sys_policies,
    sys_rekey,
    sys_seal,
    sys_wrapping,
)
from .engines import EnginePathsFirst, dispatcher
from .sys_leases import lease_routes
from .sys_plugins import plugin_routes

if TYPE_CHECKING:
    from ..models import SecretsService


# Every ``sys/`` and ``auth/`` area's table, in the order they are tried.
_AREAS: tuple[Callable[[SecretsService], list[Route]], ...] = (
    auth_token.routes,
    auth_logins.routes,
    sys_policies.routes,
    sys_password_policies.routes,
    sys_seal.routes,
    sys_rekey.routes,
    lease_routes,
    plugin_routes,
    sys_mounts.routes,
    sys_capabilities.routes,
    sys_namespaces.routes,
    identity.routes,
    sys_audit.routes,
    sys_wrapping.routes,
)


def system_routes(service: SecretsService) -> list[Route]:
    """Every ``sys/`` and ``auth/`` route, in the order they are tried."""
    return [route for area in _AREAS for route in area(service)]


def routes(service: SecretsService) -> list[BaseRoute]:
    """What ``/v1`` serves: the engine dispatcher for a path outside ``sys/`` and
    ``auth/`` (no system route serves one), the system routes (indexed), and the
    dispatcher again last, which decides 404 against 405 for what none served."""
    table = system_routes(service)
    engines = dispatcher(service, list(table))
    return [EnginePathsFirst(engines), IndexedRoutes(table), engines]


class IndexedRoutes(BaseRoute):
    """Routes tried in their order, as Starlette's router tries them, but only those
    that can match the path: each route is filed under the literal segments its
    pattern starts with (up to two, ``sys/leases``), and a path is matched against the
    routes filed under its own first segments. Starlette matched every request
    against up to a hundred patterns: a quarter of the sandbox's time serving a
    lease look-up, measured at 40,000 leases."""

    def __init__(self, routes: list[Route]) -> None:
        self.routes = routes
        heads = [_literal_head(r.path) for r in routes]
        keys = {h for h in heads if len(h) == _DEPTH}
        self._index = {
            k: [r for r, h in zip(routes, heads, strict=True) if k[: len(h)] == h] for k in keys
        }
        self._heads = list(zip(routes, heads, strict=True))

    def _candidates(self, scope: Any) -> list[Route]:
        parts = tuple(get_route_path(scope).lstrip("/").split("/", _DEPTH)[:_DEPTH])
        found = self._index.get(parts)
        if found is not None:
            return found
        return [r for r, h in self._heads if parts[: len(h)] == h]

    def matches(self, scope: Any) -> tuple[Match, Any]:
        found = self._match(scope)
        path = scope.get("path", "")
        if found[0] is Match.NONE and path.endswith("/") and _is_list(scope):
            # As OpenBao: a LIST names its path with or without the trailing slash.
            found = self._match({**scope, "path": path.rstrip("/")})
        return found

    def _match(self, scope: Any) -> tuple[Match, Any]:
        partial: tuple[Match, Any] | None = None
        for route in self._candidates(scope):
            match, child = route.matches(scope)
            if match is Match.FULL:
                return match, {**child, _CHOSEN: route}
            if match is Match.PARTIAL and partial is None:
                partial = (match, {**child, _CHOSEN: route})
        return partial if partial is not None else (Match.NONE, {})

    def url_path_for(self, name: str, /, **path_params: Any) -> Any:
        for route in self.routes:
            try:
                return route.url_path_for(name, **path_params)
            except NoMatchFound:
                continue
        raise NoMatchFound(name, path_params)

    async def handle(self, scope: Any, receive: Any, send: Any) -> None:
        route = scope.pop(_CHOSEN)
        scope["route"] = route
        await route.handle(scope, receive, send)


_DEPTH = 2
_CHOSEN = "toolkit.sandbox.route"


def _is_list(scope: Any) -> bool:
    method = str(scope.get("method", "")).upper()
    if method == "LIST":
        return True
    query = bytes(scope.get("query_string", b"")).decode("latin-1").lower()
    return method == "GET" and any(p in ("list=true", "list=1") for p in query.split("&"))


def _literal_head(path: str) -> tuple[str, ...]:
    """The first literal segments of a route pattern (at most ``_DEPTH``)."""
    head: list[str] = []
    for part in path.lstrip("/").split("/")[:_DEPTH]:
        if "{" in part:
            break
        head.append(part)
    return tuple(head)
