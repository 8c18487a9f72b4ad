"""HTTP for ``sys/mounts`` and ``sys/auth``, thin over :mod:`..mounts` and :mod:`..models`.

Reads the mount table, and enables, tunes and disables engine mounts as the
real server does (``POST``/``DELETE sys/mounts/:path``, ``sys/mounts/:path/tune``).
Also ``sys/internal/ui/mounts[/:path]``, which the CLI reads to learn what is
mounted where (its ``kv`` commands detect the engine version from it): an
unauthenticated path on the real server that checks the caller's token itself
and shows only the mounts the token can reach.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from .. import fields
from ..errors import InvalidRequest, ServerSealed, permission_denied
from ..mounts import BUILTIN_VERSION, Mount
from ._base import SecretsRequest, envelope, no_content, request_token, route

if TYPE_CHECKING:
    from ...._spec.acl import ACL
    from ..models import SecretsService

__all__ = ["mount_document", "routes"]


def mount_document(mount: Mount) -> dict[str, Any]:
    """The mount as ``sys/mounts`` and ``sys/auth`` show it."""
    return {
        "accessor": mount.accessor,
        "config": {
            "default_lease_ttl": mount.default_lease_ttl,
            "force_no_cache": False,
            "max_lease_ttl": mount.max_lease_ttl,
        },
        "description": mount.description,
        "external_entropy_access": False,
        "local": mount.local,
        "options": mount.options,
        "plugin_version": "",
        "running_plugin_version": BUILTIN_VERSION,
        "running_sha256": "",
        "seal_wrap": mount.seal_wrap,
        "type": mount.type,
        "uuid": mount.uuid,
    }


def _table(mounts: Mapping[str, Mount]) -> dict[str, dict[str, Any]]:
    """A mount table as ``sys/mounts`` and ``sys/auth`` show it, by path."""
    return {path: mount_document(m) for path, m in sorted(mounts.items())}


async def list_mounts(call: SecretsRequest) -> Response:
    """``GET sys/mounts``: every secrets engine mount, by path."""
    return envelope(_table(call.service.mounts.engines), top_level=True)


async def read_mount(call: SecretsRequest) -> Response:
    """``GET sys/mounts/:path``: one mount."""
    mount = call.service.mounts.engine(call.params["path"])
    if mount is None:
        raise InvalidRequest(f"no matching mount at {call.params['path'].strip('/')}/")
    return envelope(mount_document(mount), top_level=True)


def _config(call: SecretsRequest) -> dict[str, int]:
    config = call.body.get("config") or {}
    if not isinstance(config, dict):
        raise InvalidRequest("config: expected an object")
    return {
        "default_lease_ttl": fields.duration(config, "default_lease_ttl"),
        "max_lease_ttl": fields.duration(config, "max_lease_ttl"),
    }


async def enable_mount(call: SecretsRequest) -> Response:
    """``POST sys/mounts/:path``: mount an engine of ``type`` there (400 when the path is taken)."""
    path = call.params["path"]
    kind = fields.string(call.body, "type", need=True)
    options = call.body.get("options")
    if options is not None and not isinstance(options, dict):
        raise InvalidRequest("options: expected a map of strings")
    call.service.enable_engine(
        path,
        kind,
        description=fields.string(call.body, "description"),
        options={str(k): str(v) for k, v in options.items()} if options else None,
        **_config(call),
    )
    return no_content()


async def disable_mount(call: SecretsRequest) -> Response:
    """``DELETE sys/mounts/:path``: revoke the mount's leases and unmount it (204 when absent)."""
    call.service.disable_engine(call.params["path"])
    return no_content()


async def read_tune(call: SecretsRequest) -> Response:
    """``GET sys/mounts/:path/tune``: the mount's lease ttls."""
    mount = call.service.mounts.engine(call.params["path"])
    if mount is None:
        raise InvalidRequest(f"cannot fetch sysview for path {call.params['path']!r}")
    default, maximum = mount.lease_ttls()
    data = {
        "default_lease_ttl": default,
        "max_lease_ttl": maximum,
        "description": mount.description,
        "force_no_cache": False,
        "options": mount.options,
    }
    return envelope(data, top_level=True)


