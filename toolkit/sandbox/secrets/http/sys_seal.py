"""HTTP for the seal: ``sys/seal-status``, ``sys/seal``, ``sys/unseal``, ``sys/init``,
``sys/health`` and ``sys/leader``.

All but ``sys/seal`` are unauthenticated on the real server, and answer their
fields bare (no envelope). The logic is in :mod:`..seal`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import InvalidRequest
from ..seal import COMMIT_DATE, SERVER_VERSION, SealState, decode_key, sealed_error
from ._base import SecretsRequest, bare, flag, no_content, route

if TYPE_CHECKING:
    from ..models import SecretsService

__all__ = ["health_document", "routes", "seal_status_document"]


def seal_status_document(seal: SealState) -> dict[str, Any]:
    """The ``sys/seal-status`` answer (also what ``sys/unseal`` returns)."""
    body: dict[str, Any] = {
        "type": seal.seal_type,
        "initialized": True,
        "sealed": seal.sealed,
        "t": seal.threshold,
        "n": seal.shares,
        "progress": seal.progress,
        "nonce": seal.nonce,
        "version": SERVER_VERSION,
        "commit_date": COMMIT_DATE,
        "migration": False,
        "recovery_seal": seal.recovery,
        "storage_type": "inmem",
    }
    if seal.recovery:
        # As OpenBao 2.7 with a static seal: ``t`` and ``n`` are the recovery shares'.
        body["recovery_seal_type"] = "shamir"
    if not seal.sealed:
        body["cluster_name"] = seal.cluster_name
        body["cluster_id"] = seal.cluster_id
    return body


def health_document(seal: SealState, server_time: int) -> dict[str, Any]:
    """The ``sys/health`` body; ``server_time`` is the sandbox clock in Unix seconds."""
    body: dict[str, Any] = {
        "initialized": True,
        "sealed": seal.sealed,
        "standby": False,
        "performance_standby": False,
        "replication_performance_mode": "disabled",
        "replication_dr_mode": "disabled",
        "server_time_utc": server_time,
        "version": SERVER_VERSION,
    }
    if not seal.sealed:
        body["cluster_name"] = seal.cluster_name
        body["cluster_id"] = seal.cluster_id
    return body


# The ``sys/leader`` body of a single server without high availability.
LEADER = {
    "ha_enabled": False,
    "is_self": False,
    "active_time": "0001-01-01T00:00:00Z",
    "leader_address": "",
    "leader_cluster_address": "",
    "performance_standby": False,
    "performance_standby_last_remote_wal": 0,
}


async def seal_status(call: SecretsRequest) -> Response:
    """``GET sys/seal-status``."""
    return bare(seal_status_document(call.service.seal))


async def seal(call: SecretsRequest) -> Response:
    """``PUT sys/seal`` (sudo): seal the server."""
    call.service.seal.seal()
    return no_content()


async def unseal(call: SecretsRequest) -> Response:
    """``PUT sys/unseal``: give one share (``key``), or ``reset`` the progress."""
    state = call.service.seal
    if flag(call, "reset"):
        if not state.sealed:
            raise InvalidRequest("vault is unsealed")
        state.reset_unseal()
        return bare(seal_status_document(state))
    if not call.body.get("key"):
        raise InvalidRequest(
            "'key' must be specified in request body as JSON, or 'reset' set to true"
        )
    state.unseal(decode_key(call.body["key"]))
    return bare(seal_status_document(state))


async def init(call: SecretsRequest) -> Response:
    """``GET sys/init``: the sandbox is always initialised; ``PUT`` is refused as on the real server."""
    if call.request.method in ("PUT", "POST"):
        raise InvalidRequest("Vault is already initialized")
    return bare({"initialized": True})


def _status_code(call: SecretsRequest, name: str, default: int) -> int:
    raw = call.query.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise InvalidRequest(f"{name} must be an integer status code, got {raw!r}") from None


async def health(call: SecretsRequest) -> Response:
    """``GET sys/health``: 200 when unsealed, 503 when sealed (``activecode``/``sealedcode`` override)."""
    state = call.service.seal
    active = _status_code(call, "activecode", 200)
    sealed = _status_code(call, "sealedcode", 503)
    _status_code(call, "uninitcode", 501)  # checked like the real server; never used here
    _status_code(call, "standbycode", 429)
    now = int(call.service.clock.now().timestamp())
    code = sealed if state.sealed else active
    if call.request.method == "HEAD":
        return Response(status_code=code, media_type="application/json")
    return JSONResponse(health_document(state, now), status_code=code)


async def leader(call: SecretsRequest) -> Response:
    """``GET sys/leader``: no high availability in the sandbox; 503 while sealed."""
    if call.service.seal.sealed:
        # The CLI's ``status`` reads it after ``sys/seal-status``; sealed, the
        # real server answers 503, as for any sealed call.
        raise sealed_error()
    return bare(dict(LEADER))


def routes(service: SecretsService) -> list[Route]:
    return [
        route(service, "sys/seal-status", seal_status, ["GET"], authenticated=False),
        route(service, "sys/seal", seal, ["PUT", "POST"], sudo=True),
        route(service, "sys/unseal", unseal, ["PUT", "POST"], authenticated=False),
        route(service, "sys/init", init, ["GET", "PUT", "POST"], authenticated=False),
        route(service, "sys/health", health, ["GET", "HEAD"], authenticated=False),
        route(service, "sys/leader", leader, ["GET"], authenticated=False),
    ]
