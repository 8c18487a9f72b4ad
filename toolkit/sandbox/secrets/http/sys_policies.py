"""HTTP for ``sys/policies/{acl,rgp,egp}`` (spec section 4.2; restricted) and ``sys/policy``.

Thin over :mod:`..policies`. Answers use the envelope with the fields of
``data`` also at the top level, as the server does on ``sys/`` paths, so a
list answers both ``keys`` and ``data.keys``. The EGP list adds
``name_path_map``, and its ``keys`` show each name with its paths. Writes and deletes answer 204. The legacy ``sys/policy``
endpoints (ACL only; read answers ``rules``), which older clients and the
command line still call, are served too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from ..policies import KINDS
from ._base import SecretsRequest, envelope, no_content, route

if TYPE_CHECKING:
    from ..models import SecretsService
    from ..policies import Policy

__all__ = ["policy_document", "routes"]

Handler = Callable[[SecretsRequest], Awaitable[Response]]


def policy_document(policy: Policy) -> dict[str, Any]:
    """The read answer of ``GET /sys/policies/{kind}/:name``."""
    data: dict[str, Any] = {"name": policy.name, "policy": policy.text}
    if policy.kind in ("rgp", "egp"):
        data["enforcement_level"] = policy.enforcement_level
    if policy.kind == "egp":
        data["paths"] = list(policy.paths)
    return data


def _list(kind: str) -> Handler:
    async def handler(call: SecretsRequest) -> Response:
        """``LIST sys/policies/{kind}``: the names (EGP: with the paths they govern)."""
        store = call.service.policies
        data: dict[str, Any] = {"keys": store.names(kind)}
        if kind == "egp":
            # Spec 4.2: ``keys`` names each policy with its paths, for the command line;
            # ``name_path_map`` gives the same for programs.
            data["keys"] = store.egp_list_keys()
            data["name_path_map"] = store.egp_name_path_map()
        return envelope(data, top_level=True)

    return handler


def _read(kind: str) -> Handler:
    async def handler(call: SecretsRequest) -> Response:
        """``GET sys/policies/{kind}/:name``."""
        policy = call.service.policies.get(kind, call.params["name"])
        return envelope(policy_document(policy))

    return handler


def _write(kind: str) -> Handler:
    async def handler(call: SecretsRequest) -> Response:
        """``POST sys/policies/{kind}/:name``: create or replace, effective at once."""
        call.service.policies.put(
            kind,
            call.params["name"],
            call.body.get("policy"),
            enforcement_level=call.body.get("enforcement_level"),
            paths=call.body.get("paths"),
        )
        return no_content()

    return handler


def _delete(kind: str) -> Handler:
    async def handler(call: SecretsRequest) -> Response:
        """``DELETE sys/policies/{kind}/:name``: tokens holding it act as if it were empty."""
        call.service.policies.delete(kind, call.params["name"])
        return no_content()

    return handler


async def legacy_list(call: SecretsRequest) -> Response:
    """``GET sys/policy``: the ACL policy names as ``keys`` and ``policies``."""
    names = call.service.policies.names("acl")
    return envelope({"keys": names, "policies": names}, top_level=True)


async def legacy_read(call: SecretsRequest) -> Response:
    """``GET sys/policy/:name``: an ACL policy as ``name`` and ``rules``."""
    policy = call.service.policies.get("acl", call.params["name"])
    return envelope({"name": policy.name, "rules": policy.text}, top_level=True)


async def legacy_write(call: SecretsRequest) -> Response:
    """``PUT sys/policy/:name``: the document in ``policy`` (or the older ``rules``)."""
    document = call.body.get("policy", call.body.get("rules"))
    call.service.policies.put("acl", call.params["name"], document)
    return no_content()


def routes(service: SecretsService) -> list[Route]:
    """The access-policy routes, every one restricted to the root namespace."""
    table: list[Route] = []
    for kind in KINDS:
        base = f"sys/policies/{kind}"
        table += [
            route(service, base, _list(kind), ["LIST"], restricted=True),
            route(service, base + "/{name}", _read(kind), ["GET"], restricted=True),
            route(service, base + "/{name}", _write(kind), ["POST", "PUT"], restricted=True),
            route(service, base + "/{name}", _delete(kind), ["DELETE"], restricted=True),
        ]
    table += [
        route(service, "sys/policy", legacy_list, ["GET"], capability="read", restricted=True),
        route(service, "sys/policy/{name}", legacy_read, ["GET"], restricted=True),
        route(service, "sys/policy/{name}", legacy_write, ["POST", "PUT"], restricted=True),
        route(service, "sys/policy/{name}", _delete("acl"), ["DELETE"], restricted=True),
    ]
    return table
