"""HTTP for ``sys/mounts`` and ``sys/auth`` (reading the mount table), thin over :mod:`..mounts`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.responses import Response
from starlette.routing import Route

from ..errors import SecretsError
from ._base import Call, envelope, route

if TYPE_CHECKING:
    from ..models import SecretsService

__all__ = ["routes"]


async def list_mounts(call: Call) -> Response:
    """``GET sys/mounts``: every secrets engine mount, by path."""
    return envelope(call.service.mounts.engine_table(), top_level=True)


async def read_mount(call: Call) -> Response:
    """``GET sys/mounts/:path``: one mount."""
    mount = call.service.mounts.engine(call.params["path"])
    if mount is None:
        raise SecretsError(400, f"no matching mount at {call.params['path'].strip('/')}/")
    return envelope(mount.describe(), top_level=True)


async def list_auth(call: Call) -> Response:
    """``GET sys/auth``: every auth method mount, by path."""
    return envelope(call.service.mounts.auth_table(), top_level=True)


def routes(service: SecretsService) -> list[Route]:
    return [
        route(service, "sys/mounts", list_mounts, ["GET"]),
        route(service, "sys/mounts/{path:path}", read_mount, ["GET"]),
        route(service, "sys/auth", list_auth, ["GET"]),
    ]
