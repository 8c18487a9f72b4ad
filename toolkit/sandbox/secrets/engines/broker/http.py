"""HTTP for the message-broker engine (spec 4.9), relative to its mount; thin over :mod:`.state`.

As on the real server, the connection can be written but not read, a read of
something absent and an empty list answer 404 with no message, and role
writes need ``update`` (this engine does not tell create from update). Request
bodies are read here into the typed arguments of :class:`~.state.BrokerEngine`;
``vhosts`` and ``vhost_topics`` arrive as JSON text and are decoded here.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from ... import fields
from ...errors import InvalidRequest
from ...http import _base as web
from ...http._base import EngineRoute, SecretsRequest
from ...http._credentials import creds_handler
from .state import BrokerEngine, BrokerRole

__all__ = ["routes"]


_broker = web.engine_accessor(BrokerEngine)


def json_field(body: dict[str, Any], name: str) -> Any:
    """A field holding a JSON document as text; None when absent or empty."""
    raw = body.get(name)
    if raw is None or raw == "":
        return None
    if not isinstance(raw, str):
        raise InvalidRequest(f"{name}: expected a string holding a JSON object")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise InvalidRequest(f"failed to unmarshal {name}: {exc}") from None


async def write_connection(call: SecretsRequest) -> Response:
    """``POST config/connection``: the management API address and administrator."""
    body = call.body
    password = body.get("password")
    if password not in (None, "") and not isinstance(password, str):
        raise InvalidRequest("password: expected a string")
    _broker(call).configure_connection(
        connection_uri=fields.string(body, "connection_uri"),
        username=fields.string(body, "username"),
        password=password or "",
        verify_connection=fields.boolean(body, "verify_connection", True),
        password_policy=fields.string(body, "password_policy"),
        username_template=fields.string(body, "username_template"),
    )
    return web.no_content()


async def write_lease(call: SecretsRequest) -> Response:
    """``POST config/lease``: ``ttl`` and ``max_ttl`` (seconds or duration text)."""
    body = call.body
    _broker(call).configure_lease(
        ttl=fields.duration(body, "ttl"), max_ttl=fields.duration(body, "max_ttl")
    )
    return web.no_content()


async def read_lease(call: SecretsRequest) -> Response:
    found = _broker(call).lease_config()
    return web.envelope(found) if found is not None else web.error(404)


async def list_roles(call: SecretsRequest) -> Response:
    return web.listing(list(_broker(call).roles))


async def write_role(call: SecretsRequest) -> Response:
    """``POST roles/:name``: ``tags``, ``vhosts`` and ``vhost_topics`` (JSON text)."""
    body = call.body
    _broker(call).write_role(
        call.params["name"],
        tags=fields.string(body, "tags"),
        vhosts=json_field(body, "vhosts"),
        vhost_topics=json_field(body, "vhost_topics"),
    )
    return web.no_content()


async def read_role(call: SecretsRequest) -> Response:
    found = _broker(call).roles.get(call.params["name"])
    return web.envelope(role_data(found)) if found else web.error(404)


async def delete_role(call: SecretsRequest) -> Response:
    _broker(call).delete_role(call.params["name"])
    return web.no_content()


def role_data(role: BrokerRole) -> dict[str, Any]:
    """The ``data`` of ``GET roles/:name``: the maps as objects, as OpenBao shows them
    (the spec shows a string holding a map: docs/differences.md)."""
    return {
        "tags": role.tags,
        "vhosts": {v: dict(p) for v, p in role.vhosts.items()},
        "vhost_topics": {
            v: {e: dict(p) for e, p in exchanges.items()}
            for v, exchanges in role.vhost_topics.items()
        },
    }


def routes() -> list[EngineRoute]:
    return [
        web.resource("config/connection", {"POST": write_connection}),
        web.resource("config/lease", {"GET": read_lease, "POST": write_lease}),
        web.engine_route("roles", list_roles, ["LIST"]),
        web.resource("roles/{name}", {"GET": read_role, "POST": write_role, "DELETE": delete_role}),
        web.engine_route("creds/{name}", creds_handler(_broker), ["GET"]),
    ]
