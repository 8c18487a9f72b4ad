"""HTTP helpers the credential engines (database, message broker) share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from .._credentials import Credentials, Requester
from ._base import SecretsRequest, envelope

if TYPE_CHECKING:
    from ..leases import Lease

__all__ = ["caller", "lease_fields", "secret_answer"]


def caller(call: SecretsRequest) -> Requester:
    """Who asks: the caller's token display name (for usernames) and id (for the lease)."""
    token = call.caller
    return Requester(token.display_name, token.id) if token else Requester()


def lease_fields(lease: Lease | None) -> dict[str, Any]:
    """The envelope's lease fields for ``lease`` (none: the envelope's defaults)."""
    if lease is None:
        return {}
    return {
        "lease_id": lease.lease_id,
        "renewable": lease.renewable,
        "lease_duration": lease.ttl_granted,
    }


def secret_answer(credentials: Credentials, lease: Lease) -> Response:
    """Generated credentials in the envelope, with their lease."""
    data = {"username": credentials.username, "password": credentials.password}
    return envelope(data, **lease_fields(lease))
