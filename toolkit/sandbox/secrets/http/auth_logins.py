"""HTTP for the login methods: ``auth/userpass/*``, ``auth/ldap/*``, ``auth/approle/*``.

Thin over :mod:`..logins`. The login endpoints take no token (they are how one
gets a token) and answer the issued token in the envelope's ``auth`` block, as
``auth/token/create`` does. Managing users, groups and roles needs a token
whose policies allow the path, as on the real server. A credential in a body
is never echoed in an error.
"""

from __future__ import annotations

import ipaddress
import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from ...._time import format_rfc3339
from .. import fields
from ..errors import InvalidRequest, PathNotFound
from ..logins import AppRole, SecretId, TokenSettings
from ._base import WRITE, SecretsRequest, envelope, listing, no_content, paged_listing, route
from .auth_token import token_auth

if TYPE_CHECKING:
    from ..models import SecretsService
    from ..tokens import Token

__all__ = ["routes"]


def _credential(call: SecretsRequest, name: str) -> str:
    value = call.body.get(name)
    if value is None or value == "":
        raise InvalidRequest(f"missing {name}")
    if not isinstance(value, str):
        raise InvalidRequest(f"{name}: expected a string")
    return value


def _issued(call: SecretsRequest, token: Token) -> Response:
    service = call.service
    identity = service.identity.policies_of(token.entity_id) if token.entity_id else []
    return envelope(None, auth=token_auth(token, service.clock.now(), identity))


def _token_settings(call: SecretsRequest, old: TokenSettings | None = None) -> TokenSettings:
    """The token options of a user or role write, over the ones it had (OpenBao's
    ``token_*`` fields; ``policies``, ``ttl``, ``max_ttl``, ``period``, ``bound_cidrs`` as
    their deprecated names)."""
    body = call.body
    base = old or TokenSettings()
    legacy = "policies" in body and "token_policies" not in body
    if "token_policies" in body or "policies" in body:
        names = fields.string_list(body, "token_policies" if not legacy else "policies")
        policies = sorted({p.lower() for p in names})
    else:
        policies = list(base.policies)

    def duration(name: str, deprecated: str, current: int) -> int:
        if name not in body and deprecated in body:
            return fields.duration(body, deprecated, current)
        return fields.duration(body, name, current)

    cidrs_field = "token_bound_cidrs" if "token_bound_cidrs" in body else "bound_cidrs"
    cidrs = fields.string_list(body, cidrs_field) if cidrs_field in body else base.bound_cidrs
    shown = []
    for cidr in cidrs:
        try:
            network = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            raise InvalidRequest(f"invalid CIDR block {cidr!r} in {cidrs_field}") from None
        # As OpenBao shows them: a block of one address is that address.
        single = network.prefixlen == network.max_prefixlen
        shown.append(str(network.network_address) if single else str(network))
    return TokenSettings(
        policies,
        duration("token_ttl", "ttl", base.ttl),
        duration("token_max_ttl", "max_ttl", base.max_ttl),
        no_default_policy=fields.boolean(body, "token_no_default_policy", base.no_default_policy),
        num_uses=fields.integer(body, "token_num_uses", base.num_uses),
        period=duration("token_period", "period", base.period),
        explicit_max_ttl=fields.duration(body, "token_explicit_max_ttl", base.explicit_max_ttl),
        type=fields.string(body, "token_type", base.type),
        bound_cidrs=shown,
        legacy_policies=legacy or (base.legacy_policies and "token_policies" not in body),
    )


# -- userpass -------------------------------------------------------------------------
async def userpass_login(call: SecretsRequest) -> Response:
    """``POST auth/userpass/login/:username`` with ``password``."""
    token = call.service.logins.userpass_login(
        call.params["username"], _credential(call, "password")
    )
    return _issued(call, token)


