"""HTTP helpers the credential engines (database, message broker) share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.responses import Response

from .._credentials import Requester
from ._base import SecretsRequest, envelope

if TYPE_CHECKING:
    from ..leases import Lease

__all__ = ["caller", "secret_answer"]


def caller(call: SecretsRequest) -> Requester:
    """Who asks: the caller's token display name (for usernames) and id (for the lease)."""
    token = call.caller
    return Requester(token.display_name, token.id) if token else Requester()


def secret_answer(data: dict[str, str], lease: Lease) -> Response:
    """Generated credentials in the envelope, with their lease."""
    return envelope(
        data, lease_id=lease.lease_id, renewable=lease.renewable, lease_duration=lease.ttl_granted
    )
