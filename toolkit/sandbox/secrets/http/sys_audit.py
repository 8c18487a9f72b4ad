"""HTTP for ``sys/audit`` and ``sys/audit-hash``: the audit devices and their hashes.

Thin over :mod:`..audit`. ``GET sys/audit`` (sudo) lists the devices by path;
``POST sys/audit-hash/:path`` (no sudo, as on OpenBao) answers ``hash``, a value hashed as that device logs it.
Devices are configured at start, as OpenBao 2.7 configures them: enabling or
disabling one through the API is refused with OpenBao's message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.responses import Response
from starlette.routing import Route

from .. import fields
from ..errors import InvalidRequest
from ._base import WRITE, SecretsRequest, envelope, route

if TYPE_CHECKING:
    from ..models import SecretsService

__all__ = ["routes"]


async def list_devices(call: SecretsRequest) -> Response:
    """``GET sys/audit``: every audit device, by path."""
    devices = {p: d.document() for p, d in call.service.audit.devices.items()}
    return envelope(devices, top_level=True)


async def change_device(call: SecretsRequest) -> Response:
    """``POST``/``DELETE sys/audit/:path``: refused, as OpenBao 2.7 refuses it."""
    verb = "enable" if call.request.method.upper() != "DELETE" else "disable"
    raise InvalidRequest(
        f"cannot {verb} audit device via API; use declarative, config-based audit device "
        "management instead"
    )


async def audit_hash(call: SecretsRequest) -> Response:
    """``POST sys/audit-hash/:path``: ``input`` hashed as the device logs it."""
    device = call.service.audit.device(call.params["path"])
    value = fields.string(call.body, "input")
    return envelope({"hash": device.hash(value)}, top_level=True)


def routes(service: SecretsService) -> list[Route]:
    return [
        route(service, "sys/audit", list_devices, ["GET"], sudo=True),
        route(service, "sys/audit/{path:path}", change_device, [*WRITE, "DELETE"], sudo=True),
        route(service, "sys/audit-hash/{path:path}", audit_hash, WRITE),
    ]