async def tune_mount(call: SecretsRequest) -> Response:
    """``POST sys/mounts/:path/tune``: change the mount's default and max lease ttl."""
    path = call.params["path"]
    mount = call.service.mounts.engine(path)
    if mount is None:
        raise InvalidRequest(f"no mount at {path.strip('/')}/")
    default = fields.duration(call.body, "default_lease_ttl", mount.default_lease_ttl)
    maximum = fields.duration(call.body, "max_lease_ttl", mount.max_lease_ttl)
    if maximum and default > maximum:
        raise InvalidRequest("default_lease_ttl: cannot be greater than max_lease_ttl")
    if "description" in call.body:
        mount.description = fields.string(call.body, "description")
    mount.default_lease_ttl, mount.max_lease_ttl = default, maximum
    return no_content()


async def list_auth(call: SecretsRequest) -> Response:
    """``GET sys/auth``: every auth method mount, by path."""
    return envelope(_table(call.service.mounts.auth), top_level=True)


def _auth_mount(call: SecretsRequest) -> Mount:
    path = call.params["path"].strip("/") + "/"
    mount = call.service.mounts.auth.get(path)
    if mount is None:
        raise InvalidRequest(
            f"no auth method mounted at {path!r}: the sandbox serves its login methods at "
            f"their fixed paths only ({', '.join(call.service.mounts.auth)})"
        )
    return mount


async def auth_mount(call: SecretsRequest) -> Response:
    """``GET``/``POST``/``DELETE sys/auth/:path``: read, enable or disable a login method.

    The sandbox's login methods are always mounted at their fixed paths: enabling one
    there with its own type answers 204 as a fresh enable does; disabling one forgets
    its users and roles and the entity aliases made on it, as OpenBao forgets a
    disabled mount's data, and it stays listed (see docs/differences.md).
    """
    method = call.request.method.upper()
    mount = _auth_mount(call)
    if method == "GET":
        return envelope(
            {**mount_document(mount), "deprecation_status": "supported"}, top_level=True
        )
    if method == "DELETE":
        call.service.disable_login_method(mount.type)
        return no_content()
    kind = fields.string(call.body, "type")
    if kind != mount.type:
        raise InvalidRequest(
            f"the sandbox serves {mount.type!r} at auth/{mount.path}, not {kind or 'nothing'!r}"
        )
    return no_content()


def _caller_acl(call: SecretsRequest) -> ACL:
    service = call.service
    if service.sealed:
        raise ServerSealed("Vault is sealed")
    return service.acl_for(service.authenticate(request_token(call.request)))


async def ui_mounts(call: SecretsRequest) -> Response:
    """``GET sys/internal/ui/mounts``: the mounts the caller's token can reach, by kind."""
    acl = _caller_acl(call)
    table = call.service.mounts
    secret = {p: m for p, m in _table(table.engines).items() if acl.reaches(p)}
    auth = {p: m for p, m in _table(table.auth).items() if acl.reaches("auth/" + p)}
    return envelope({"secret": secret, "auth": auth})


async def ui_mount(call: SecretsRequest) -> Response:
    """``GET sys/internal/ui/mounts/:path``: the mount ``path`` falls under, with its ``path``.

    403 ``permission denied`` when nothing is mounted there or the token cannot
    reach it, so that the path cannot be used to discover mounts.
    """
    acl = _caller_acl(call)
    mount = call.service.mounts.match(call.params["path"].strip("/"))
    if mount is None or not acl.reaches(mount.path):
        raise permission_denied()
    return envelope({**mount_document(mount), "path": mount.path})


def routes(service: SecretsService) -> list[Route]:
    return [
        route(service, "sys/mounts", list_mounts, ["GET"]),
        route(service, "sys/mounts/{path:path}/tune", read_tune, ["GET"]),
        route(service, "sys/mounts/{path:path}/tune", tune_mount, ["POST", "PUT"]),
        route(service, "sys/mounts/{path:path}", read_mount, ["GET"]),
        route(service, "sys/mounts/{path:path}", enable_mount, ["POST", "PUT"]),
        route(service, "sys/mounts/{path:path}", disable_mount, ["DELETE"]),
        route(service, "sys/auth", list_auth, ["GET"]),
        route(
            service, "sys/auth/{path:path}", auth_mount, ["GET", "POST", "PUT", "DELETE"], sudo=True
        ),
        route(service, "sys/internal/ui/mounts", ui_mounts, ["GET"], authenticated=False),
        route(
            service, "sys/internal/ui/mounts/{path:path}", ui_mount, ["GET"], authenticated=False
        ),
    ]
