"""HTTP for ``sys/wrapping/*``: wrap, lookup, unwrap and rewrap, thin over :mod:`..wrapping`.

The wrap time comes from the ``X-Vault-Wrap-TTL`` header (a duration); a wrap
without it is 400 ``endpoint requires response wrapping to be used``, as on
OpenBao. ``lookup`` takes no token of the caller's (it is unauthenticated on
OpenBao); ``unwrap`` takes the wrapping token in the body, from a caller allowed
there (OpenBao also takes the wrapping token itself as the caller's token; the
sandbox does not, see docs/differences.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from ...._time import format_rfc3339, parse_duration
from ..errors import InvalidRequest
from ._base import WRITE, SecretsRequest, envelope, route

if TYPE_CHECKING:
    from ..models import SecretsService
    from ..wrapping import Wrapped

__all__ = ["routes"]

WRAP_HEADER = "x-vault-wrap-ttl"


def _wrap_info(wrapped: Wrapped) -> dict[str, Any]:
    return {
        "token": wrapped.token,
        "accessor": wrapped.accessor,
        "ttl": wrapped.ttl,
        "creation_time": format_rfc3339(wrapped.creation_time),
        "creation_path": wrapped.creation_path,
    }


def _token_of(call: SecretsRequest) -> str:
    value = call.body.get("token")
    if not isinstance(value, str) or not value:
        raise InvalidRequest("missing token")
    return value


async def wrap(call: SecretsRequest) -> Response:
    """``POST sys/wrapping/wrap``: the body kept behind a new wrapping token."""
    raw = call.request.headers.get(WRAP_HEADER, "")
    try:
        ttl = parse_duration(raw, field="X-Vault-Wrap-TTL") if raw else 0
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None
    wrapped = call.service.wrapping.wrap(call.body, ttl, "sys/wrapping/wrap")
    return envelope(None, wrap_info=_wrap_info(wrapped))


async def lookup(call: SecretsRequest) -> Response:
    """``POST sys/wrapping/lookup``: when and where a wrapping token was made."""
    wrapped = call.service.wrapping.lookup(_token_of(call))
    return envelope(
        {
            "creation_path": wrapped.creation_path,
            "creation_time": format_rfc3339(wrapped.creation_time),
            "creation_ttl": wrapped.ttl,
        }
    )


async def unwrap(call: SecretsRequest) -> Response:
    """``POST sys/wrapping/unwrap``: the wrapped data, once."""
    return envelope(call.service.wrapping.unwrap(_token_of(call)))


async def rewrap(call: SecretsRequest) -> Response:
    """``POST sys/wrapping/rewrap``: the wrapped data behind a new token."""
    wrapped = call.service.wrapping.rewrap(_token_of(call))
    return envelope(None, wrap_info=_wrap_info(wrapped))


def routes(service: SecretsService) -> list[Route]:
    return [
        route(service, "sys/wrapping/wrap", wrap, WRITE),
        route(service, "sys/wrapping/lookup", lookup, WRITE, authenticated=False),
        route(service, "sys/wrapping/unwrap", unwrap, WRITE),
        route(service, "sys/wrapping/rewrap", rewrap, WRITE),
    ]
