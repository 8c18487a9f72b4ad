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
from .. import fields
from ..errors import AccessDenied, bad_request
from ..token_roles import StoredTokenRole, TokenRequest
from ._base import WRITE, SecretsRequest, envelope, error, listing, no_content, route

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
        "explicit_max_ttl": token.explicit_max_ttl,
        "id": token.id,
        "issue_time": format_rfc3339(token.creation_time),
        "meta": dict(token.meta) or None,
        "num_uses": token.num_uses,
        "orphan": token.orphan,
        "path": token.path,
        "policies": list(token.policies),
        "renewable": token.renewable,
        "ttl": token.remaining(now),
        "type": token.type,
        **({"period": token.period} if token.period else {}),
        # As OpenBao: the renewal times once renewed, the namespace outside the root one.
        **(
            {
                "last_renewal": format_rfc3339(token.last_renewal),
                "last_renewal_time": int(token.last_renewal.timestamp()),
            }
            if token.last_renewal
            else {}
        ),
        **({"namespace_path": token.namespace} if token.namespace else {}),
        **({"role": token.role} if token.role else {}),
    }


def token_auth(
    token: Token, now: datetime, identity_policies: list[str] | None = None
) -> dict[str, Any]:
    """The ``auth`` block answered when a token is issued or renewed (a login's also
    names the entity's ``identity_policies``)."""
    extra: dict[str, Any] = {}
    policies = list(token.policies)
    if identity_policies:
        extra["identity_policies"] = list(identity_policies)
        policies = sorted({*policies, *identity_policies})
    return {
        "client_token": token.id,
        "accessor": token.accessor,
        "policies": policies,
        "token_policies": list(token.policies),
        **extra,
        "metadata": dict(token.meta) or None,
        "lease_duration": token.remaining(now),
        "renewable": token.renewable,
        "entity_id": token.entity_id,
        "token_type": token.type,
        "orphan": token.orphan,
        "mfa_requirement": None,
        "num_uses": token.num_uses,
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


def token_request(body: dict[str, Any]) -> TokenRequest:
    """A ``auth/token/create`` body as typed arguments (400 naming a field of a wrong type)."""

    def optional_duration(name: str) -> int | None:
        return fields.duration(body, name) if body.get(name) not in (None, "") else None

    policies = fields.string_list(body, "policies") if "policies" in body else None
    return TokenRequest(
        policies=policies,
        no_default_policy=fields.boolean(body, "no_default_policy"),
        no_parent=fields.boolean(body, "no_parent"),
        ttl=optional_duration("ttl") if body.get("ttl") not in (None, "") else None,
        explicit_max_ttl=optional_duration("explicit_max_ttl"),
        period=optional_duration("period"),
        num_uses=fields.integer(body, "num_uses"),
        type=fields.string(body, "type"),
        renewable=fields.boolean(body, "renewable", True),
        meta=fields.string_map(body, "meta"),
        display_name=fields.string(body, "display_name"),
        id=fields.string(body, "id"),
        entity_alias=fields.string(body, "entity_alias"),
    )


async def _create(call: SecretsRequest, *, orphan: bool = False, role_name: str = "") -> Response:
    parent = _caller(call)
    service = call.service
    privileged = service.acl_for(parent).allows(call.path, "update", sudo=True)
    request = token_request(call.body)
    role = None
    if role_name:
        role = service.token_roles.get(role_name.lower())
        if role is None:
            raise bad_request(f"unknown role {role_name}")
    token, warnings = service.create_token(
        parent, request, role=role, orphan=orphan, privileged=privileged
    )
    return envelope(None, auth=token_auth(token, service.clock.now()), warnings=warnings)


async def create(call: SecretsRequest) -> Response:
    """``POST auth/token/create``: a child token of the caller; answers ``auth``."""
    return await _create(call)


async def create_orphan(call: SecretsRequest) -> Response:
    """``POST auth/token/create-orphan``: a token with no parent, for any caller allowed here."""
    return await _create(call, orphan=True)


async def create_with_role(call: SecretsRequest) -> Response:
    """``POST auth/token/create/:role``: a token as the token role decides it."""
    return await _create(call, role_name=call.params["role"])


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


def _body_token(call: SecretsRequest) -> Token | None:
    """The token named by the body's ``token`` (None when it is not one); 400 without it."""
    value: Any = call.body.get("token")
    if not isinstance(value, str) or not value:
        raise bad_request("missing token")
    return call.service.tokens.get(value)


async def revoke(call: SecretsRequest) -> Response:
    """``POST auth/token/revoke``: revoke the body's ``token`` and its children."""
    token = _body_token(call)
    if token is not None:
        call.service.tokens.revoke(token)
    return no_content()


async def renew(call: SecretsRequest) -> Response:
    """``POST auth/token/renew``: extend the body's ``token`` by ``increment``."""
    token = _body_token(call)
    if token is None:
        raise bad_request("invalid token")
    call.service.tokens.renew(token, call.body.get("increment"))
    return envelope(None, auth=token_auth(token, call.service.clock.now()))


async def revoke_accessor(call: SecretsRequest) -> Response:
    """``POST auth/token/revoke-accessor``: revoke the token of an accessor and its children."""
    accessor = call.body.get("accessor")
    if not isinstance(accessor, str) or not accessor:
        raise bad_request("missing accessor")
    call.service.tokens.revoke(call.service.tokens.by_accessor(accessor))
    return no_content()


async def revoke_orphan(call: SecretsRequest) -> Response:
    """``POST auth/token/revoke-orphan``: revoke the body's ``token``; its children become
    orphans. Only a caller with root or sudo here may (400 otherwise, as OpenBao)."""
    if not call.service.acl_for(_caller(call)).allows(call.path, "update", sudo=True):
        raise bad_request("root or sudo privileges required to revoke and orphan")
    token = _body_token(call)
    if token is not None:
        call.service.tokens.revoke_orphan(token)
    return no_content()


async def tidy(call: SecretsRequest) -> Response:
    """``POST auth/token/tidy``: the sandbox keeps nothing to tidy; answered as
    OpenBao answers a tidy it started in the background."""
    return envelope(
        None,
        status=202,
        warnings=[
            "Tidy operation successfully started. Any information from the operation "
            "will be printed to OpenBao's server logs."
        ],
    )


async def list_roles(call: SecretsRequest) -> Response:
    """``LIST auth/token/roles``: the token roles' names (404, no message, when none)."""
    return listing(list(call.service.token_roles))


def role_document(role: StoredTokenRole) -> dict[str, Any]:
    """A token role as ``GET auth/token/roles/:name`` shows it."""
    data: dict[str, Any] = {
        "period": 0,
        "token_period": role.token_period,
        "explicit_max_ttl": 0,
        "token_explicit_max_ttl": role.token_explicit_max_ttl,
        "disallowed_policies": list(role.disallowed_policies),
        "allowed_policies": list(role.allowed_policies),
        "disallowed_policies_glob": list(role.disallowed_policies_glob),
        "allowed_policies_glob": list(role.allowed_policies_glob),
        "name": role.name,
        "orphan": role.orphan,
        "path_suffix": role.path_suffix,
        "renewable": role.renewable,
        "token_type": role.token_type,
        "allowed_entity_aliases": list(role.allowed_entity_aliases) or None,
        "token_no_default_policy": role.token_no_default_policy,
    }
    if role.token_bound_cidrs:
        data["token_bound_cidrs"] = list(role.token_bound_cidrs)
    if role.token_num_uses:
        data["token_num_uses"] = role.token_num_uses
    return data


def _names(body: dict[str, Any], name: str, existing: list[str], lower: bool = True) -> list[str]:
    if name not in body:
        return list(existing)
    names = fields.string_list(body, name)
    return sorted({n.lower() if lower else n for n in names})


def _role_from(body: dict[str, Any], name: str, old: StoredTokenRole | None) -> StoredTokenRole:
    """A token role from a write's body, over the role as it was (fields not given stay)."""
    base = old or StoredTokenRole(name)

    def duration(field_name: str, current: int) -> int:
        return fields.duration(body, field_name, current)

    role = StoredTokenRole(
        name=name,
        allowed_policies=_names(body, "allowed_policies", base.allowed_policies),
        disallowed_policies=_names(body, "disallowed_policies", base.disallowed_policies),
        allowed_policies_glob=_names(body, "allowed_policies_glob", base.allowed_policies_glob),
        disallowed_policies_glob=_names(
            body, "disallowed_policies_glob", base.disallowed_policies_glob
        ),
        orphan=fields.boolean(body, "orphan", base.orphan),
        renewable=fields.boolean(body, "renewable", base.renewable),
        path_suffix=fields.string(body, "path_suffix", base.path_suffix),
        token_type=fields.string(body, "token_type", base.token_type),
        token_no_default_policy=fields.boolean(
            body, "token_no_default_policy", base.token_no_default_policy
        ),
        allowed_entity_aliases=_names(body, "allowed_entity_aliases", base.allowed_entity_aliases),
        token_period=duration("token_period", base.token_period),
        token_explicit_max_ttl=duration("token_explicit_max_ttl", base.token_explicit_max_ttl),
        token_ttl=duration("token_ttl", base.token_ttl),
        token_max_ttl=duration("token_max_ttl", base.token_max_ttl),
        token_num_uses=fields.integer(body, "token_num_uses", base.token_num_uses, minimum=0),
        token_bound_cidrs=_names(body, "token_bound_cidrs", base.token_bound_cidrs, False),
    )
    if role.token_type == "default":
        role.token_type = "default-service"
    role.check()
    return role


async def token_role(call: SecretsRequest) -> Response:
    """``GET``/``POST``/``DELETE auth/token/roles/:name``."""
    name = call.params["name"].lower()
    roles = call.service.token_roles
    method = call.request.method.upper()
    if method == "GET":
        role = roles.get(name)
        return envelope(role_document(role)) if role is not None else error(404)
    if method == "DELETE":
        roles.pop(name, None)
        return no_content()
    roles[name] = _role_from(call.body, name, roles.get(name))
    return no_content()


def routes(service: SecretsService) -> list[Route]:
    """The token routes (not restricted: any namespace may use its tokens)."""
    return [
        route(service, "auth/token/create", create, WRITE),
        route(service, "auth/token/create-orphan", create_orphan, WRITE),
        route(service, "auth/token/create/{role}", create_with_role, WRITE),
        route(service, "auth/token/renew", renew, WRITE),
        route(service, "auth/token/revoke-accessor", revoke_accessor, WRITE),
        route(service, "auth/token/revoke-orphan", revoke_orphan, WRITE),
        route(service, "auth/token/tidy", tidy, WRITE),
        route(service, "auth/token/lookup-self", lookup_self, ["GET", "POST"]),
        route(service, "auth/token/lookup", lookup, WRITE),
        route(service, "auth/token/accessors", list_accessors, ["LIST"], sudo=True),
        route(service, "auth/token/roles", list_roles, ["LIST"]),
        route(service, "auth/token/roles/{name}", token_role, ["GET", "DELETE", *WRITE]),
        route(service, "auth/token/lookup-accessor", lookup_accessor, WRITE),
        route(service, "auth/token/renew-self", renew_self, WRITE),
        route(service, "auth/token/revoke-self", revoke_self, WRITE),
        route(service, "auth/token/revoke", revoke, WRITE),
    ]
