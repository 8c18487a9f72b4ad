"""Agent pools (spec 4.1): list with search, sort, filter and include; create, update, delete.

Their state is :mod:`..pools`; these are their endpoints and documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ...._time import format_iso_ms
from ..pools import POOL_SORTS, PoolQuery, PoolSettings, PoolSort
from ._base import (
    BASE,
    PlatformRequest,
    Routes,
    attributes,
    bool_attribute,
    listing,
    owned_resource,
    primary_data,
    ref,
    relationship_data,
    required_string,
    string_attribute,
)
from ._errors import bad_parameter, invalid
from .organizations import workspace_resource

if TYPE_CHECKING:
    from starlette.responses import Response

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


ROUTES = Routes()


@ROUTES.handles("GET", "/organizations/{name}/agent-pools")
async def list_pools(call: PlatformRequest) -> Response:
    """With q, sort, filter, include and pages."""
    sort = _sort(call)
    includes = _includes(call)
    query = PoolQuery(
        q=call.query.get("q"),
        sort=sort,
        allowed_workspace=call.query.get("filter[allowed_workspaces][name]"),
    )
    pools, total = call.service.pool_store.list_pools(call.caller, call.params["name"], query)
    return listing(
        call,
        pools,
        pool_resource,
        extra_meta={"status-counts": {"total": total, "matching": len(pools)}},
        included=(lambda page: _included_workspaces(call, page)) if includes else None,
    )


@ROUTES.handles("GET", "/agent-pools/{id}")
async def show_pool(call: PlatformRequest) -> dict[str, Any]:
    """With ``include=workspaces``."""
    includes = _includes(call)
    pool = call.service.pool_store.get(call.caller, call.params["id"])
    document: dict[str, Any] = {"data": pool_resource(pool)}
    if includes:
        document["included"] = _included_workspaces(call, [pool])
    return document


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


def _pool_fields(body: Any, *, create: bool) -> tuple[str | None, PoolSettings]:
    """The typed name (None: not sent; ``create`` requires it) and settings of an
    agent-pools document."""
    data = primary_data(body, "agent-pools")
    attrs = attributes(data)
    name_message = "name must be a string"
    if create:
        name: str | None = required_string(attrs, "name", name_message)
    else:
        name = string_attribute(attrs, "name", name_message)
    return name, PoolSettings(_organization_scoped(attrs), _allowed_workspace_ids(data))


@ROUTES.handles("POST", "/organizations/{name}/agent-pools", status=201, render=pool_resource)
async def create_pool(call: PlatformRequest) -> AgentPool:
    call.service.org_store.visible(call.caller, call.params["name"], owner=True)  # 404 before 422
    name, settings = _pool_fields(call.body, create=True)
    assert name is not None  # required on a create
    return call.service.pool_store.create(call.caller, call.params["name"], name, settings)


@ROUTES.handles("PATCH", "/agent-pools/{id}", render=pool_resource)
async def update_pool(call: PlatformRequest) -> AgentPool:
    call.service.pool_store.get(call.caller, call.params["id"], owner=True)  # 404 before 422
    name, settings = _pool_fields(call.body, create=False)
    return call.service.pool_store.update(call.caller, call.params["id"], name, settings)


@ROUTES.handles("DELETE", "/agent-pools/{id}")
async def delete_pool(call: PlatformRequest) -> None:
    call.service.agent_store.delete_pool(call.caller, call.params["id"])


@ROUTES.handles("GET", "/agent-pools/{id}/authentication-tokens")
async def list_pool_tokens(call: PlatformRequest) -> Response:
    """The sandbox models no agent tokens."""
    call.service.pool_store.get(call.caller, call.params["id"])
    return listing(call, [], lambda r: r)
