"""Organizations, workspaces, teams and policy sets: read-only records (spec 000, part 3).

Their state is :mod:`..organizations`; these are their endpoints and documents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from ...._time import format_iso_ms
from ._base import (
    BASE,
    PlatformRequest,
    RouteRow,
    answer,
    listing,
    organization_relationship,
    ref,
)

if TYPE_CHECKING:
    from ..organizations import Organization, PolicySet, Team, Workspace

__all__ = [
    "ROUTES",
    "organization_resource",
    "policy_set_resource",
    "team_resource",
    "workspace_resource",
]


# -- documents -------------------------------------------------------------------------


def organization_resource(org: Organization, owner: bool | None = None) -> dict[str, Any]:
    """An organization; with ``owner`` (the caller's standing), its ``permissions``
    as the service shows them to that caller (an owner may update it and manage
    its users and teams; a member may not)."""
    attributes: dict[str, Any] = {
        "name": org.name,
        "email": org.email,
        "created-at": format_iso_ms(org.created_at),
    }
    if owner is not None:
        attributes["permissions"] = {
            "can-update": owner,
            "can-destroy": owner,
            "can-manage-users": owner,
            "can-create-team": owner,
            "can-create-workspace": owner,
            "can-update-agent-pools": owner,
            "can-access-via-teams": True,
            "can-traverse": True,
        }
    return {
        "id": org.name,
        "type": "organizations",
        "attributes": attributes,
        "links": {"self": f"{BASE}/organizations/{org.name}"},
    }


def workspace_resource(ws: Workspace) -> dict[str, Any]:
    pool = (
        {
            "data": ref("agent-pools", ws.agent_pool_id),
            "links": {"related": f"{BASE}/agent-pools/{ws.agent_pool_id}"},
        }
        if ws.agent_pool_id
        else {"data": None}
    )
    return {
        "id": ws.id,
        "type": "workspaces",
        "attributes": {
            "name": ws.name,
            "created-at": format_iso_ms(ws.created_at),
            "execution-mode": "agent" if ws.agent_pool_id else "remote",
        },
        "relationships": {
            "organization": organization_relationship(ws.organization),
            "agent-pool": pool,
        },
        "links": {"self": f"{BASE}/workspaces/{ws.id}"},
    }


def team_resource(team: Team) -> dict[str, Any]:
    return {
        "id": team.id,
        "type": "teams",
        "attributes": {
            "name": team.name,
            "visibility": team.visibility,
            "users-count": len(team.members),
            "organization-access": team.organization_permissions(),
        },
        "relationships": {"organization": organization_relationship(team.organization)},
        "links": {"self": f"{BASE}/teams/{team.id}"},
    }


def policy_set_resource(ps: PolicySet) -> dict[str, Any]:
    return {
        "id": ps.id,
        "type": "policy-sets",
        "attributes": {
            "name": ps.name,
            "description": ps.description,
            "kind": ps.kind,
            "created-at": format_iso_ms(ps.created_at),
        },
        "relationships": {
            "organization": organization_relationship(ps.organization),
            "parameters": {"links": {"related": f"{BASE}/policy-sets/{ps.id}/parameters"}},
        },
        "links": {"self": f"{BASE}/policy-sets/{ps.id}"},
    }


# -- handlers --------------------------------------------------------------------------


def _organization_renderer(call: PlatformRequest) -> Callable[[Any], dict[str, Any]]:
    """An organization's document with its ``permissions`` for this caller."""

    def render(org: Any) -> dict[str, Any]:
        owner = call.service.org_store.role(call.caller, org.name) == "owner"
        return organization_resource(org, owner=owner)

    return render


async def list_organizations(call: PlatformRequest) -> Response:
    """``GET /organizations``."""
    found = call.service.org_store.list_organizations(call.caller)
    return listing(call, found, _organization_renderer(call))


async def show_organization(call: PlatformRequest) -> Response:
    """``GET /organizations/:name``."""
    org = call.service.org_store.visible(call.caller, call.params["name"])
    return answer({"data": _organization_renderer(call)(org)})


async def list_workspaces(call: PlatformRequest) -> Response:
    """``GET /organizations/:name/workspaces`` with ``search[name]``."""
    found = call.service.org_store.list_workspaces(
        call.caller, call.params["name"], call.query.get("search[name]")
    )
    return listing(call, found, workspace_resource)


async def show_workspace(call: PlatformRequest) -> Response:
    """``GET /workspaces/:id``."""
    ws = call.service.org_store.workspace(call.caller, call.params["id"])
    return answer({"data": workspace_resource(ws)})


async def list_teams(call: PlatformRequest) -> Response:
    """``GET /organizations/:name/teams``."""
    found = call.service.org_store.list_teams(call.caller, call.params["name"])
    return listing(call, found, team_resource)


async def show_team(call: PlatformRequest) -> Response:
    """``GET /teams/:id``."""
    team = call.service.org_store.team(call.caller, call.params["id"])
    return answer({"data": team_resource(team)})


async def list_policy_sets(call: PlatformRequest) -> Response:
    """``GET /organizations/:name/policy-sets``."""
    found = call.service.org_store.list_policy_sets(call.caller, call.params["name"])
    return listing(call, found, policy_set_resource)


async def show_policy_set(call: PlatformRequest) -> Response:
    """``GET /policy-sets/:id``."""
    ps = call.service.org_store.policy_set(call.caller, call.params["id"])
    return answer({"data": policy_set_resource(ps)})


ROUTES: list[RouteRow] = [
    ("GET", "/organizations", list_organizations),
    ("GET", "/organizations/{name}", show_organization),
    ("GET", "/organizations/{name}/workspaces", list_workspaces),
    ("GET", "/organizations/{name}/teams", list_teams),
    ("GET", "/organizations/{name}/policy-sets", list_policy_sets),
    ("GET", "/workspaces/{id}", show_workspace),
    ("GET", "/teams/{id}", show_team),
    ("GET", "/policy-sets/{id}", show_policy_set),
]
