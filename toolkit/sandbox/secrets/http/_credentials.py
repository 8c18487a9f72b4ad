"""HTTP helpers the credential engines (database, message broker) share."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.responses import Response

from .._credentials import Requester
from ._base import Call, EngineRoute, Handler, create_or_update, engine_route, envelope, error

if TYPE_CHECKING:
    from ..leases import Lease

__all__ = ["caller", "listing", "resource", "secret_answer"]


def resource(
    path: str, handlers: dict[str, Handler], exists: Callable[[Call], bool] | None = None
) -> EngineRoute:
    """One route answering each method of ``path`` with its handler.

    The engine dispatcher matches paths only, so the methods of one path share
    a route. ``POST`` also answers ``PUT``; with ``exists``, a write needs
    ``create`` or ``update`` (spec part 1, convention 6), else ``update``.
    """
    table = dict(handlers)
    if "POST" in table:
        table["PUT"] = table["POST"]
    chooser = create_or_update(exists) if exists else None

    async def handle(call: Call) -> Response:
        return await table[call.request.method.upper()](call)

    def capability(call: Call) -> str:
        method = call.request.method.upper()
        if method in ("POST", "PUT"):
            return chooser(call) if chooser else "update"
        return "delete" if method == "DELETE" else "read"

    return engine_route(path, handle, list(table), capability=capability)


def caller(call: Call) -> Requester:
    """Who asks: the caller's token display name (for usernames) and id (for the lease)."""
    token = call.token
    return Requester(token.display_name, token.id) if token else Requester()


def secret_answer(data: dict[str, str], lease: Lease) -> Response:
    """Generated credentials in the envelope, with their lease."""
    return envelope(
        data, lease_id=lease.lease_id, renewable=lease.renewable, lease_duration=lease.ttl_granted
    )


def listing(names: list[str]) -> Response:
    """``data.keys`` sorted, or 404 with no message when there are none (the real server's)."""
    return envelope({"keys": sorted(names)}) if names else error(404)
