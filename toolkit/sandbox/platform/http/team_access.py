"""Team access to workspaces (spec 4.3): ``/team-workspaces`` list, show, create, update, delete.

Their state is :mod:`..team_access`; these are their endpoints and documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...._spec.team_access import ACCESS_LEVELS, PERMISSION_ATTRIBUTES
from ..team_access import PermissionSettings
from ._base import (
    PlatformRequest,
    Routes,
    attributes,
    listing,
    primary_data,
    reference,
    related,
    required_string,
    resource,
    string_attribute,
)
from ._errors import ErrorDocument

if TYPE_CHECKING:
    from starlette.responses import Response

    from ..team_access import TeamWorkspace

__all__ = ["ROUTES", "team_access_resource"]

_ACCESS_MESSAGE = "access {value!r} is not one of " + ", ".join(ACCESS_LEVELS)
_ACCESS_REQUIRED = "access is required; one of " + ", ".join(ACCESS_LEVELS)


def team_access_resource(record: TeamWorkspace) -> dict[str, Any]:
    attrs = {"access": record.access, **record.permissions}
    relationships = {
        "team": related("teams", record.team_id),
        "workspace": related("workspaces", record.workspace_id),
    }
    return resource("team-workspaces", record.id, attrs, relationships)


def _permissions(attrs: Mapping[str, Any]) -> PermissionSettings:
    """The custom permissions of a team-workspaces document.

    The values go to the state unchecked: whether a level may set them at all
    comes first there (spec part 2, rule 1). A null is not sent.
    """
    given = {
        name.replace("-", "_"): attrs[name]
        for name in PERMISSION_ATTRIBUTES
        if attrs.get(name) is not None
    }
    return PermissionSettings(**given)


ROUTES = Routes()


@ROUTES.handles("GET", "/team-workspaces")
async def list_team_access(call: PlatformRequest) -> Response:
    """``?filter[workspace][id]=``: unpaginated unless asked."""
    workspace_id = call.query.get("filter[workspace][id]")
    if not workspace_id:
        raise ErrorDocument.one(
            422,
            "missing filter",
            "filter[workspace][id] is required",
            parameter="filter[workspace][id]",
        )
    found = call.service.access_store.list_records(call.caller, workspace_id)
    return listing(call, found, team_access_resource, always=False)


@ROUTES.handles("GET", "/team-workspaces/{id}", render=team_access_resource)
async def show_team_access(call: PlatformRequest) -> TeamWorkspace:
    return call.service.access_store.get(call.caller, call.params["id"])


@ROUTES.handles("POST", "/team-workspaces", render=team_access_resource)
async def create_team_access(call: PlatformRequest) -> TeamWorkspace:
    """200, as the spec shows."""
    data = primary_data(call.body, "team-workspaces")
    attrs = attributes(data)
    workspace_id = reference(data, "workspace", "workspaces")
    team_id = reference(data, "team", "teams")
    access = required_string(attrs, "access", _ACCESS_MESSAGE, missing=_ACCESS_REQUIRED)
    return call.service.access_store.create(
        call.caller, workspace_id, team_id, access, _permissions(attrs)
    )


@ROUTES.handles("PATCH", "/team-workspaces/{id}", render=team_access_resource)
async def update_team_access(call: PlatformRequest) -> TeamWorkspace:
    call.service.access_store.get(call.caller, call.params["id"], manage=True)  # 404 before 422
    attrs = attributes(primary_data(call.body, "team-workspaces"))
    access = string_attribute(attrs, "access", _ACCESS_MESSAGE)
    return call.service.access_store.update(
        call.caller, call.params["id"], access, _permissions(attrs)
    )


@ROUTES.handles("DELETE", "/team-workspaces/{id}")
async def delete_team_access(call: PlatformRequest) -> None:
    call.service.access_store.delete(call.caller, call.params["id"])
