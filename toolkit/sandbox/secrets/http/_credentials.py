"""HTTP helpers the credential engines (database, message broker) share."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from starlette.responses import Response

from .._credentials import Credentials, Requester
from ._base import Handler, SecretsRequest, envelope

if TYPE_CHECKING:
    from ..leases import Lease

__all__ = ["caller", "creds_handler", "lease_fields", "secret_answer"]


class CredentialIssuer(Protocol):
    def issue_creds(self, name: str, requester: Requester) -> tuple[Credentials, Lease]: ...


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


def creds_handler(engine_of: Callable[[SecretsRequest], CredentialIssuer]) -> Handler:
    """The ``GET creds/:name`` handler of a credential engine (``engine_of`` gives the
    call's state): new credentials of the role for the caller, with their lease."""

    async def issue_creds(call: SecretsRequest) -> Response:
        data, lease = engine_of(call).issue_creds(call.params["name"], caller(call))
        return secret_answer(data, lease)

    return issue_creds
