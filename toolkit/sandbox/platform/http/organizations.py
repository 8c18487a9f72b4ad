"""Organizations, workspaces, teams and policy sets: read-only records (spec 000, part 3).

Their state is :mod:`..organizations`; these are their endpoints and documents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...._time import format_iso_ms
from ..organizations import OrganizationStore
from ._base import (
    BASE,
    Handler,
    PlatformRequest,
    Routes,
    answer,
    listing,
    owned_resource,
    related,
    resource,
)

if TYPE_CHECKING:
    from starlette.responses import Response

    from ..organizations import Caller, Organization, PolicySet, Team, Workspace

# How a kind of record is written as a resource document.
Render = Callable[[Any], dict[str, Any]]

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
    return resource("organizations", org.name, attributes)


def workspace_resource(ws: Workspace) -> dict[str, Any]:
    pool = related("agent-pools", ws.agent_pool_id) if ws.agent_pool_id else {"data": None}
    attributes = {
        "name": ws.name,
        "created-at": format_iso_ms(ws.created_at),
        "execution-mode": "agent" if ws.agent_pool_id else "remote",
    }
    return owned_resource("workspaces", ws.id, ws.organization, attributes, {"agent-pool": pool})


def team_resource(team: Team) -> dict[str, Any]:
    attributes = {
        "name": team.name,
        "visibility": team.visibility,
        "users-count": len(team.members),
        "organization-access": team.organization_permissions(),
    }
    return owned_resource("teams", team.id, team.organization, attributes)


def policy_set_resource(ps: PolicySet) -> dict[str, Any]:
    attributes = {
        "name": ps.name,
        "description": ps.description,
        "kind": ps.kind,
        "created-at": format_iso_ms(ps.created_at),
    }
    parameters = {"links": {"related": f"{BASE}/policy-sets/{ps.id}/parameters"}}
    return owned_resource(
        "policy-sets", ps.id, ps.organization, attributes, {"parameters": parameters}
    )


# -- handlers --------------------------------------------------------------------------

ROUTES = Routes()


def _organization_renderer(call: PlatformRequest) -> Render:
    """An organization's document with its ``permissions`` for this caller."""

    def render(org: Any) -> dict[str, Any]:
        owner = call.service.org_store.role(call.caller, org.name) == "owner"
        return organization_resource(org, owner=owner)

    return render


@ROUTES.handles("GET", "/organizations")
async def list_organizations(call: PlatformRequest) -> Response:
    found = call.service.org_store.list_organizations(call.caller)
    return listing(call, found, _organization_renderer(call))


@ROUTES.handles("GET", "/organizations/{name}")
async def show_organization(call: PlatformRequest) -> dict[str, Any]:
    org = call.service.org_store.visible(call.caller, call.params["name"])
    return {"data": _organization_renderer(call)(org)}


@ROUTES.handles("GET", "/organizations/{name}/workspaces")
async def list_workspaces(call: PlatformRequest) -> Response:
    """With ``search[name]``."""
    found = call.service.org_store.list_workspaces(
        call.caller, call.params["name"], call.query.get("search[name]")
    )
    return listing(call, found, workspace_resource)


def _shown(read: Callable[[OrganizationStore, Caller, str], Any], render: Render) -> Handler:
    """``GET /<records>/:id``: the record ``read`` finds for the caller, as ``render`` writes it."""

    async def show(call: PlatformRequest) -> Response:
        found = read(call.service.org_store, call.caller, call.params["id"])
        return answer({"data": render(found)})

    return show


def _listed(read: Callable[[OrganizationStore, Caller, str], Any], render: Render) -> Handler:
    """``GET /organizations/:name/<records>``: the organization's records ``read`` lets the
    caller see, as ``render`` writes each."""

    async def list_records(call: PlatformRequest) -> Response:
        found = read(call.service.org_store, call.caller, call.params["name"])
        return listing(call, found, render)

    return list_records


ROUTES += [
    ("GET", "/organizations/{name}/teams", _listed(OrganizationStore.list_teams, team_resource)),
    (
        "GET",
        "/organizations/{name}/policy-sets",
        _listed(OrganizationStore.list_policy_sets, policy_set_resource),
    ),
    ("GET", "/workspaces/{id}", _shown(OrganizationStore.workspace, workspace_resource)),
    ("GET", "/teams/{id}", _shown(OrganizationStore.team, team_resource)),
    ("GET", "/policy-sets/{id}", _shown(OrganizationStore.policy_set, policy_set_resource)),
]
