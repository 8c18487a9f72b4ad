"""HTTP for ``auth/token/*``: issuing, looking up, renewing and revoking tokens.

Thin over :mod:`..tokens`. A token is issued with ``POST auth/token/create``
and answered in the envelope's ``auth`` block; lookups answer ``data``;
revocations answer 204. ``LIST auth/token/accessors`` (sudo) lists every live
token's accessor and ``auth/token/lookup-accessor`` shows one without its id.
An unknown token on ``auth/token/lookup`` is 403
``bad token``, as on the real server; revoking one is a no-op 204.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from ...._time import format_rfc3339
from ..errors import AccessDenied, bad_request
from ._base import SecretsRequest, envelope, error, listing, no_content, route

if TYPE_CHECKING:
    from ..models import SecretsService
    from ..tokens import Token

__all__ = ["routes", "token_auth", "token_lookup"]


def token_lookup(token: Token, now: datetime) -> dict[str, Any]:
    """The ``data`` of ``auth/token/lookup-self`` and ``auth/token/lookup``."""
    expiry = token.expire_time
    return {
        "accessor": token.accessor,
        "creation_time": int(token.creation_time.timestamp()),
        "creation_ttl": token.ttl,
        "display_name": token.display_name,
        "entity_id": token.entity_id,
        "expire_time": format_rfc3339(expiry) if expiry else None,
        "explicit_max_ttl": 0,
        "id": token.id,
        "issue_time": format_rfc3339(token.creation_time),
        "last_renewal_time": int(token.last_renewal.timestamp()) if token.last_renewal else None,
        "meta": dict(token.meta) or None,
        "namespace_path": token.namespace,
        "num_uses": 0,
        "orphan": token.orphan,
        "path": token.path,
        "policies": list(token.policies),
        "renewable": token.renewable,
        "ttl": token.remaining(now),
        "type": "service",
    }


def token_auth(token: Token, now: datetime) -> dict[str, Any]:
    """The ``auth`` block answered when a token is issued or renewed."""
    return {
        "client_token": token.id,
        "accessor": token.accessor,
        "policies": list(token.policies),
        "token_policies": list(token.policies),
        "metadata": dict(token.meta) or None,
        "lease_duration": token.remaining(now),
        "renewable": token.renewable,
        "entity_id": token.entity_id,
        "token_type": "service",
        "orphan": token.orphan,
        "mfa_requirement": None,
        "num_uses": 0,
    }


def _caller(call: SecretsRequest) -> Token:
    assert call.caller is not None  # every route here is authenticated
    return call.caller


def _named_token(call: SecretsRequest) -> Token | None:
    """The token named by the body's ``token`` (the caller's own when absent)."""
    value = call.body.get("token")
    if value is None or value == "":
        return _caller(call)
    if not isinstance(value, str):
        raise bad_request("'token' must be a string")
    return call.service.tokens.get(value)


async def create(call: SecretsRequest) -> Response:
    """``POST auth/token/create``: a child token of the caller; answers ``auth``."""
    parent = _caller(call)
    has_sudo = call.service.acl_for(parent).allows("auth/token/create", "update", sudo=True)
    token = call.service.tokens.create(parent, call.body, parent_has_sudo=has_sudo)
    return envelope(None, auth=token_auth(token, call.service.clock.now()))


async def lookup_self(call: SecretsRequest) -> Response:
    """``GET auth/token/lookup-self``: the caller's own token."""
    return envelope(token_lookup(_caller(call), call.service.clock.now()))


async def lookup(call: SecretsRequest) -> Response:
    """``POST auth/token/lookup``: the token given in the body's ``token``."""
    token = _named_token(call)
    if token is None:
        raise AccessDenied("bad token")
    return envelope(token_lookup(token, call.service.clock.now()))


async def list_accessors(call: SecretsRequest) -> Response:
    """``LIST auth/token/accessors`` (sudo): the accessor of every live token."""
    return listing(call.service.tokens.accessors())


async def lookup_accessor(call: SecretsRequest) -> Response:
    """``POST auth/token/lookup-accessor``: a token's properties by its accessor, without its id."""
    accessor = call.body.get("accessor")
    if not isinstance(accessor, str) or not accessor:
        raise bad_request("missing accessor")
    token = call.service.tokens.by_accessor(accessor)
    return envelope({**token_lookup(token, call.service.clock.now()), "id": ""})


async def renew_self(call: SecretsRequest) -> Response:
    """``POST auth/token/renew-self``: extend the caller's token by ``increment``."""
    token = call.service.tokens.renew(_caller(call), call.body.get("increment"))
    return envelope(None, auth=token_auth(token, call.service.clock.now()))


async def revoke_self(call: SecretsRequest) -> Response:
    """``POST auth/token/revoke-self``: revoke the caller's token and its children."""
    call.service.tokens.revoke(_caller(call))
    return no_content()


async def revoke(call: SecretsRequest) -> Response:
    """``POST auth/token/revoke``: revoke the body's ``token`` and its children."""
    value: Any = call.body.get("token")
    if not isinstance(value, str) or not value:
        raise bad_request("missing token")
    token = call.service.tokens.get(value)
    if token is not None:
        call.service.tokens.revoke(token)
    return no_content()


async def list_roles(call: SecretsRequest) -> Response:
    """``LIST auth/token/roles``: the sandbox keeps no token roles, and answers as a
    real server with none does (404, no message), not "no handler for route"."""
    return listing([])


async def read_role(call: SecretsRequest) -> Response:
    """``GET auth/token/roles/:name``: no such role (404, no message, as OpenBao)."""
    return error(404)


def routes(service: SecretsService) -> list[Route]:
    """The token routes (not restricted: any namespace may use its tokens)."""
    write = ["POST", "PUT"]
    return [
        route(service, "auth/token/create", create, write),
        route(service, "auth/token/lookup-self", lookup_self, ["GET", "POST"]),
        route(service, "auth/token/lookup", lookup, write),
        route(service, "auth/token/accessors", list_accessors, ["LIST"], sudo=True),
        route(service, "auth/token/roles", list_roles, ["LIST"]),
        route(service, "auth/token/roles/{name}", read_role, ["GET"]),
        route(service, "auth/token/lookup-accessor", lookup_accessor, write),
        route(service, "auth/token/renew-self", renew_self, write),
        route(service, "auth/token/revoke-self", revoke_self, write),
        route(service, "auth/token/revoke", revoke, write),
    ]
