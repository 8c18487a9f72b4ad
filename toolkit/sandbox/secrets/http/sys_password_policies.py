"""HTTP for ``sys/policies/password`` (spec section 4.1; restricted).

Thin over :mod:`..password_policies`. A list answers ``data.keys`` (an empty
list when there are none); a read answers ``data.policy``; generate answers
``data.password``; a save or delete answers 204. A missing policy is 404
``policy does not exist``; one that cannot be met is 400 with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.responses import Response
from starlette.routing import Route

from ._base import SecretsRequest, envelope, error, no_content, route

if TYPE_CHECKING:
    from ..models import SecretsService

__all__ = ["routes"]

BASE = "sys/policies/password"


async def list_policies(call: SecretsRequest) -> Response:
    """``LIST sys/policies/password`` (or ``GET ?list=true``): ``data.keys``; with no
    policies, 404 as the real server answers an empty list."""
    names = call.service.password_policies.names()
    if not names:
        return error(404)
    return envelope({"keys": names}, top_level=True)


async def read(call: SecretsRequest) -> Response:
    """``GET sys/policies/password/:name``: ``data.policy``, the document as saved."""
    policy = call.service.password_policies.get(call.params["name"])
    return envelope({"policy": policy.text})


async def write(call: SecretsRequest) -> Response:
    """``POST sys/policies/password/:name``: save or replace once a trial generation succeeds."""
    call.service.password_policies.put(call.params["name"], call.body.get("policy"))
    return no_content()


async def delete(call: SecretsRequest) -> Response:
    """``DELETE sys/policies/password/:name``: removed whether or not an engine uses it."""
    call.service.password_policies.delete(call.params["name"])
    return no_content()


async def generate(call: SecretsRequest) -> Response:
    """``GET sys/policies/password/:name/generate``: ``data.password``."""
    password = call.service.password_policies.generate(call.params["name"])
    return envelope({"password": password})


def routes(service: SecretsService) -> list[Route]:
    """The password-policy routes, every one restricted to the root namespace."""
    return [
        route(service, BASE, list_policies, ["LIST"], restricted=True),
        route(service, BASE + "/{name}/generate", generate, ["GET"], restricted=True),
        route(service, BASE + "/{name}", read, ["GET"], restricted=True),
        route(service, BASE + "/{name}", write, ["POST", "PUT"], restricted=True),
        route(service, BASE + "/{name}", delete, ["DELETE"], restricted=True),
    ]
