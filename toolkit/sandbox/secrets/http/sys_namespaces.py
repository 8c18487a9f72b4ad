"""HTTP for ``sys/namespaces``, thin over :mod:`..namespaces`.

Each call acts on the children of the namespace the request is in (its
``X-Vault-Namespace`` header): ``LIST sys/namespaces`` lists them,
``POST``/``PUT sys/namespaces/:name`` creates one (or replaces its
``custom_metadata``), ``GET`` reads and ``DELETE`` deletes one. Answers follow
OpenBao 2.7: an empty list or an unknown name is 404 with no message, a name
with ``/`` is 400, deleting an unknown namespace is 200 with a warning, and
deleting one with children is 400.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from .. import fields
from ._base import SecretsRequest, envelope, error, listing, route

if TYPE_CHECKING:
    from ..models import SecretsService
    from ..namespaces import Namespace

__all__ = ["namespace_document", "routes"]

BASE = "sys/namespaces"


def namespace_document(ns: Namespace) -> dict[str, Any]:
    """The namespace as ``sys/namespaces`` shows it."""
    return {
        "custom_metadata": dict(ns.custom_metadata),
        "id": ns.id,
        "locked": False,
        "path": ns.path,
        "tainted": False,
        "uuid": ns.uuid,
    }


def _tree(call: SecretsRequest) -> Any:
    # The tree is the root service's, whichever namespace's view the call holds.
    return call.service.namespaces


async def list_namespaces(call: SecretsRequest) -> Response:
    """``LIST sys/namespaces``: the children of the request's namespace, with ``key_info``."""
    children = _tree(call).children(call.namespace)
    response = listing([_name(ns.path) for ns in children])
    if not children:
        return response
    info = {_name(ns.path): namespace_document(ns) for ns in children}
    return envelope({"keys": sorted(info), "key_info": info})


async def read_namespace(call: SecretsRequest) -> Response:
    """``GET sys/namespaces/:name``."""
    found = _tree(call).read(call.namespace, call.params["name"])
    return error(404) if found is None else envelope(namespace_document(found))


async def write_namespace(call: SecretsRequest) -> Response:
    """``POST``/``PUT sys/namespaces/:name``: create, or replace ``custom_metadata``."""
    metadata = fields.string_map(call.body, "custom_metadata")
    made = _tree(call).create(call.namespace, call.params["name"], metadata)
    return envelope(namespace_document(made))


async def delete_namespace(call: SecretsRequest) -> Response:
    """``DELETE sys/namespaces/:name``: 400 while it has children."""
    if not _tree(call).delete(call.namespace, call.params["name"]):
        return envelope(None, warnings=["requested namespace does not exist"])
    return envelope(None)


def _name(path: str) -> str:
    """``sub/`` of ``team-a/sub/``: the key a parent lists its child under."""
    return path.rstrip("/").rsplit("/", 1)[-1] + "/"


def routes(service: SecretsService) -> list[Route]:
    """The namespace routes; ``{name:path}`` so that a name with ``/`` gets OpenBao's 400."""
    one = BASE + "/{name:path}"
    return [
        route(service, BASE, list_namespaces, ["LIST"]),
        route(service, BASE + "/", list_namespaces, ["LIST"]),
        route(service, one, read_namespace, ["GET"]),
        route(service, one, write_namespace, ["POST", "PUT"]),
        route(service, one, delete_namespace, ["DELETE"]),
    ]