def _settings_data(settings: TokenSettings) -> dict[str, Any]:
    """The token options as OpenBao's roles and users read them back (``policies`` only
    when written under that deprecated name)."""
    data: dict[str, Any] = {
        "token_bound_cidrs": list(settings.bound_cidrs),
        "token_explicit_max_ttl": settings.explicit_max_ttl,
        "token_max_ttl": settings.max_ttl,
        "token_no_default_policy": settings.no_default_policy,
        "token_period": settings.period,
        "token_policies": list(settings.policies),
        "token_type": settings.type,
        "token_ttl": settings.ttl,
        "token_num_uses": settings.num_uses,
        "token_strictly_bind_ip": False,
    }
    if settings.legacy_policies and settings.policies:
        data["policies"] = list(settings.policies)
    return data


async def userpass_user(call: SecretsRequest) -> Response:
    """``POST auth/userpass/users/:username``: create or replace a user; ``GET`` it
    (its token settings, never its password)."""
    if call.request.method.upper() == "GET":
        user = call.service.logins.users.get(call.params["username"].lower())
        if user is None:
            raise PathNotFound()
        return envelope(_settings_data(user.settings))
    old = call.service.logins.users.get(call.params["username"].lower())
    call.service.logins.put_user(
        call.params["username"],
        _credential(call, "password") if old is None or "password" in call.body else "",
        _token_settings(call, old.settings if old is not None else None),
    )
    return no_content()


async def userpass_users(call: SecretsRequest) -> Response:
    """``LIST auth/userpass/users``."""
    return listing(list(call.service.logins.users))


# -- LDAP -----------------------------------------------------------------------------
async def ldap_login(call: SecretsRequest) -> Response:
    """``POST auth/ldap/login/:username`` with ``password``."""
    token = call.service.logins.ldap_login(call.params["username"], _credential(call, "password"))
    return _issued(call, token)


async def ldap_group(call: SecretsRequest) -> Response:
    """``POST auth/ldap/groups/:name`` (``policies``) or ``GET`` it."""
    logins = call.service.logins
    name = call.params["name"]
    if call.request.method.upper() == "GET":
        policies = logins.ldap_groups.get(name.lower())
        if policies is None:
            raise PathNotFound()
        return envelope({"policies": list(policies)})
    logins.put_ldap_group(name, [p.lower() for p in fields.string_list(call.body, "policies")])
    return no_content()


async def ldap_user(call: SecretsRequest) -> Response:
    """``GET auth/ldap/users/:name``: the directory user's groups (and no policies of its own)."""
    user = call.service.logins.ldap_users.get(call.params["username"].lower())
    if user is None:
        raise PathNotFound()
    return envelope({"groups": ",".join(user.groups), "policies": []})


async def ldap_users(call: SecretsRequest) -> Response:
    """``LIST auth/ldap/users``."""
    return listing(list(call.service.logins.ldap_users))


async def ldap_groups(call: SecretsRequest) -> Response:
    """``LIST auth/ldap/groups``."""
    return listing(list(call.service.logins.ldap_groups))


# -- AppRole --------------------------------------------------------------------------
async def approle_login(call: SecretsRequest) -> Response:
    """``POST auth/approle/login`` with ``role_id`` and ``secret_id``."""
    role_id = _credential(call, "role_id")
    secret_id: Any = call.body.get("secret_id")
    if secret_id is not None and not isinstance(secret_id, str):
        raise InvalidRequest("secret_id: expected a string")
    return _issued(call, call.service.logins.approle_login(role_id, secret_id or None))


def approle_document(role: AppRole) -> dict[str, Any]:
    """The role as ``GET auth/approle/role/:name`` shows it."""
    return {
        "bind_secret_id": role.bind_secret_id,
        "secret_id_bound_cidrs": None,
        "secret_id_num_uses": role.secret_id_num_uses,
        "secret_id_ttl": role.secret_id_ttl,
        "local_secret_ids": False,
        **_settings_data(role.settings),
    }


