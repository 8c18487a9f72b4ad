"""Team access to workspaces (spec 000 section 4.3) and the permissions matrix."""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

import pandas as pd

from .._deprecation import keep_old_names
from .._errors import InputError
from .._frames import Col, Schema, build_frame
from .._http import segment
from .._records import Record
from .._spec.access import (
    ACCESS_LEVELS,
    CUSTOM_DEFAULTS,
    IMPLIED_PERMISSIONS,
    PERMISSION_ATTRIBUTES,
    PERMISSION_VALUES,
)
from ._base import Area
from ._jsonapi import flatten, iter_resources, read_lists
from .organizations import Organizations

# The permission tables are part of this module's public surface (the forms read them).
__all__ = [
    "ACCESS_LEVELS",
    "CUSTOM_DEFAULTS",
    "IMPLIED_PERMISSIONS",
    "PERMISSION_ATTRIBUTES",
    "PERMISSION_VALUES",
    "TEAM_ACCESS",
    "TeamAccess",
    "implied_permissions",
]

TEAM_ACCESS = Schema.of(
    "id",
    Col("workspace_id"),
    Col("team_id"),
    Col("access"),
    Col("runs"),
    Col("variables"),
    Col("state_versions"),
    Col("policy_mocks"),
    Col("workspace_locking", "bool"),
    Col("run_tasks", "bool"),
    index="id",
)
PERMISSIONS_LONG = Schema.of(
    Col("workspace_id"),
    Col("workspace_name"),
    Col("team_id"),
    Col("team_name"),
    Col("access"),
    Col("permission"),
    Col("value"),
    Col("implied", "bool"),
)

# Colours of the styled matrix, one per level; readable on light and dark themes.
LEVEL_COLOURS = {
    "read": "#4e79a7",
    "plan": "#59a14f",
    "write": "#f28e2b",
    "admin": "#e15759",
    "custom": "#b07aa1",
}


def implied_permissions(access: str) -> dict[str, Any]:
    """The permissions a non-custom level implies (custom: the custom defaults)."""
    if access not in ACCESS_LEVELS:
        raise InputError(f"access must be one of {ACCESS_LEVELS}, not {access!r}")
    return dict(IMPLIED_PERMISSIONS.get(access, CUSTOM_DEFAULTS))


class CustomPermissions(TypedDict, total=False):
    """The permissions only the ``custom`` level may set, as keyword arguments."""

    runs: str
    variables: str
    state_versions: str
    policy_mocks: str
    workspace_locking: bool
    run_tasks: bool


def _attributes(access: str | None, permissions: dict[str, Any]) -> dict[str, Any]:
    """Request attributes, checking the custom-only rule before anything is sent."""
    attrs: dict[str, Any] = {}
    if access is not None:
        if access not in ACCESS_LEVELS:
            raise InputError(f"access must be one of {ACCESS_LEVELS}, not {access!r}")
        attrs["access"] = access
    for name, value in permissions.items():
        api = name.replace("_", "-")
        if api not in PERMISSION_ATTRIBUTES:
            raise InputError(f"unknown team access permission {name!r}")
        if value is None:
            continue
        if access is not None and access != "custom":
            raise InputError(
                f"{name} can be set only with the 'custom' access level, not {access!r}"
            )
        if value not in PERMISSION_VALUES[api]:
            raise InputError(f"{name} must be one of {PERMISSION_VALUES[api]}, not {value!r}")
        attrs[api] = value
    return attrs


