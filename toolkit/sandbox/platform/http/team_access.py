"""Team access to workspaces (spec 4.3): ``/team-workspaces`` list, show, create, update, delete.

Their state is :mod:`..team_access`; these are their endpoints and documents.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from ...._spec.team_access import ACCESS_LEVELS, PERMISSION_ATTRIBUTES
from ..team_access import PermissionSettings
from ._base import (
    BASE,
    PlatformRequest,
    RouteRow,
    answer,
    attribute_pointer,
    attributes,
    listing,
    no_content,
    primary_data,
    ref,
    reference,
    string_attribute,
)
from ._errors import ErrorDocument, invalid

if TYPE_CHECKING:
    from ..team_access import TeamWorkspace

__all__ = ["ROUTES", "team_access_resource"]


def team_access_resource(record: TeamWorkspace) -> dict[str, Any]:
    return {
        "id": record.id,
        "type": "team-workspaces",
        "attributes": {"access": record.access, **record.permissions},
        "relationships": {
            "team": {
                "data": ref("teams", record.team_id),
                "links": {"related": f"{BASE}/teams/{record.team_id}"},
            },
            "workspace": {
                "data": ref("workspaces", record.workspace_id),
                "links": {"related": f"{BASE}/workspaces/{record.workspace_id}"},
            },
        },
        "links": {"self": f"{BASE}/team-workspaces/{record.id}"},
    }


_ACCESS_MESSAGE = "access {value!r} is not one of " + ", ".join(ACCESS_LEVELS)


def _access_fields(attrs: Mapping[str, Any]) -> tuple[str | None, PermissionSettings]:
    """The typed access level and custom permissions of a team-workspaces document.

    The permission values go to the state unchecked: whether a level may set
    them at all comes first there (spec part 2, rule 1). A null is not sent.
    """
    access = string_attribute(attrs, "access", _ACCESS_MESSAGE)
    given = {
        name.replace("-", "_"): attrs[name]
        for name in PERMISSION_ATTRIBUTES
        if attrs.get(name) is not None
    }
    return access, PermissionSettings(**given)


async def list_team_access(call: PlatformRequest) -> Response:
    """``GET /team-workspaces?filter[workspace][id]=``: unpaginated unless asked."""
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


async def show_team_access(call: PlatformRequest) -> Response:
    """``GET /team-workspaces/:id``."""
    record = call.service.access_store.get(call.caller, call.params["id"])
    return answer({"data": team_access_resource(record)})


async def create_team_access(call: PlatformRequest) -> Response:
    """``POST /team-workspaces``: 200, as the spec shows."""
    data = primary_data(call.body, "team-workspaces")
    attrs = attributes(data)
    workspace_id = reference(data, "workspace", "workspaces")
    team_id = reference(data, "team", "teams")
    access, permissions = _access_fields(attrs)
    if access is None:
        raise invalid(
            f"access is required; one of {', '.join(ACCESS_LEVELS)}",
            attribute_pointer("access"),
        )
    record = call.service.access_store.create(
        call.caller, workspace_id, team_id, access, permissions
    )
    return answer({"data": team_access_resource(record)})


async def update_team_access(call: PlatformRequest) -> Response:
    """``PATCH /team-workspaces/:id``: 200."""
    call.service.access_store.get(call.caller, call.params["id"], manage=True)  # 404 before 422
    data = primary_data(call.body, "team-workspaces")
    access, permissions = _access_fields(attributes(data))
    record = call.service.access_store.update(call.caller, call.params["id"], access, permissions)
    return answer({"data": team_access_resource(record)})


async def delete_team_access(call: PlatformRequest) -> Response:
    """``DELETE /team-workspaces/:id``: 204."""
    call.service.access_store.delete(call.caller, call.params["id"])
    return no_content()


ROUTES: list[RouteRow] = [
    ("GET", "/team-workspaces", list_team_access),
    ("POST", "/team-workspaces", create_team_access),
    ("GET", "/team-workspaces/{id}", show_team_access),
    ("PATCH", "/team-workspaces/{id}", update_team_access),
    ("DELETE", "/team-workspaces/{id}", delete_team_access),
]