async def approle_role(call: SecretsRequest) -> Response:
    """``POST``/``GET``/``DELETE auth/approle/role/:name``."""
    logins = call.service.logins
    name = call.params["name"]
    method = call.request.method.upper()
    if method == "GET":
        return envelope(approle_document(logins.role(name)))
    if method == "DELETE":
        logins.delete_role(name)
        return no_content()
    body = call.body
    old = logins.roles.get(name.lower())
    logins.put_role(
        name,
        _token_settings(call, old.settings if old is not None else None),
        bind_secret_id=fields.boolean(
            body, "bind_secret_id", old.bind_secret_id if old is not None else True
        ),
        secret_id_ttl=fields.duration(
            body, "secret_id_ttl", old.secret_id_ttl if old is not None else 0
        ),
        secret_id_num_uses=fields.integer(
            body,
            "secret_id_num_uses",
            old.secret_id_num_uses if old is not None else 0,
            minimum=0,
        ),
        role_id=fields.string(body, "role_id") or None,
    )
    return no_content()


async def approle_roles(call: SecretsRequest) -> Response:
    """``LIST auth/approle/role``."""
    return paged_listing(call, list(call.service.logins.roles))


async def approle_role_id(call: SecretsRequest) -> Response:
    """``GET auth/approle/role/:name/role-id``; ``POST`` sets it."""
    logins = call.service.logins
    if call.request.method.upper() != "GET":
        logins.set_role_id(call.params["name"], _credential(call, "role_id"))
        return no_content()
    return envelope({"role_id": logins.role(call.params["name"]).role_id})


def _secret_id_metadata(call: SecretsRequest) -> dict[str, str]:
    raw = call.body.get("metadata")
    if isinstance(raw, str) and raw.strip():
        try:
            raw = json.loads(raw)
        except ValueError:
            raise InvalidRequest("failed to parse metadata: not a JSON object") from None
    metadata = raw or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise InvalidRequest("metadata: expected a map of strings to strings")
    return dict(metadata)


def _issued_secret_id(call: SecretsRequest, secret: str | None) -> Response:
    value, issued = call.service.logins.generate_secret_id(
        call.params["name"], _secret_id_metadata(call), secret
    )
    return envelope(
        {
            "secret_id": value,
            "secret_id_accessor": issued.accessor,
            "secret_id_ttl": issued.ttl,
            "secret_id_num_uses": issued.uses_left,
        }
    )


async def approle_secret_id(call: SecretsRequest) -> Response:
    """``POST auth/approle/role/:name/secret-id``: a new secret id, shown this once;
    ``LIST`` the accessors of the role's live secret ids."""
    if call.is_list:
        issued = call.service.logins.secret_ids(call.params["name"])
        return listing([s.accessor for s in issued])
    return _issued_secret_id(call, None)


async def approle_custom_secret_id(call: SecretsRequest) -> Response:
    """``POST auth/approle/role/:name/custom-secret-id``: a secret id of the caller's choosing."""
    return _issued_secret_id(call, _credential(call, "secret_id"))


def _secret_id_document(issued: SecretId) -> dict[str, Any]:
    expiry = issued.creation_time + timedelta(seconds=issued.ttl) if issued.ttl else None
    return {
        "cidr_list": [],
        "creation_time": format_rfc3339(issued.creation_time),
        "expiration_time": format_rfc3339(expiry) if expiry else "0001-01-01T00:00:00Z",
        "last_updated_time": format_rfc3339(issued.creation_time),
        "metadata": dict(issued.metadata),
        "secret_id_accessor": issued.accessor,
        "secret_id_num_uses": issued.uses_left,
        "secret_id_ttl": issued.ttl,
        "token_bound_cidrs": [],
    }


def _found_secret_id(call: SecretsRequest, by_accessor: bool) -> SecretId | None:
    logins = call.service.logins
    name = call.params["name"]
    if by_accessor:
        accessor = _credential(call, "secret_id_accessor")
        return logins.find_secret_id(name, accessor=accessor)
    return logins.find_secret_id(name, value=_credential(call, "secret_id"))


