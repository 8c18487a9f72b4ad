"""HTTP for ``sys/plugins/catalog`` (spec section 4.5; restricted), thin over :mod:`..plugins`.

Register, read and remove need ``sudo``. Reading an entry registered with a
version needs ``?version=``: without it the unversioned entry is meant, and
an entry that does not exist is 404 with no message, as on the real server.
Registering needs no plugin binary in the sandbox (there is no plugin
directory): the SHA-256 sum is stored and reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from ..errors import InvalidRequest
from ..plugins import PLUGIN_TYPES, PluginEntry, check_type
from ._base import SecretsRequest, envelope, error, no_content, route

if TYPE_CHECKING:
    from ..models import SecretsService

__all__ = ["entry_document", "plugin_routes"]


def _detail(entry: PluginEntry) -> dict[str, Any]:
    """One row of ``detailed`` in ``GET sys/plugins/catalog``."""
    row: dict[str, Any] = {
        "builtin": entry.builtin,
        "name": entry.name,
        "type": entry.type,
        "version": entry.version,
    }
    if entry.builtin:
        row["deprecation_status"] = entry.deprecation_status
    else:
        row["sha256"] = entry.sha256
    return row


def entry_document(entry: PluginEntry) -> dict[str, Any]:
    """The fields of ``GET sys/plugins/catalog/:type/:name`` (never ``env``): the catalog
    row's but ``type``, with ``args``, ``command`` and ``sha256``, in the order OpenBao
    writes them (a Go map: its keys sorted)."""
    fields = {key: value for key, value in _detail(entry).items() if key != "type"}
    fields.update(args=list(entry.args), command=entry.command, sha256=entry.sha256)
    return dict(sorted(fields.items()))


def _version(call: SecretsRequest) -> str:
    value: Any = call.arg("version", "")
    if not isinstance(value, str):
        raise InvalidRequest("version: expected a string")
    return value


async def catalog(call: SecretsRequest) -> Response:
    """``GET sys/plugins/catalog``: names per type and a ``detailed`` list."""
    plugins = call.service.plugins
    data: dict[str, Any] = {t: plugins.names(t) for t in PLUGIN_TYPES}
    data["detailed"] = [_detail(e) for e in plugins.entries()]
    return envelope(data)


async def list_type(call: SecretsRequest) -> Response:
    """``LIST sys/plugins/catalog/:type``: the names of one type."""
    return envelope({"keys": call.service.plugins.names(check_type(call.params["type"]))})


async def register(call: SecretsRequest) -> Response:
    """``POST|PUT sys/plugins/catalog/:type/:name`` (sudo): register or replace."""
    body = call.body
    call.service.plugins.register(
        call.params["type"],
        call.params["name"],
        sha256=body.get("sha256"),
        command=body.get("command"),
        args=body.get("args"),
        env=body.get("env"),
        version=body.get("version", ""),
    )
    return no_content()


async def read(call: SecretsRequest) -> Response:
    """``GET sys/plugins/catalog/:type/:name?version=`` (sudo): one entry, 404 if none."""
    entry = call.service.plugins.get(call.params["type"], call.params["name"], _version(call))
    if entry is None:
        return error(404)
    return envelope(entry_document(entry))


async def remove(call: SecretsRequest) -> Response:
    """``DELETE sys/plugins/catalog/:type/:name?version=`` (sudo): 204, also when absent."""
    call.service.plugins.delete(call.params["type"], call.params["name"], _version(call))
    return no_content()


def plugin_routes(service: SecretsService) -> list[Route]:
    """The routes of spec section 4.5 (all restricted to the root namespace)."""
    entry = "sys/plugins/catalog/{type}/{name}"
    return [
        route(service, "sys/plugins/catalog", catalog, ["GET"], restricted=True),
        route(
            service, "sys/plugins/catalog/{type}", list_type, ["LIST"], sudo=True, restricted=True
        ),
        route(service, entry, register, ["POST", "PUT"], sudo=True, restricted=True),
        route(service, entry, read, ["GET"], sudo=True, restricted=True),
        route(service, entry, remove, ["DELETE"], sudo=True, restricted=True),
    ]
