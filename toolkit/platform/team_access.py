"""Team access to workspaces (spec 000 section 4.3) and the permissions matrix."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict, Unpack

import pandas as pd

from .._coverage import Coverage, carry, coverage_of
from .._errors import InputError
from .._frames import Schema, build_frame
from .._http import api_path
from .._records import Record
from .._spec.team_access import (
    ACCESS_LEVELS,
    CUSTOM_DEFAULTS,
    IMPLIED_PERMISSIONS,
    PERMISSION_ATTRIBUTES,
    PERMISSION_VALUES,
)
from ._base import PlatformArea
from ._jsonapi import flatten, iter_resources, read_lists
from .organizations import Organizations
from .team_access_rules import (
    EFFECTIVE_ACCESS,
    GRANTS,
    LEVEL_COLOURS,
    effective_access,
    effective_access_findings,
    effective_access_matrix,
    effective_level,
    grant_row,
    grants_matrix,
    implied_permissions,
    is_owners,
    organization_grant,
    security_level,
    style_matrix,
    team_access_findings,
)

# The permission tables are part of this module's public surface (the forms read them).
__all__ = [
    "ACCESS_LEVELS",
    "CUSTOM_DEFAULTS",
    "EFFECTIVE_ACCESS",
    "GRANTS",
    "IMPLIED_PERMISSIONS",
    "LEVEL_COLOURS",
    "PERMISSION_ATTRIBUTES",
    "PERMISSION_VALUES",
    "TEAM_ACCESS",
    "TeamAccess",
    "effective_access",
    "effective_access_findings",
    "effective_access_matrix",
    "effective_level",
    "implied_permissions",
    "security_level",
    "team_access_findings",
]

TEAM_ACCESS = Schema.of(
    """id workspace_id team_id access runs variables state_versions policy_mocks
    workspace_locking:bool run_tasks:bool""",
    index="id",
)
PERMISSIONS_LONG = Schema.of(
    "workspace_id workspace_name team_id team_name access permission value implied:bool",
)


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


class TeamAccess(PlatformArea):
    """Which team has which access to which workspace."""

    # The permission tables, at hand from the client (``platform.team_access.ACCESS_LEVELS``).
    ACCESS_LEVELS = ACCESS_LEVELS
    IMPLIED_PERMISSIONS = IMPLIED_PERMISSIONS
    PERMISSION_ATTRIBUTES = PERMISSION_ATTRIBUTES
    PERMISSION_VALUES = PERMISSION_VALUES
    CUSTOM_DEFAULTS = CUSTOM_DEFAULTS

    def access_frame(self, workspace_id: str) -> pd.DataFrame:
        """Team access records of one workspace. ``GET /team-workspaces?filter[workspace][id]=``.

        A member's token sees only its own teams' records: ``attrs["coverage"]`` then
        has a gap (the workspace's organization is read to tell, ``GET /workspaces/:id``).
        That read comes first: a missing workspace raises naming it (the list's 404 is
        on ``/team-workspaces``, whose path names no workspace)."""
        orgs = Organizations(self._http)
        organization = str(orgs.workspace(workspace_id).get("organization_id") or "")
        records = [
            flatten(r)
            for r in iter_resources(
                self._http, "/team-workspaces", {"filter[workspace][id]": workspace_id}
            )
        ]
        where = f"team-workspaces?filter[workspace][id]={workspace_id}"
        cov = Coverage("team_access.access_frame", asked=[where])
        cov.note_read(len(records))
        if organization and not orgs.sees_all(organization):
            cov.note_gap(
                where,
                None,
                "team access of teams this token is not in is not visible to it (a member "
                "sees its own teams' grants; an owner's token sees all)",
            )
        return cov.attach(build_frame(records, TEAM_ACCESS))

    def read(self, team_access_id: str) -> Record:
        """One record. ``GET /team-workspaces/:id``."""
        return self._record(
            self._get(api_path("/team-workspaces/{team_access_id}", team_access_id=team_access_id)),
            "team-access",
        )

    def create(
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
            self._send(
                "PATCH",
                api_path("/team-workspaces/{team_access_id}", team_access_id=team_access_id),
                body,
            ),
            "team-access",
        )

    def delete(self, team_access_id: str) -> None:
        """Remove a team's access. ``DELETE /team-workspaces/:id``."""
        self._send(
            "DELETE", api_path("/team-workspaces/{team_access_id}", team_access_id=team_access_id)
        )

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
        cov = Coverage("team_access.organization_access", asked=[f"organizations/{organization}"])
        cov.note_read(len(records))
        if not self._standing([organization], cov)[organization]:
            # A member's token sees its own teams' records only (spec part 2, rule 4; a
            # record it may not see answers 404, as a missing one): never the whole.
            cov.note_gap(
                f"organizations/{organization}/team-workspaces",
                None,
                "team access of teams this token is not in is not visible to it (a member "
                "sees its own teams' grants; an owner's token sees all)",
            )
        return cov.attach(records)

    def permissions_matrix(
        self,
        organization: str,
        *,
        teams: str | Iterable[str] | None = None,
        workspaces: str | Iterable[str] | None = None,
        min_level: str | None = None,
        organization_level: bool = False,
    ) -> pd.DataFrame:
        """Workspaces (rows) by teams (columns); a cell is the team's access level.

        Index and columns are names; a team with no access to a workspace has
        ``<NA>``. Workspaces without any team access still have a row.

        For large organizations: ``teams`` and ``workspaces`` keep the names
        matching one of the given shell patterns (``"web-*"``, or a list of
        names); ``min_level`` (one of ``read``, ``plan``, ``write``, ``admin``)
        keeps the cells at least that powerful for security, with ``plan``
        counted as ``write`` (:func:`security_level`) and a custom record
        placed by :func:`effective_level`, then drops rows and columns left
        empty. ``organization_level`` adds the owners team and the teams whose
        organization-level permissions reach every workspace (see
        :meth:`grants_frame`); a cell then shows the higher grant.
        """
        if not (teams or workspaces or min_level or organization_level):
            return self._matrix_of_records(organization)
        grants, _, every = self._grants_and_teams([organization])
        if not organization_level:
            grants = grants[grants["source"] == "workspace"]
        matrix = grants_matrix(grants, teams, workspaces, min_level, [n for _, n in every])
        return carry(matrix, grants, view="team_access.permissions_matrix")

    def _matrix_of_records(self, organization: str) -> pd.DataFrame:
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
        matrix = matrix.reindex(columns=sorted(matrix.columns))
        return carry(matrix, access, view="team_access.permissions_matrix")

    # -- across organizations --------------------------------------------------------
    def grants_frame(self, organizations: str | Sequence[str] | None = None) -> pd.DataFrame:
        """Every grant of workspace access in each organization, one row each (:data:`GRANTS`).

        ``organizations``: a name, several, or None for every organization the
        token can see (``GET /organizations``). Three kinds of grant, named in
        ``source``:

        - ``workspace``: a team-workspace record (``GET /team-workspaces``);
        - ``owners``: the owners team, admin on every workspace;
        - ``organization``: a team whose organization-level permissions
          (``organization-access`` of ``GET /organizations/:name/teams``) reach
          every workspace: ``manage-workspaces`` admin, ``read-workspaces`` read.

        ``level`` is what the grant amounts to (:func:`effective_level`);
        ``runs`` .. ``run_tasks`` are the permissions it implies or sets.
        Pages are read in waves: the workspaces and teams of all organizations
        together, then the records of all their workspaces together. Teams the
        token cannot see appear by id with no name.
        """
        return self._grants_and_teams(organizations)[0]

    def _standing(self, names: Sequence[str], cov: Coverage) -> dict[str, bool]:
        """Whether the token sees all of each organization's team access: an owner's
        (the organization's ``permissions.can-update``) does, a member's sees only its
        own teams' (spec part 2, rule 4). A missing organization raises naming it."""
        # A missing organization raises NotFound naming it (PlatformClient.explain).
        orgs = Organizations(self._http)
        return {org: orgs.sees_all(org) for org in names}

    def _grants_and_teams(
        self, organizations: str | Sequence[str] | None
    ) -> tuple[pd.DataFrame, builtins.list[dict[str, Any]], builtins.list[tuple[str, str]]]:
        """The :data:`GRANTS` frame, the teams read for it (flat, with ``organization``),
        and every (organization, workspace name), granted or not."""
        names = self._organization_names(organizations)
        cov = Coverage("team_access.grants", asked=[f"organizations/{n}" for n in names])
        owner = self._standing(names, cov)
        listings = read_lists(
            self._http,
            [
                (
                    api_path("/organizations/{organization}/{kind}", organization=org, kind=kind),
                    None,
                )
                for org in names
                for kind in ("workspaces", "teams")
            ],
        )
        workspaces: dict[str, tuple[str, str]] = {}  # id -> (organization, name)
        teams: dict[str, dict[str, Any]] = {}
        by_org: dict[str, builtins.list[str]] = {org: [] for org in names}
        for k, org in enumerate(names):
            for ws in listings[2 * k].data:
                flat = flatten(ws)
                workspaces[str(flat["id"])] = (org, str(flat.get("name")))
                by_org[org].append(str(flat["id"]))
            for team in listings[2 * k + 1].data:
                flat = flatten(team)
                flat["organization"] = org
                teams[str(flat["id"])] = flat
        ws_ids = list(workspaces)
        records = read_lists(
            self._http, [("/team-workspaces", {"filter[workspace][id]": w}) for w in ws_ids]
        )
        rows: list[dict[str, Any]] = []
        for ws_id, listing in zip(ws_ids, records, strict=True):
            for resource in listing.data:
                record = flatten(resource)
                access = str(record.get("access"))
                perms = (
                    {a: record.get(a.replace("-", "_")) for a in PERMISSION_ATTRIBUTES}
                    if access == "custom"
                    else IMPLIED_PERMISSIONS.get(access, {})
                )
                team = teams.get(str(record.get("team_id")), {})
                rows.append(
                    grant_row(
                        workspaces, ws_id, record.get("team_id"), team, "workspace", access, perms
                    )
                    | {"record_id": record.get("id")}
                )
        for team_id, team in teams.items():
            level = organization_grant(team)
            if level is None:
                continue
            source = "owners" if is_owners(team) else "organization"
            for ws_id in by_org[team["organization"]]:
                rows.append(
                    grant_row(
                        workspaces, ws_id, team_id, team, source, level, IMPLIED_PERMISSIONS[level]
                    )
                )
        granted = {str(r["team_id"]) for r in rows}
        for org in names:
            if owner[org]:
                continue
            listed = [t for t, team in teams.items() if team["organization"] == org]
            unseen = [t for t in listed if t not in granted]
            # Even when every listed team shows a grant, a member's token cannot see
            # the secret teams (nor their grants): its view is never whole.
            which = f"{len(unseen)} of {len(listed)} teams" if unseen else "secret teams"
            cov.note_gap(
                f"organizations/{org}/team-workspaces",
                None,
                f"team access of {which} not visible to this token (a member sees its own "
                "teams' grants; an owner's token sees all)",
            )
        cov.note_read(len(rows))
        frame = cov.attach(build_frame(rows, GRANTS))
        return frame, list(teams.values()), list(workspaces.values())

    def effective_access(
        self, organizations: str | Sequence[str] | None = None, *, users: bool = True
    ) -> pd.DataFrame:
        """Who may do what on every workspace: each team's (and each user's) effective
        access, the higher of its organization-level and team-access grants, with the
        grant that decides (:func:`~.team_access_rules.effective_access`).

        One organization, several, or every one the token can see, through
        ``organizations.across`` as the house's other views over several organizations:
        ``organization`` first, ``problem`` last (an organization that refuses or does
        not exist is one row saying so, and the others go on). Users come from the
        teams' ``users`` relationship; where no team lists its users, the user rows
        are missing and ``attrs["coverage"]`` says so rather than showing nobody, as it
        says which teams' grants the token could not see (a member's token).
        """
        return Organizations(self._http).across(
            lambda organization: self._effective_access_of(organization, users), organizations
        )

    def _effective_access_of(self, organization: str, users: bool) -> pd.DataFrame:
        grants, teams, _ = self._grants_and_teams(organization)
        members = {str(t["id"]): [str(u) for u in t["user_ids"]] for t in teams if "user_ids" in t}
        frame = effective_access(grants, members if users else None)
        cov = Coverage("team_access.effective_access", read=len(grants))
        for inner in coverage_of(grants):  # grants the token could not see
            cov.gaps.extend(inner.gaps)
        if users and any("user_ids" not in t for t in teams):
            cov.note_gap(
                f"organizations/{organization}/teams",
                None,
                "the teams name no users relationship: access by user unknown",
            )
        return cov.attach(frame.drop(columns="organization"))

    def effective_access_matrix(
        self, organizations: str | Sequence[str] | None = None
    ) -> pd.DataFrame:
        """Workspaces (``(organization, workspace)``) by teams, each cell the effective level
        (:meth:`effective_access`, the higher grant winning); an organization that could
        not be read has no rows, and the matrix's ``attrs["coverage"]`` names it."""
        effective = self.effective_access(organizations, users=False)
        read = effective[effective["problem"].isna()] if "problem" in effective else effective
        matrix = effective_access_matrix(read.drop(columns="problem", errors="ignore"))
        return carry(matrix, effective, view="team_access.effective_access_matrix")

    def findings(
        self,
        organizations: str | Sequence[str] | None = None,
        *,
        large_team: int = 10,
        admin_workspaces: int = 5,
        max_owners: int = 5,
    ) -> pd.DataFrame:
        """What is wrong with team access in one, several or every visible organization:
        :func:`team_access_findings` of :meth:`grants_frame`."""
        grants, teams, _ = self._grants_and_teams(organizations)
        found = team_access_findings(
            grants,
            teams,
            large_team=large_team,
            admin_workspaces=admin_workspaces,
            max_owners=max_owners,
        )
        return carry(found, grants, view="team_access.findings")

    def _organization_names(self, organizations: str | Sequence[str] | None) -> builtins.list[str]:
        if organizations is None:
            return Organizations(self._http).list_organizations()
        names = [organizations] if isinstance(organizations, str) else list(organizations)
        if not all(isinstance(n, str) and n for n in names):
            raise InputError(f"organizations must be names, not {organizations!r}")
        return list(dict.fromkeys(names))

    def permissions_long(self, organization: str) -> pd.DataFrame:
        """One row per record and permission, implied permissions included.

        ``implied`` is true where the value comes from the access level rather
        than being set on a custom record.
        """
        access = self.organization_access(organization)
        rows = []
        for _, rec in access.iterrows():
            level = rec["access"] if isinstance(rec["access"], str) else None  # not pd.NA
            implied = level != "custom"
            for api in PERMISSION_ATTRIBUTES:
                col = api.replace("-", "_")
                value = rec[col]
                if implied:  # an access level this client does not know implies nothing known
                    value = IMPLIED_PERMISSIONS.get(level or "", {}).get(api)
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
        frame = build_frame(rows, PERMISSIONS_LONG)
        frame.attrs["coverage"] = access.attrs["coverage"]  # what the records could see
        return frame

    def permissions_matrix_styled(self, organization: str) -> Any:
        """The matrix as a colour-coded table for Jupyter (a pandas Styler)."""
        return style_matrix(self.permissions_matrix(organization))
