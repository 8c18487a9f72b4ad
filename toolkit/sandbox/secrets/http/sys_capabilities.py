"""HTTP for ``sys/capabilities-self`` and ``sys/capabilities``: what a token may do on paths.

The CLI's ``token capabilities`` calls them. Thin over the merged ACL of the
token's policies (:meth:`toolkit._spec.acl.ACL.capabilities`): each path answers its
sorted capabilities, ``["root"]`` for a root token and ``["deny"]`` where no
rule grants anything. As on the real server the answer maps every path to its
list and, when one path was asked, also names that list ``capabilities``;
``path`` is accepted for ``paths``; an unknown token given to
``sys/capabilities`` is 400 ``invalid token``. The default policy grants
``sys/capabilities-self``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from ..errors import InvalidRequest
from ._base import WRITE, SecretsRequest, envelope, route

if TYPE_CHECKING:
    from ..models import SecretsService
    from ..tokens import Token

__all__ = ["routes"]


def _paths(call: SecretsRequest) -> list[str]:
    raw: Any = call.body.get("paths", call.body.get("path"))
    if isinstance(raw, str):
        raw = [p.strip() for p in raw.split(",") if p.strip()]
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) for p in raw):
        raise InvalidRequest("paths: expected a non-empty list of paths")
    return [p.lstrip("/") for p in raw]


def _answer(call: SecretsRequest, token: Token) -> Response:
    paths = _paths(call)
    acl = call.service.acl_for(token)
    data: dict[str, list[str]] = {path: acl.capabilities(path) for path in paths}
    if len(paths) == 1:
        data["capabilities"] = data[paths[0]]
    return envelope(data, top_level=True)


async def capabilities_self(call: SecretsRequest) -> Response:
    """``POST sys/capabilities-self``: the caller's own capabilities on ``paths``."""
    assert call.caller is not None  # an authenticated route
    return _answer(call, call.caller)


async def capabilities(call: SecretsRequest) -> Response:
    """``POST sys/capabilities``: the capabilities of ``token`` on ``paths``."""
    token_id = call.body.get("token")
    if not isinstance(token_id, str) or not token_id:
        raise InvalidRequest("token: missing the token to look up")
    token = call.service.tokens.get(token_id)
    if token is None:
        raise InvalidRequest("invalid token")
    return _answer(call, token)


async def capabilities_accessor(call: SecretsRequest) -> Response:
    """``POST sys/capabilities-accessor``: the capabilities of the token of ``accessor``."""
    accessor = call.body.get("accessor")
    if not isinstance(accessor, str) or not accessor:
        raise InvalidRequest("accessor: missing the accessor of the token to look up")
    return _answer(call, call.service.tokens.by_accessor(accessor))


def routes(service: SecretsService) -> list[Route]:
    return [
        route(service, "sys/capabilities-accessor", capabilities_accessor, WRITE),
        route(service, "sys/capabilities-self", capabilities_self, WRITE),
        route(service, "sys/capabilities", capabilities, WRITE),
    ]
