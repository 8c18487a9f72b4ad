"""HTTP for the directory (AD) engine (spec 4.7, part 3 'Library service account'), relative to its mount; thin over :mod:`.state` and :mod:`.library`.

Request bodies are read here, each field by :mod:`..fields` (400 naming the
field), into the typed arguments the state methods take.

Lists answer 404 when empty, as the real server does. The manage check-in
path is open to whoever the ACL grants ``<mount>library/manage/*``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from starlette.responses import Response

from ....._time import format_rfc3339
from ... import fields
from ...http import _base as web
from ...http._base import EngineRoute, Handler, SecretsRequest
from ...http._credentials import lease_fields
from ...tokens import Token
from .state import (
    DEFAULT_URL,
    REQUEST_TIMEOUT,
    ROTATION_TOLERANCE,
    ADConfig,
    ADEngine,
    ConfigWrite,
)

__all__ = ["routes"]


_backend = web.engine_accessor(ADEngine)


def _token(call: SecretsRequest) -> Token:
    assert call.caller is not None  # every engine route is authenticated
    return call.caller


# -- answers ---------------------------------------------------------------------------


def _time(value: datetime | None) -> str | None:
    return format_rfc3339(value) if value is not None else None


def config_document(config: ADConfig) -> dict[str, Any]:
    """The fields ``GET config`` answers (spec 4.7): never ``bindpass``."""
    return {
        "binddn": config.binddn,
        "certificate": config.certificate,
        "insecure_tls": config.insecure_tls,
        "length": 0 if config.password_policy else config.length,
        "max_ttl": config.max_ttl,
        "starttls": config.starttls,
        "tls_max_version": config.tls_max_version,
        "tls_min_version": config.tls_min_version,
        "ttl": config.ttl,
        "upndomain": config.upndomain,
        "url": config.url,
        "userdn": config.userdn,
    }


def _role_document(engine: ADEngine, name: str) -> dict[str, Any]:
    role, password_last_set = engine.read_role(name)
    return {
        "service_account_name": role.service_account_name,
        "ttl": role.ttl,
        "last_service_rotation": _time(role.last_service_rotation),
        "password_last_set": _time(password_last_set),
    }


def _set_document(engine: ADEngine, name: str) -> dict[str, Any]:
    library_set = engine.library.read_set(name)
    return {
        "service_account_names": list(library_set.service_account_names),
        "ttl": library_set.ttl,
        "max_ttl": library_set.max_ttl,
        "disable_check_in_enforcement": library_set.disable_check_in_enforcement,
    }


def _given(body: dict[str, Any], name: str) -> bool:
    return body.get(name) not in (None, "")


def config_write(body: dict[str, Any]) -> ConfigWrite:
    """A ``POST config`` body as typed settings; absent ttls and length stay None."""
    return ConfigWrite(
        binddn=fields.string(body, "binddn", need=True),
        bindpass=fields.string(body, "bindpass", need=True),
        url=fields.string(body, "url", DEFAULT_URL),
        userdn=fields.string(body, "userdn"),
        upndomain=fields.string(body, "upndomain"),
        certificate=fields.string(body, "certificate"),
        insecure_tls=fields.boolean(body, "insecure_tls"),
        starttls=fields.boolean(body, "starttls"),
        tls_min_version=fields.string(body, "tls_min_version", "tls12"),
        tls_max_version=fields.string(body, "tls_max_version", "tls12"),
        ttl=fields.duration(body, "ttl") if _given(body, "ttl") else None,
        max_ttl=fields.duration(body, "max_ttl") if _given(body, "max_ttl") else None,
        password_policy=fields.string(body, "password_policy"),
        length=fields.integer(body, "length") if _given(body, "length") else None,
        formatter=fields.string(body, "formatter"),
        case_sensitive_names=fields.boolean(body, "case_sensitive_names"),
        request_timeout=fields.duration(body, "request_timeout", REQUEST_TIMEOUT),
        last_rotation_tolerance=fields.duration(
            body, "last_rotation_tolerance", ROTATION_TOLERANCE
        ),
    )


async def write_config(call: SecretsRequest) -> Response:
    _backend(call).write_config(config_write(call.body))
    return web.no_content()


async def read_config(call: SecretsRequest) -> Response:
    return web.envelope(config_document(_backend(call).read_config()))


async def delete_config(call: SecretsRequest) -> Response:
    _backend(call).delete_config()
    return web.no_content()


async def list_roles(call: SecretsRequest) -> Response:
    return web.listing(_backend(call).role_names())


async def creds(call: SecretsRequest) -> Response:
    role = _backend(call).creds(call.params["name"])
    return web.envelope(
        {
            "current_password": role.current_password,
            "last_password": role.last_password,
            "username": role.service_account_name,
        }
    )


async def write_role(call: SecretsRequest) -> Response:
    """``POST roles/:name``: ``service_account_name`` (required to create), ``ttl``."""
    body = call.body
    _backend(call).write_role(
        call.params["name"],
        service_account_name=fields.string(body, "service_account_name"),
        ttl=fields.duration(body, "ttl") if _given(body, "ttl") else None,
    )
    return web.no_content()


async def list_sets(call: SecretsRequest) -> Response:
    return web.listing(_backend(call).library.set_names())


async def write_set(call: SecretsRequest) -> Response:
    """``POST library/:name``: ``service_account_names``, ``ttl``, ``max_ttl``,
    ``disable_check_in_enforcement``; what is absent keeps its value."""
    body = call.body
    _backend(call).library.write_set(
        call.params["name"],
        service_account_names=fields.string_list(body, "service_account_names"),
        ttl=fields.duration(body, "ttl") if _given(body, "ttl") else None,
        max_ttl=fields.duration(body, "max_ttl") if _given(body, "max_ttl") else None,
        disable_check_in_enforcement=(
            fields.boolean(body, "disable_check_in_enforcement")
            if _given(body, "disable_check_in_enforcement")
            else None
        ),
    )
    return web.no_content()


async def check_out(call: SecretsRequest) -> Response:
    library = _backend(call).library
    ttl = fields.duration(call.body, "ttl", 0)
    lent, lease = library.check_out(call.params["name"], _token(call), ttl=ttl)
    data = {"service_account_name": lent.service_account_name, "password": lent.password}
    return web.envelope(data, **lease_fields(lease))


def _check_in(call: SecretsRequest, *, manage: bool) -> Response:
    done = _backend(call).library.check_in(
        call.params["name"],
        _token(call),
        service_account_names=fields.string_list(call.body, "service_account_names"),
        manage=manage,
    )
    return web.envelope({"check_ins": done})


async def check_in(call: SecretsRequest) -> Response:
    return _check_in(call, manage=False)


async def manage_check_in(call: SecretsRequest) -> Response:
    return _check_in(call, manage=True)


async def status(call: SecretsRequest) -> Response:
    """``GET library/:name/status``: each account's availability and borrower."""
    answer: dict[str, dict[str, Any]] = {}
    for account, out in _backend(call).library.status(call.params["name"]):
        if out is None:
            answer[account] = {"available": True}
        else:
            answer[account] = {
                "available": False,
                "borrower_client_token": out.borrower_client_token,
                "borrower_entity_id": out.borrower_entity_id,
            }
    return web.envelope(answer)


