"""HTTP for the directory (AD) engine (spec 4.7, part 3 'Library service account'), relative to its mount; thin over :mod:`..directory`.

Lists answer 404 when empty, as the real server does. The manage check-in
path is open to whoever the ACL grants ``<mount>library/manage/*``.
"""

from __future__ import annotations

from starlette.responses import Response

from ..directory import Directory
from ..tokens import Token
from ._base import (
    Call,
    EngineRoute,
    engine_route,
    envelope,
    listing,
    no_content,
    resource,
)

__all__ = ["routes"]


def _backend(call: Call) -> Directory:
    backend = call.backend
    assert isinstance(backend, Directory)
    return backend


def _token(call: Call) -> Token:
    assert call.token is not None  # every engine route is authenticated
    return call.token


async def write_config(call: Call) -> Response:
    _backend(call).write_config(call.body)
    return no_content()


async def read_config(call: Call) -> Response:
    return envelope(_backend(call).read_config())


async def delete_config(call: Call) -> Response:
    _backend(call).delete_config()
    return no_content()


async def list_roles(call: Call) -> Response:
    return listing(_backend(call).role_names())


async def creds(call: Call) -> Response:
    return envelope(_backend(call).creds(call.params["name"]))


async def list_sets(call: Call) -> Response:
    return listing(_backend(call).set_names())


async def check_out(call: Call) -> Response:
    data, lease = _backend(call).check_out(call.params["name"], call.body, _token(call))
    return envelope(
        data,
        lease_id=lease.lease_id,
        renewable=lease.renewable,
        lease_duration=lease.ttl_granted,
    )


async def check_in(call: Call) -> Response:
    done = _backend(call).check_in(call.params["name"], call.body, _token(call))
    return envelope({"check_ins": done})


async def manage_check_in(call: Call) -> Response:
    done = _backend(call).check_in(call.params["name"], call.body, _token(call), manage=True)
    return envelope({"check_ins": done})


async def status(call: Call) -> Response:
    return envelope(_backend(call).status(call.params["name"]))


async def rotate_root(call: Call) -> Response:
    warnings = _backend(call).rotate_root()
    return envelope(None, warnings=warnings) if warnings else no_content()


def _named(path: str, read: str, write: str, delete: str) -> EngineRoute:
    """``GET``/``POST``/``PUT``/``DELETE`` of one named item (a role, a set) by its state methods."""

    async def do_read(call: Call) -> Response:
        return envelope(getattr(_backend(call), read)(call.params["name"]))

    async def do_write(call: Call) -> Response:
        getattr(_backend(call), write)(call.params["name"], call.body)
        return no_content()

    async def do_delete(call: Call) -> Response:
        getattr(_backend(call), delete)(call.params["name"])
        return no_content()

    return resource(path, {"GET": do_read, "POST": do_write, "DELETE": do_delete})


def routes() -> list[EngineRoute]:
    config = {"GET": read_config, "POST": write_config, "PUT": write_config}
    return [
        resource("config", {**config, "DELETE": delete_config}),
        engine_route("roles", list_roles, ["GET", "LIST"]),
        _named("roles/{name}", "read_role", "write_role", "delete_role"),
        engine_route("creds/{name}", creds, ["GET"]),
        engine_route("library", list_sets, ["LIST"]),
        engine_route("library/manage/{name}/check-in", manage_check_in, ["POST", "PUT"]),
        engine_route("library/{name}/check-out", check_out, ["POST", "PUT"]),
        engine_route("library/{name}/check-in", check_in, ["POST", "PUT"]),
        engine_route("library/{name}/status", status, ["GET"]),
        _named("library/{name}", "read_set", "write_set", "delete_set"),
        engine_route("rotate-root", rotate_root, ["GET"]),
    ]