class TeamAccess(Area):
    """Which team has which access to which workspace."""

    # The permission tables, at hand from the client (``platform.team_access.ACCESS_LEVELS``).
    ACCESS_LEVELS = ACCESS_LEVELS
    IMPLIED_PERMISSIONS = IMPLIED_PERMISSIONS
    PERMISSION_ATTRIBUTES = PERMISSION_ATTRIBUTES
    PERMISSION_VALUES = PERMISSION_VALUES
    CUSTOM_DEFAULTS = CUSTOM_DEFAULTS

    def access_frame(self, workspace_id: str) -> pd.DataFrame:
        """Team access records of one workspace. ``GET /team-workspaces?filter[workspace][id]=``."""
        records = [
            flatten(r)
            for r in iter_resources(
                self._http, "/team-workspaces", {"filter[workspace][id]": workspace_id}
            )
        ]
        return build_frame(records, TEAM_ACCESS)

    def get(self, team_access_id: str) -> Record:
        """One record. ``GET /team-workspaces/:id``."""
        return self._record(self._get(f"/team-workspaces/{segment(team_access_id)}"), "team-access")

    def add(
        self,
        workspace_id: str,
        team_id: str,
        access: str,
        **permissions: Unpack[CustomPermissions],
    ) -> Record:
        """Give a team access to a workspace. ``POST /team-workspaces``.

        The permission arguments are for ``access="custom"`` only; the other
        levels imply theirs (:func:`implied_permissions`).
        """
        attrs = _attributes(access, dict(permissions))
        body = {
            "data": {
                "type": "team-workspaces",
                "attributes": attrs,
                "relationships": {
                    "workspace": {"data": {"type": "workspaces", "id": workspace_id}},
                    "team": {"data": {"type": "teams", "id": team_id}},
                },
            }
        }
        return self._record(self._send("POST", "/team-workspaces", body), "team-access")

    def update(
        self,
        team_access_id: str,
        *,
        access: str | None = None,
        **permissions: Unpack[CustomPermissions],
    ) -> Record:
        """Change a record's level or custom permissions. ``PATCH /team-workspaces/:id``."""
        attrs = _attributes(access, dict(permissions))
        body = {"data": {"type": "team-workspaces", "id": team_access_id, "attributes": attrs}}
        return self._record(
            self._send("PATCH", f"/team-workspaces/{segment(team_access_id)}", body), "team-access"
        )

    def remove(self, team_access_id: str) -> None:
        """Remove a team's access. ``DELETE /team-workspaces/:id``."""
        self._send("DELETE", f"/team-workspaces/{segment(team_access_id)}")

    # -- views ---------------------------------------------------------------------
    def organization_access(self, organization: str) -> pd.DataFrame:
        """Every team access record of every workspace of the organization, with names."""
        orgs = Organizations(self._http)
        workspaces = orgs.workspaces_frame(organization)
        teams = orgs.teams_frame(organization)
        listings = read_lists(
            self._http,
            [("/team-workspaces", {"filter[workspace][id]": w}) for w in workspaces.index],
        )
        records = build_frame(
            [flatten(r) for listing in listings for r in listing.data], TEAM_ACCESS
        )
        records = records.copy()
        records["workspace_name"] = records["workspace_id"].map(workspaces["name"]).astype("string")
        records["team_name"] = records["team_id"].map(teams["name"]).astype("string")
        return records

    def permissions_matrix(self, organization: str) -> pd.DataFrame:
        """Workspaces (rows) by teams (columns); a cell is the team's access level.

        Index and columns are names; a team with no access to a workspace has
        ``<NA>``. Workspaces without any team access still have a row.
        """
        orgs = Organizations(self._http)
        workspaces = orgs.workspaces_frame(organization)
        access = self.organization_access(organization)
        matrix = (
            access.pivot_table(
                index="workspace_name", columns="team_name", values="access", aggfunc="first"
            )
            if len(access)
            else pd.DataFrame()
        )
        names = sorted(workspaces["name"].dropna())
        matrix = matrix.reindex(index=names).astype("string")
        matrix.index.name = "workspace"
        matrix.columns.name = "team"
        return matrix.reindex(columns=sorted(matrix.columns))

    def permissions_long(self, organization: str) -> pd.DataFrame:
        """One row per record and permission, implied permissions included.

        ``implied`` is true where the value comes from the access level rather
        than being set on a custom record.
        """
        access = self.organization_access(organization)
        rows = []
        for _, rec in access.iterrows():
            level = rec["access"]
            implied = level != "custom"
            for api in PERMISSION_ATTRIBUTES:
                col = api.replace("-", "_")
                value = rec[col]
                if implied:
                    value = IMPLIED_PERMISSIONS[level][api]
                rows.append(
                    {
                        "workspace_id": rec["workspace_id"],
                        "workspace_name": rec["workspace_name"],
                        "team_id": rec["team_id"],
                        "team_name": rec["team_name"],
                        "access": level,
                        "permission": col,
                        "value": str(value).lower() if isinstance(value, bool) else value,
                        "implied": implied,
                    }
                )
        return build_frame(rows, PERMISSIONS_LONG)

    def permissions_matrix_styled(self, organization: str) -> Any:
        """The matrix as a colour-coded table for Jupyter (a pandas Styler)."""
        return style_matrix(self.permissions_matrix(organization))


def style_matrix(matrix: pd.DataFrame) -> Any:
    """Colour each cell of a permissions matrix by its access level."""

    def colour(value: Any) -> str:
        if isinstance(value, str) and value in LEVEL_COLOURS:
            return f"background-color: {LEVEL_COLOURS[value]}; color: white; font-weight: bold"
        return ""

    return matrix.style.map(colour).format(na_rep="·")


# The names before the naming rule (docs/decisions.md, "Names"), for one release.
keep_old_names(TeamAccess, list="access_frame")