async def rotate_root(call: SecretsRequest) -> Response:
    warnings = _backend(call).rotate_root()
    return web.envelope(None, warnings=warnings) if warnings else web.no_content()


def _named(
    path: str,
    owner: str,
    read: Callable[[ADEngine, str], dict[str, Any]],
    write: Handler,
    delete: str,
) -> EngineRoute:
    """``GET``/``POST``/``PUT``/``DELETE`` of one named item: a role (``owner`` empty: the
    ADEngine's) or a set (``owner`` "library"); ``read`` renders the item,
    ``write`` reads the body."""

    def state(call: SecretsRequest) -> Any:
        backend = _backend(call)
        return getattr(backend, owner) if owner else backend

    async def do_read(call: SecretsRequest) -> Response:
        return web.envelope(read(_backend(call), call.params["name"]))

    async def do_delete(call: SecretsRequest) -> Response:
        getattr(state(call), delete)(call.params["name"])
        return web.no_content()

    return web.resource(path, {"GET": do_read, "POST": write, "DELETE": do_delete})


def routes() -> list[EngineRoute]:
    config = {"GET": read_config, "POST": write_config, "PUT": write_config}
    return [
        web.resource("config", {**config, "DELETE": delete_config}),
        web.engine_route("roles", list_roles, ["GET", "LIST"]),
        _named("roles/{name}", "", _role_document, write_role, "delete_role"),
        web.engine_route("creds/{name}", creds, ["GET"]),
        web.engine_route("library", list_sets, ["LIST"]),
        web.engine_route("library/manage/{name}/check-in", manage_check_in, ["POST", "PUT"]),
        web.engine_route("library/{name}/check-out", check_out, ["POST", "PUT"]),
        web.engine_route("library/{name}/check-in", check_in, ["POST", "PUT"]),
        web.engine_route("library/{name}/status", status, ["GET"]),
        _named("library/{name}", "library", _set_document, write_set, "delete_set"),
        web.engine_route("rotate-root", rotate_root, ["GET"]),
    ]