async def approle_secret_id_lookup(call: SecretsRequest) -> Response:
    """``POST auth/approle/role/:name/secret-id/lookup``: a secret id's properties (204 when
    it is not the role's, as OpenBao)."""
    issued = _found_secret_id(call, by_accessor=False)
    return envelope(_secret_id_document(issued)) if issued is not None else no_content()


async def approle_accessor_lookup(call: SecretsRequest) -> Response:
    """``POST auth/approle/role/:name/secret-id-accessor/lookup``: by the accessor (400 when
    unknown)."""
    issued = _found_secret_id(call, by_accessor=True)
    if issued is None:
        accessor = call.body.get("secret_id_accessor")
        raise InvalidRequest(f"failed to find accessor entry for secret_id_accessor: {accessor!r}")
    return envelope(_secret_id_document(issued))


async def approle_secret_id_destroy(call: SecretsRequest) -> Response:
    """``POST auth/approle/role/:name/secret-id/destroy``: forget a secret id (204)."""
    issued = _found_secret_id(call, by_accessor=False)
    if issued is not None:
        call.service.logins.destroy_secret_id(call.params["name"], issued)
    return no_content()


async def approle_accessor_destroy(call: SecretsRequest) -> Response:
    """``POST auth/approle/role/:name/secret-id-accessor/destroy``: by the accessor."""
    issued = _found_secret_id(call, by_accessor=True)
    if issued is None:
        accessor = call.body.get("secret_id_accessor")
        raise InvalidRequest(f"failed to find accessor entry for secret_id_accessor: {accessor!r}")
    call.service.logins.destroy_secret_id(call.params["name"], issued)
    return no_content()


def routes(service: SecretsService) -> list[Route]:
    """The login routes (unauthenticated) and the management routes (ACL-checked)."""
    return [
        route(
            service, "auth/userpass/login/{username}", userpass_login, WRITE, authenticated=False
        ),
        route(service, "auth/userpass/users", userpass_users, ["LIST"]),
        route(service, "auth/userpass/users/{username}", userpass_user, ["GET", *WRITE]),
        route(service, "auth/ldap/login/{username}", ldap_login, WRITE, authenticated=False),
        route(service, "auth/ldap/users", ldap_users, ["LIST"]),
        route(service, "auth/ldap/users/{username}", ldap_user, ["GET"]),
        route(service, "auth/ldap/groups", ldap_groups, ["LIST"]),
        route(service, "auth/ldap/groups/{name}", ldap_group, ["GET", *WRITE]),
        route(service, "auth/approle/login", approle_login, WRITE, authenticated=False),
        route(service, "auth/approle/role", approle_roles, ["LIST"]),
        route(service, "auth/approle/role/{name}/role-id", approle_role_id, ["GET", *WRITE]),
        route(service, "auth/approle/role/{name}/secret-id", approle_secret_id, ["LIST", *WRITE]),
        route(
            service,
            "auth/approle/role/{name}/custom-secret-id",
            approle_custom_secret_id,
            WRITE,
        ),
        route(
            service,
            "auth/approle/role/{name}/secret-id/lookup",
            approle_secret_id_lookup,
            WRITE,
        ),
        route(
            service,
            "auth/approle/role/{name}/secret-id/destroy",
            approle_secret_id_destroy,
            [*WRITE, "DELETE"],
        ),
        route(
            service,
            "auth/approle/role/{name}/secret-id-accessor/lookup",
            approle_accessor_lookup,
            WRITE,
        ),
        route(
            service,
            "auth/approle/role/{name}/secret-id-accessor/destroy",
            approle_accessor_destroy,
            [*WRITE, "DELETE"],
        ),
        route(service, "auth/approle/role/{name}", approle_role, ["GET", "DELETE", *WRITE]),
    ]
