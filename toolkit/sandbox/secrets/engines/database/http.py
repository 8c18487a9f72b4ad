"""HTTP for the database engine (spec 4.8), relative to its mount; thin over :mod:`.state`.

Connection, role and static-role writes ask for ``create`` or ``update``
depending on whether the entry exists (spec part 1, convention 6). A read of
something absent, and a list with nothing in it, answer 404 with no message,
as the real server does. Request bodies are read here, field by field, into the
typed requests the state takes (:class:`~.state.ConnectionWrite`, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from ... import fields
from ...errors import InvalidRequest
from ...http import _base as web
from ...http._base import EngineRoute, Handler, SecretsRequest
from ...http._credentials import creds_handler
from .plugins import redact_url
from .state import (
    ENGINE_FIELDS,
    SECRET_DETAILS,
    Connection,
    ConnectionWrite,
    DatabaseEngine,
    DatabaseRole,
    RoleWrite,
    StaticRole,
    StaticRoleWrite,
    rfc3339,
)

__all__ = ["routes"]


_database = web.engine_accessor(DatabaseEngine)


def _db(call: SecretsRequest) -> DatabaseEngine:
    """The mount's state, its static roles' due rotations done first."""
    backend = _database(call)
    backend.rotate_due()
    return backend


def statements(body: dict[str, Any], name: str) -> list[str] | None:
    """A statement list: a JSON array of strings, or one string holding one statement;
    None when the body leaves it out."""
    if name not in body:
        return None
    value = body[name]
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v for v in value if v.strip()]
    raise InvalidRequest(f"{name}: expected a list of strings")


def _optional_duration(body: dict[str, Any], name: str) -> int | None:
    return fields.duration(body, name) if body.get(name) not in (None, "") else None


def connection_write(body: dict[str, Any]) -> ConnectionWrite:
    """A ``POST config/:name`` body: the engine's fields, and the plugin's parameters."""
    return ConnectionWrite(
        plugin_name=fields.string(body, "plugin_name", None),
        plugin_version=fields.string(body, "plugin_version", None),
        verify_connection=fields.boolean(body, "verify_connection", True),
        allowed_roles=(
            fields.string_list(body, "allowed_roles") if "allowed_roles" in body else None
        ),
        root_rotation_statements=statements(body, "root_rotation_statements"),
        password_policy=fields.string(body, "password_policy", None),
        details={k: v for k, v in body.items() if k not in ENGINE_FIELDS},
    )


def role_write(body: dict[str, Any]) -> RoleWrite:
    """A ``POST roles/:name`` body."""
    return RoleWrite(
        db_name=fields.string(body, "db_name", None),
        creation_statements=statements(body, "creation_statements"),
        revocation_statements=statements(body, "revocation_statements"),
        rollback_statements=statements(body, "rollback_statements"),
        renew_statements=statements(body, "renew_statements"),
        default_ttl=_optional_duration(body, "default_ttl"),
        max_ttl=_optional_duration(body, "max_ttl"),
    )


def static_role_write(body: dict[str, Any]) -> StaticRoleWrite:
    """A ``POST static-roles/:name`` body."""
    period = fields.duration(body, "rotation_period") if "rotation_period" in body else None
    return StaticRoleWrite(
        db_name=fields.string(body, "db_name", None),
        username=fields.string(body, "username", None),
        rotation_period=period,
        rotation_statements=statements(body, "rotation_statements"),
    )


# -- what the reads answer (the wire shapes of the engine's records) ----------------------
def connection_data(connection: Connection) -> dict[str, Any]:
    """The ``data`` of ``GET config/:name``: no password; one in the URL is redacted."""
    details = {k: v for k, v in connection.details.items() if k not in SECRET_DETAILS}
    url = details.get("connection_url")
    if isinstance(url, str):
        details["connection_url"] = redact_url(url)
    return {
        "plugin_name": connection.plugin_name,
        "plugin_version": connection.plugin_version,
        "connection_details": details,
        "allowed_roles": list(connection.allowed_roles),
        # OpenBao's name for what is written as root_rotation_statements (docs/differences.md).
        "root_credentials_rotate_statements": list(connection.root_rotation_statements),
        "password_policy": connection.password_policy,
        "verify_connection": connection.verify_connection,
    }


def role_data(role: DatabaseRole) -> dict[str, Any]:
    """The ``data`` of ``GET roles/:name``."""
    return {
        "db_name": role.db_name,
        "creation_statements": list(role.creation_statements),
        "revocation_statements": list(role.revocation_statements),
        "rollback_statements": list(role.rollback_statements),
        "renew_statements": list(role.renew_statements),
        "default_ttl": role.default_ttl,
        "max_ttl": role.max_ttl,
        "credential_type": "password",
    }


def static_role_data(role: StaticRole) -> dict[str, Any]:
    """The ``data`` of ``GET static-roles/:name``."""
    data: dict[str, Any] = {
        "db_name": role.db_name,
        "username": role.username,
        "rotation_statements": list(role.rotation_statements),
        "rotation_period": role.rotation_period,
        "credential_type": "password",
    }
    if role.last_rotation is not None:
        data["last_service_rotation"] = rfc3339(role.last_rotation)
    return data


_DATA: dict[str, Callable[[Any], dict[str, Any]]] = {
    "connections": connection_data,
    "roles": role_data,
    "static_roles": static_role_data,
}


def _entries(kind: str) -> dict[str, Handler]:
    """GET, POST and DELETE of one ``connections``/``roles``/``static_roles`` entry.

    Each entry answers its kind's data (``_DATA``); a write reads the body into the kind's typed
    request and calls ``DatabaseEngine.<writer>(name, request)``.
    """
    writer = {
        "connections": "configure",
        "roles": "write_role",
        "static_roles": "write_static_role",
    }
    reader = {
        "connections": connection_write,
        "roles": role_write,
        "static_roles": static_role_write,
    }
    deleter = {
        "connections": "delete_connection",
        "roles": "delete_role",
        "static_roles": "delete_static_role",
    }

    async def read(call: SecretsRequest) -> Response:
        found: Any = getattr(_db(call), kind).get(call.params["name"])
        return web.envelope(_DATA[kind](found)) if found else web.error(404)

    async def write(call: SecretsRequest) -> Response:
        # A connection write may warn (a password in connection_url); roles never do.
        request = reader[kind](call.body)
        warnings = getattr(_db(call), writer[kind])(call.params["name"], request)
        return web.envelope(None, warnings=warnings) if warnings else web.no_content()

    async def delete(call: SecretsRequest) -> Response:
        getattr(_db(call), deleter[kind])(call.params["name"])
        return web.no_content()

    return {"GET": read, "POST": write, "DELETE": delete}


def _names(kind: str) -> Handler:
    async def names(call: SecretsRequest) -> Response:
        return web.listing(list(getattr(_db(call), kind)))

    return names


def _exists(kind: str) -> Any:
    def exists(call: SecretsRequest) -> bool:
        return call.params["name"] in getattr(_db(call), kind)

    return exists


def _action(act: Callable[[DatabaseEngine, str], None]) -> dict[str, Handler]:
    """``POST <path>/:name``: ``act(state, name)``, answered 204 (what each does is said
    where it is routed)."""

    async def post(call: SecretsRequest) -> Response:
        act(_db(call), call.params["name"])
        return web.no_content()

    return {"POST": post}


async def static_creds(call: SecretsRequest) -> Response:
    """``GET static-creds/:name``: the current password, its last rotation and ttl."""
    role, now = _db(call).static_creds(call.params["name"])
    next_rotation = role.next_rotation or now
    return web.envelope(
        {
            "username": role.username,
            "password": role.password,
            "last_service_rotation": rfc3339(role.last_rotation or now),
            "rotation_period": role.rotation_period,
            "ttl": max(0, round((next_rotation - now).total_seconds())),
        }
    )


def routes() -> list[EngineRoute]:
    return [
        web.engine_route("config", _names("connections"), ["LIST"]),
        web.resource("config/{name}", _entries("connections"), _exists("connections")),
        # Restart the plugin from the stored configuration.
        web.resource("reset/{name}", _action(DatabaseEngine.reset)),
        # A new root password, never returned.
        web.resource("rotate-root/{name}", _action(DatabaseEngine.rotate_root)),
        web.engine_route("roles", _names("roles"), ["LIST"]),
        web.resource("roles/{name}", _entries("roles"), _exists("roles")),
        web.engine_route("creds/{name}", creds_handler(_db), ["GET"]),
        web.engine_route("static-roles", _names("static_roles"), ["LIST"]),
        web.resource("static-roles/{name}", _entries("static_roles"), _exists("static_roles")),
        web.engine_route("static-creds/{name}", static_creds, ["GET"]),
        # Rotate a static role's password now.
        web.resource("rotate-role/{name}", _action(DatabaseEngine.rotate_role)),
    ]
