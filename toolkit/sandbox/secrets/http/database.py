"""HTTP for the database engine (spec 4.8), relative to its mount; thin over :mod:`..database`.

Connection, role and static-role writes ask for ``create`` or ``update``
depending on whether the entry exists (spec part 1, convention 6). A read of
something absent, and a list with nothing in it, answer 404 with no message,
as the real server does.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from ..database import Database
from ._base import (
    Call,
    EngineRoute,
    Handler,
    engine_route,
    envelope,
    error,
    listing,
    no_content,
    resource,
)
from ._credentials import caller, secret_answer

__all__ = ["routes"]


def _db(call: Call) -> Database:
    backend: Database = call.backend
    backend.rotate_due()
    return backend


def _entries(kind: str) -> dict[str, Handler]:
    """GET, POST and DELETE of one ``connections``/``roles``/``static_roles`` entry.

    Each entry answers ``describe()``; writes go to ``Database.<writer>(name, body)``.
    """
    writer = {
        "connections": "configure",
        "roles": "write_role",
        "static_roles": "write_static_role",
    }
    deleter = {
        "connections": "delete_connection",
        "roles": "delete_role",
        "static_roles": "delete_static_role",
    }

    async def read(call: Call) -> Response:
        found: Any = getattr(_db(call), kind).get(call.params["name"])
        return envelope(found.describe()) if found else error(404)

    async def write(call: Call) -> Response:
        # A connection write may warn (a password in connection_url); roles never do.
        warnings = getattr(_db(call), writer[kind])(call.params["name"], call.body)
        return envelope(None, warnings=warnings) if warnings else no_content()

    async def delete(call: Call) -> Response:
        getattr(_db(call), deleter[kind])(call.params["name"])
        return no_content()

    return {"GET": read, "POST": write, "DELETE": delete}


def _names(kind: str) -> Handler:
    async def names(call: Call) -> Response:
        return listing(list(getattr(_db(call), kind)))

    return names


def _exists(kind: str) -> Any:
    def exists(call: Call) -> bool:
        return call.params["name"] in getattr(_db(call), kind)

    return exists


async def reset_connection(call: Call) -> Response:
    """``POST reset/:name``: restart the plugin from the stored configuration."""
    _db(call).reset(call.params["name"])
    return no_content()


async def rotate_root(call: Call) -> Response:
    """``POST rotate-root/:name``: a new root password, never returned."""
    _db(call).rotate_root(call.params["name"])
    return no_content()


async def issue_creds(call: Call) -> Response:
    """``GET creds/:name``: a new user and password, as a renewable lease."""
    data, lease = _db(call).issue_creds(call.params["name"], caller(call))
    return secret_answer(data, lease)


async def static_creds(call: Call) -> Response:
    """``GET static-creds/:name``: the current password, its last rotation and ttl."""
    return envelope(_db(call).static_creds(call.params["name"]))


async def rotate_role(call: Call) -> Response:
    """``POST rotate-role/:name``: rotate a static role's password now."""
    _db(call).rotate_role(call.params["name"])
    return no_content()


def routes() -> list[EngineRoute]:
    return [
        engine_route("config", _names("connections"), ["LIST"]),
        resource("config/{name}", _entries("connections"), _exists("connections")),
        resource("reset/{name}", {"POST": reset_connection}),
        resource("rotate-root/{name}", {"POST": rotate_root}),
        engine_route("roles", _names("roles"), ["LIST"]),
        resource("roles/{name}", _entries("roles"), _exists("roles")),
        engine_route("creds/{name}", issue_creds, ["GET"]),
        engine_route("static-roles", _names("static_roles"), ["LIST"]),
        resource("static-roles/{name}", _entries("static_roles"), _exists("static_roles")),
        engine_route("static-creds/{name}", static_creds, ["GET"]),
        resource("rotate-role/{name}", {"POST": rotate_role}),
    ]
