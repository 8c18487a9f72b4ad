"""Agent pools (spec 4.1): list with search, sort, filter and include; create, update, delete.

Their state is :mod:`..pools`; these are their endpoints and documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from starlette.responses import Response

from ...._time import format_iso_ms
from ..pools import POOL_SORTS, PoolSort
from ._base import (
    BASE,
    PlatformRequest,
    RouteRow,
    answer,
    attribute_pointer,
    attributes,
    bool_attribute,
    listing,
    no_content,
    owned_resource,
    primary_data,
    ref,
    relationship_data,
    string_attribute,
)
from ._errors import bad_parameter, invalid
from .organizations import workspace_resource

if TYPE_CHECKING:
    from ..pools import AgentPool

__all__ = ["ROUTES", "pool_resource"]

INCLUDES = ("workspaces",)


def pool_resource(pool: AgentPool) -> dict[str, Any]:
    path = f"{BASE}/agent-pools/{pool.id}"
    attributes = {
        "name": pool.name,
        "created-at": format_iso_ms(pool.created_at),
        "organization-scoped": pool.organization_scoped,
        "agent-count": len(pool.agents),
    }
    relationships = {
        "agents": {"links": {"related": f"{path}/agents"}},
        "authentication-tokens": {"links": {"related": f"{path}/authentication-tokens"}},
        "workspaces": {"data": [ref("workspaces", w) for w in pool.workspace_ids]},
        "allowed-workspaces": {"data": [ref("workspaces", w) for w in pool.allowed_workspace_ids]},
    }
    return owned_resource("agent-pools", pool.id, pool.organization, attributes, relationships)


def _includes(call: PlatformRequest) -> list[str]:
    raw = call.query.get("include")
    wanted = [part.strip() for part in (raw or "").split(",") if part.strip()]
    for part in wanted:
        if part not in INCLUDES:
            raise bad_parameter(
                "invalid include parameter",
                f"include {part!r} is not allowed; allowed: {', '.join(INCLUDES)}",
                "include",
            )
    return wanted


def _sort(call: PlatformRequest) -> PoolSort | None:
    raw = call.query.get("sort")
    if not raw:
        return None
    if raw not in POOL_SORTS:
        raise bad_parameter(
            "invalid sort parameter",
            f"sort {raw!r} is not one of {', '.join(POOL_SORTS)}",
            "sort",
        )
    return cast(PoolSort, raw)


def _included_workspaces(call: PlatformRequest, pools: Sequence[Any]) -> list[dict[str, Any]]:
    seen: dict[str, None] = {}
    for pool in pools:
        seen.update(pool.workspace_ids)
    return [workspace_resource(ws) for ws in call.service.org_store.workspaces_by_id(seen)]


async def list_pools(call: PlatformRequest) -> Response:
    """``GET /organizations/:name/agent-pools`` with q, sort, filter, include and pages."""
    sort = _sort(call)
    includes = _includes(call)
    pools, total = call.service.pool_store.list_pools(
        call.caller,
        call.params["name"],
        q=call.query.get("q"),
        sort=sort,
        allowed_workspace=call.query.get("filter[allowed_workspaces][name]"),
    )
    return listing(
        call,
        pools,
        pool_resource,
        extra_meta={"status-counts": {"total": total, "matching": len(pools)}},
        included=(lambda page: _included_workspaces(call, page)) if includes else None,
    )


async def show_pool(call: PlatformRequest) -> Response:
    """``GET /agent-pools/:id`` with ``include=workspaces``."""
    includes = _includes(call)
    pool = call.service.pool_store.get(call.caller, call.params["id"])
    document: dict[str, Any] = {"data": pool_resource(pool)}
    if includes:
        document["included"] = _included_workspaces(call, [pool])
    return answer(document)


_ALLOWED = "/data/relationships/allowed-workspaces/data"


def _allowed_workspace_ids(data: Mapping[str, Any]) -> list[str] | None:
    """The ids of ``relationships.allowed-workspaces.data``; None when absent."""
    entries = relationship_data(data, "allowed-workspaces")
    if entries is None:
        return None
    if not isinstance(entries, list):
        raise invalid("allowed-workspaces data must be an array", _ALLOWED)
    ids: list[str] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise invalid("each allowed workspace must be an object", f"{_ALLOWED}/{i}")
        if entry.get("type") != "workspaces":
            raise invalid(
                f"type {entry.get('type')!r} is not allowed here; use 'workspaces'",
                f"{_ALLOWED}/{i}/type",
            )
        ws_id = entry.get("id")
        if not isinstance(ws_id, str):
            raise invalid(f"workspace {ws_id!r} does not exist", f"{_ALLOWED}/{i}/id")
        ids.append(ws_id)
    return ids


def _organization_scoped(attrs: Mapping[str, Any]) -> bool:
    """``organization-scoped``: true when omitted or null, on create and update alike."""
    scoped = bool_attribute(attrs, "organization-scoped", "organization-scoped must be a boolean")
    return True if scoped is None else scoped


async def create_pool(call: PlatformRequest) -> Response:
    """``POST /organizations/:name/agent-pools``: 201."""
    call.service.org_store.visible(call.caller, call.params["name"], owner=True)  # 404 before 422
    data = primary_data(call.body, "agent-pools")
    attrs = attributes(data)
    if "name" not in attrs:
        raise invalid("name is required", attribute_pointer("name"))
    name = string_attribute(attrs, "name", "name must be a string")
    assert name is not None  # present, and a string
    pool = call.service.pool_store.create(
        call.caller,
        call.params["name"],
        name=name,
        organization_scoped=_organization_scoped(attrs),
        allowed_workspace_ids=_allowed_workspace_ids(data),
    )
    return answer({"data": pool_resource(pool)}, 201)


async def update_pool(call: PlatformRequest) -> Response:
    """``PATCH /agent-pools/:id``: 200."""
    call.service.pool_store.get(call.caller, call.params["id"], owner=True)  # 404 before 422
    data = primary_data(call.body, "agent-pools")
    attrs = attributes(data)
    pool = call.service.pool_store.update(
        call.caller,
        call.params["id"],
        name=string_attribute(attrs, "name", "name must be a string"),
        organization_scoped=_organization_scoped(attrs),
        allowed_workspace_ids=_allowed_workspace_ids(data),
    )
    return answer({"data": pool_resource(pool)})


async def delete_pool(call: PlatformRequest) -> Response:
    """``DELETE /agent-pools/:id``: 204."""
    call.service.agent_store.delete_pool(call.caller, call.params["id"])
    return no_content()


async def list_pool_tokens(call: PlatformRequest) -> Response:
    """``GET /agent-pools/:id/authentication-tokens``: the sandbox models no agent tokens."""
    call.service.pool_store.get(call.caller, call.params["id"])
    return listing(call, [], lambda r: r)


ROUTES: list[RouteRow] = [
    ("GET", "/organizations/{name}/agent-pools", list_pools),
    ("POST", "/organizations/{name}/agent-pools", create_pool),
    ("GET", "/agent-pools/{id}", show_pool),
    ("PATCH", "/agent-pools/{id}", update_pool),
    ("DELETE", "/agent-pools/{id}", delete_pool),
    ("GET", "/agent-pools/{id}/authentication-tokens", list_pool_tokens),
]
