"""HTTP for the message-broker engine (spec 4.9), relative to its mount; thin over :mod:`..broker`.

As on the real server, the connection can be written but not read, a read of
something absent and an empty list answer 404 with no message, and role
writes need ``update`` (this engine does not tell create from update).
"""

from __future__ import annotations

from starlette.responses import Response

from ..broker import Broker
from ._base import (
    Call,
    EngineRoute,
    engine_route,
    envelope,
    error,
    listing,
    no_content,
    resource,
)
from ._credentials import caller, secret_answer

__all__ = ["routes"]


def _broker(call: Call) -> Broker:
    backend: Broker = call.backend
    return backend


async def write_connection(call: Call) -> Response:
    """``POST config/connection``: the management API address and administrator."""
    _broker(call).configure_connection(call.body)
    return no_content()


async def write_lease(call: Call) -> Response:
    _broker(call).configure_lease(call.body)
    return no_content()


async def read_lease(call: Call) -> Response:
    found = _broker(call).lease_config()
    return envelope(found) if found is not None else error(404)


async def list_roles(call: Call) -> Response:
    return listing(list(_broker(call).roles))


async def write_role(call: Call) -> Response:
    _broker(call).write_role(call.params["name"], call.body)
    return no_content()


async def read_role(call: Call) -> Response:
    found = _broker(call).roles.get(call.params["name"])
    return envelope(found.describe()) if found else error(404)


async def delete_role(call: Call) -> Response:
    _broker(call).delete_role(call.params["name"])
    return no_content()


async def issue_creds(call: Call) -> Response:
    """``GET creds/:name``: a new broker user and password, as a renewable lease."""
    data, lease = _broker(call).issue_creds(call.params["name"], caller(call))
    return secret_answer(data, lease)


def routes() -> list[EngineRoute]:
    return [
        resource("config/connection", {"POST": write_connection}),
        resource("config/lease", {"GET": read_lease, "POST": write_lease}),
        engine_route("roles", list_roles, ["LIST"]),
        resource("roles/{name}", {"GET": read_role, "POST": write_role, "DELETE": delete_role}),
        engine_route("creds/{name}", issue_creds, ["GET"]),
    ]
