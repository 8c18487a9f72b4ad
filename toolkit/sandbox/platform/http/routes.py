"""The platform sandbox's route table, relative to ``/api/v2`` (``app`` mounts it).

Derived from the areas: every module of this package whose name does not
start with ``_`` declares its endpoints in ``ROUTES``, and is found here by
itself, so an area is one module. Paths under ``/_sandbox`` are the
sandbox's own, not the platform's (see :mod:`.agents`).
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..models import PlatformService
from ._base import Handler, RouteRow, endpoint

__all__ = ["AREAS", "routes"]


def _areas() -> tuple[ModuleType, ...]:
    package = importlib.import_module(__name__.rpartition(".")[0])
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(package.__path__)
        if not info.name.startswith("_") and info.name != "routes"
    )
    return tuple(importlib.import_module(f"{package.__name__}.{name}") for name in names)


# Every area module of the HTTP side, in name order.
AREAS: tuple[ModuleType, ...] = _areas()

# What the real service's ping says of itself; official clients read the API version.
PING_HEADERS = {"TFP-API-Version": "2.6", "TFP-AppName": "Operator toolkit sandbox"}


async def ping(request: Request) -> Response:
    """``GET /ping``: 204 with no body and the API version headers, as the real service;
    no token needed."""
    return Response(status_code=204, headers=PING_HEADERS)


def rows() -> list[RouteRow]:
    """Every area's ``(method, path, handler)`` rows."""
    return [row for area in AREAS for row in area.ROUTES]


def routes(service: PlatformService) -> list[Route]:
    """Every platform route, bound to ``service``."""
    table = [Route("/ping", ping, methods=["GET"])]
    # One Route per path, dispatching on the method, so a wrong method is a 405.
    by_path: dict[str, dict[str, Handler]] = {}
    for method, path, handler in rows():
        if method in by_path.setdefault(path, {}):
            raise RuntimeError(f"two platform handlers for {method} {path}")
        by_path[path][method] = handler
    for path, handlers in by_path.items():
        table.append(Route(path, endpoint(service, handlers), methods=sorted(handlers)))
    return table
