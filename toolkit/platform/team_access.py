"""Team access to workspaces (spec 000 section 4.3) and the permissions matrix."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any, TypedDict, Unpack

import pandas as pd

from .._coverage import Coverage
from .._errors import InputError
from .._frames import Col, Schema, build_frame
from .._http import segment
from .._records import Record
from .._spec.access import (
    ACCESS_LEVELS,
    CUSTOM_DEFAULTS,
    IMPLIED_PERMISSIONS,
    LEVEL_ORDER,
    ORGANIZATION_WORKSPACE_LEVELS,
    PERMISSION_ATTRIBUTES,
    PERMISSION_VALUES,
)
from ..findings import Finding, findings_frame
from ._base import Area
from ._jsonapi import flatten, iter_resources, read_lists
from .organizations import Organizations

# The permission tables are part of this module's public surface (the forms read them).
__all__ = [
    "ACCESS_LEVELS",
    "CUSTOM_DEFAULTS",
    "GRANTS",
    "IMPLIED_PERMISSIONS",
    "PERMISSION_ATTRIBUTES",
    "PERMISSION_VALUES",
    "TEAM_ACCESS",
    "TeamAccess",
    "effective_level",
    "implied_permissions",
    "security_level",
    "team_access_findings",
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

# Every grant of workspace access, across organizations: team-workspace records, the
# owners team (admin everywhere) and organization-level permissions. A range index:
# only the records have an id (``record_id``).
GRANTS = Schema.of(
    Col("organization"),
    Col("workspace_id"),
    Col("workspace_name"),
    Col("team_id"),
    Col("team_name"),
    Col("team_visibility"),
    Col("team_size", "int"),
    Col("source"),
    Col("access"),
    Col("level"),
    Col("runs"),
    Col("variables"),
    Col("state_versions"),
    Col("policy_mocks"),
    Col("workspace_locking", "bool"),
    Col("run_tasks", "bool"),
    Col("record_id"),
)
# Where a grant comes from (the ``source`` column).
GRANT_SOURCES = ("workspace", "owners", "organization")

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


def effective_level(access: str, permissions: Mapping[str, Any] | None = None) -> str:
    """The non-custom level a grant amounts to (one of ``LEVEL_ORDER``).

    A non-custom level is itself. A custom record is ``write`` when it may apply
    runs, write variables or state, lock the workspace or manage run tasks;
    ``plan`` when it may plan runs; else ``read``. It is never ``admin``: only
    that level may manage the workspace's team access. ``permissions`` uses the
    API's or the frames' spelling (``state-versions`` or ``state_versions``).
    """
    if access != "custom":
        if access not in LEVEL_ORDER:
            raise InputError(f"access must be one of {ACCESS_LEVELS}, not {access!r}")
        return access
    perms = {k.replace("_", "-"): v for k, v in (permissions or {}).items()}
    if (
        perms.get("runs") == "apply"
        or perms.get("variables") == "write"
        or perms.get("state-versions") == "write"
        or perms.get("workspace-locking") is True
        or perms.get("run-tasks") is True
    ):
        return "write"
    return "plan" if perms.get("runs") == "plan" else "read"


def security_level(level: str) -> int:
    """How much a level (of ``LEVEL_ORDER``) may do, for a security review: 0 read,
    2 plan and write, 3 admin.

    ``plan`` ranks with ``write``: a plan runs the configuration's code on the
    workspace's agents or runners, with its variables (credentials among them)
    in reach, so whoever may plan may act as the workspace does.
    """
    if level not in LEVEL_ORDER:
        raise InputError(f"level must be one of {LEVEL_ORDER}, not {level!r}")
    return {"read": 0, "plan": 2, "write": 2, "admin": 3}[level]


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
        :meth:`grants_all_organizations_frame`); a cell then shows the higher grant.
        """
        if not (teams or workspaces or min_level or organization_level):
            return self._matrix_of_records(organization)
        grants, _, every = self._grants_and_teams([organization])
        if not organization_level:
            grants = grants[grants["source"] == "workspace"]
        matrix = _matrix(
            grants, ["workspace_name"], teams, workspaces, min_level, [(n,) for _, n in every]
        )
        matrix.index.name = "workspace"
        return matrix

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
        return matrix.reindex(columns=sorted(matrix.columns))

    # -- across organizations --------------------------------------------------------
    def grants_all_organizations_frame(
        self, organizations: str | Sequence[str] | None = None
    ) -> pd.DataFrame:
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
        owner: dict[str, bool] = {}
        for org in names:
            # A missing organization raises NotFound naming it (PlatformClient.explain).
            payload = self._http.json("GET", f"/organizations/{segment(org)}")
            flat = flatten((payload or {}).get("data") or {})
            permissions = flat.get("permissions")
            # A service that shows no permissions is taken at its word: all visible.
            owner[org] = not isinstance(permissions, Mapping) or bool(
                permissions.get("can-update", True)
            )
        return owner

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
                (f"/organizations/{segment(org)}/{kind}", None)
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
                    _grant(
                        workspaces, ws_id, record.get("team_id"), team, "workspace", access, perms
                    )
                    | {"record_id": record.get("id")}
                )
        for team_id, team in teams.items():
            level = _organization_grant(team)
            if level is None:
                continue
            source = "owners" if _is_owners(team) else "organization"
            for ws_id in by_org[team["organization"]]:
                rows.append(
                    _grant(
                        workspaces, ws_id, team_id, team, source, level, IMPLIED_PERMISSIONS[level]
                    )
                )
        granted = {str(r["team_id"]) for r in rows}
        for org in names:
            if owner[org]:
                continue
            listed = [t for t, team in teams.items() if team["organization"] == org]
            unseen = [t for t in listed if t not in granted]
            if unseen:
                cov.note_gap(
                    f"organizations/{org}/team-workspaces",
                    None,
                    f"team access of {len(unseen)} of {len(listed)} teams not visible to this "
                    "token (a member sees its own teams' grants; an owner's token sees all)",
                )
        cov.note_read(len(rows))
        frame = cov.attach(build_frame(rows, GRANTS))
        return frame, list(teams.values()), list(workspaces.values())

    def permissions_matrix_all_organizations_frame(
        self,
        organizations: str | Sequence[str] | None = None,
        *,
        teams: str | Iterable[str] | None = None,
        workspaces: str | Iterable[str] | None = None,
        min_level: str | None = None,
        organization_level: bool = True,
    ) -> pd.DataFrame:
        """The permissions matrix of several organizations (every one the token can see
        by default): rows indexed by (``organization``, ``workspace``), a column per
        team name, a cell the team's access level (the higher grant where several
        apply). ``.reset_index()`` makes ``organization`` a column.

        The owners team and organization-level grants are included unless
        ``organization_level=False``; ``teams``, ``workspaces`` and ``min_level``
        filter as in :meth:`permissions_matrix`. Workspaces without any grant
        keep a row unless ``min_level`` is given. Reads as
        :meth:`grants_all_organizations_frame`.
        """
        grants, _, every = self._grants_and_teams(organizations)
        if not organization_level:
            grants = grants[grants["source"] == "workspace"]
        return _matrix(
            grants, ["organization", "workspace_name"], teams, workspaces, min_level, every
        )

    def findings(
        self,
        organizations: str | Sequence[str] | None = None,
        *,
        large_team: int = 10,
        admin_workspaces: int = 5,
        max_owners: int = 5,
    ) -> pd.DataFrame:
        """What is wrong with team access in one, several or every visible organization:
        :func:`team_access_findings` of :meth:`grants_all_organizations_frame`."""
        grants, teams, _ = self._grants_and_teams(organizations)
        return team_access_findings(
            grants,
            teams,
            large_team=large_team,
            admin_workspaces=admin_workspaces,
            max_owners=max_owners,
        )

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


def _is_owners(team: Mapping[str, Any]) -> bool:
    # The owners team is the one named "owners": the service forbids renaming it.
    return team.get("name") == "owners"


def _granted(team: Mapping[str, Any]) -> list[str]:
    """The organization-level permissions a team holds, in the API's spelling."""
    access = team.get("organization_access")
    if not isinstance(access, Mapping):
        return []
    return [str(k) for k, v in access.items() if v is True]


def _organization_grant(team: Mapping[str, Any]) -> str | None:
    """The level a team holds on every workspace of its organization, or None."""
    if _is_owners(team):
        return "admin"
    held = set(_granted(team))
    for permission, level in sorted(
        ORGANIZATION_WORKSPACE_LEVELS.items(), key=lambda kv: -LEVEL_ORDER.index(kv[1])
    ):
        if permission in held:
            return level
    return None


def _grant(
    workspaces: Mapping[str, tuple[str, str]],
    ws_id: str,
    team_id: Any,
    team: Mapping[str, Any],
    source: str,
    access: str,
    perms: Mapping[str, Any],
) -> dict[str, Any]:
    organization, ws_name = workspaces[ws_id]
    return {
        "organization": organization,
        "workspace_id": ws_id,
        "workspace_name": ws_name,
        "team_id": team_id,
        "team_name": team.get("name"),
        "team_visibility": team.get("visibility"),
        "team_size": team.get("users_count"),
        "source": source,
        "access": access,
        "level": effective_level(access, perms) if access in ACCESS_LEVELS else None,
        **{a.replace("-", "_"): perms.get(a) for a in PERMISSION_ATTRIBUTES},
    }


def _matches(name: Any, patterns: str | Iterable[str] | None) -> bool:
    if patterns is None:
        return True
    wanted = [patterns] if isinstance(patterns, str) else list(patterns)
    return isinstance(name, str) and any(fnmatchcase(name, p) for p in wanted)


def _matrix(
    grants: pd.DataFrame,
    index: list[str],
    teams: str | Iterable[str] | None,
    workspaces: str | Iterable[str] | None,
    min_level: str | None,
    every: Sequence[tuple[Any, ...]],
) -> pd.DataFrame:
    """Rows ``index`` by team names; a cell is the highest grant's access (custom
    stays custom unless another grant is higher). Filters as ``permissions_matrix``;
    without ``min_level`` each key of ``every`` (as ``index``) whose workspace
    matches has a row, granted or not."""
    floor = security_level(min_level) if min_level is not None else None
    rows = grants[
        grants["team_name"].map(lambda n: _matches(n, teams)).astype(bool)
        & grants["workspace_name"].map(lambda n: _matches(n, workspaces)).astype(bool)
    ]
    if floor is not None:
        rows = rows[rows["level"].map(lambda lv: security_level(lv) >= floor).astype(bool)]
    cells: dict[tuple[Any, ...], dict[str, tuple[int, str]]] = {}
    for row in rows.to_dict("records"):
        key = tuple(row[c] for c in index)
        rank = LEVEL_ORDER.index(row["level"])
        current = cells.setdefault(key, {}).get(row["team_name"])
        if current is None or rank > current[0]:
            cells[key][row["team_name"]] = (rank, row["access"])
    keys = sorted(cells)
    if floor is None:
        matching = {tuple(k) for k in every if _matches(k[-1], workspaces)}
        keys = sorted(matching | set(keys))
    columns = sorted({t for c in cells.values() for t in c})
    data = {t: [cells.get(k, {}).get(t, (0, None))[1] for k in keys] for t in columns}
    labels = [k[0] for k in keys] if len(index) == 1 else keys
    idx = (
        pd.Index(labels, name=index[0])
        if len(index) == 1
        else pd.MultiIndex.from_tuples(keys, names=["organization", "workspace"])
        if keys
        else pd.MultiIndex.from_arrays([[], []], names=["organization", "workspace"])
    )
    matrix = pd.DataFrame(data, index=idx, columns=columns, dtype="string")
    matrix.columns.name = "team"
    return matrix


def team_access_findings(
    grants: pd.DataFrame,
    teams: Iterable[Mapping[str, Any]] = (),
    *,
    large_team: int = 10,
    admin_workspaces: int = 5,
    max_owners: int = 5,
) -> pd.DataFrame:
    """Findings (:mod:`toolkit.findings`, area ``team access``) of a :data:`GRANTS`
    frame and the teams (flat dicts with ``organization``, ``name``,
    ``users_count``, ``organization_access``).

    Objects are ``ORG/WORKSPACE: TEAM`` for a grant and ``ORG/teams/TEAM`` for a team.

    - **high**: a team other than owners holds ``manage-workspaces`` (admin on
      every workspace, present and future);
    - **high**: a write-equivalent grant (``plan``, ``write``, ``admin``, or a
      custom record that plans or writes) to a team of ``large_team`` members or more;
    - **medium**: the owners team has more than ``max_owners`` members;
    - **medium**: a team other than owners holds other organization-level
      permissions that manage something (policies, overrides, agent pools,
      teams, membership, secret teams);
    - **medium**: a team is admin of ``admin_workspaces`` workspaces or more
      through its records;
    - **medium**: a write-equivalent grant to a secret team (the organization's
      members cannot see who holds it);
    - **medium**: a custom record with ``runs: apply`` (write power under a
      ``custom`` label);
    - **low**: every ``plan`` grant (or custom ``runs: plan``): plan is
      write-equivalent (:func:`security_level`).
    """
    found: list[Finding] = []
    area = "team access"
    for team in teams:
        org, name = team.get("organization"), team.get("name")
        obj = f"{org}/teams/{name}"
        size = int(team.get("users_count") or 0)
        if _is_owners(team):
            if size > max_owners:
                found.append(
                    Finding(
                        "medium",
                        area,
                        obj,
                        f"the owners team has {size} members (more than {max_owners}): each is "
                        "admin of every workspace and may change all team access",
                    )
                )
            continue
        held = _granted(team)
        if "manage-workspaces" in held:
            found.append(
                Finding(
                    "high",
                    area,
                    obj,
                    f"organization-level manage-workspaces: its {size} members are admin of "
                    "every workspace, present and future, whatever the workspaces' records say",
                )
            )
        managing = [p for p in held if p not in ORGANIZATION_WORKSPACE_LEVELS]
        if managing:
            found.append(
                Finding(
                    "medium",
                    area,
                    obj,
                    f"organization-level permissions {', '.join(sorted(managing))} "
                    f"held by {size} members",
                )
            )
    records = grants[grants["source"] == "workspace"]
    admins = records[records["level"] == "admin"].groupby(["organization", "team_name"]).size()
    for key, count in admins.items():
        org, name = key  # type: ignore[misc]  # a two-level groupby key
        if count >= admin_workspaces:
            found.append(
                Finding(
                    "medium",
                    area,
                    f"{org}/teams/{name}",
                    f"admin on {count} workspaces (threshold {admin_workspaces}): each lets its "
                    "members change that workspace's team access",
                )
            )
    for row in records.to_dict("records"):
        level = row["level"]
        if level is None or security_level(level) < 2:
            continue
        obj = f"{row['organization']}/{row['workspace_name']}: {row['team_name'] or row['team_id']}"
        what = (
            f"{row['access']} (plan is write-equivalent)" if level == "plan" else str(row["access"])
        )
        size = row["team_size"]
        if not pd.isna(size) and int(size) >= large_team:
            found.append(
                Finding(
                    "high",
                    area,
                    obj,
                    f"{what} granted to a team of {int(size)} members "
                    f"(large: {large_team} or more); every one may act as the workspace",
                )
            )
        if row["team_visibility"] == "secret":
            found.append(
                Finding(
                    "medium",
                    area,
                    obj,
                    f"{what} granted to a secret team: the organization's members cannot see "
                    "who holds it",
                )
            )
        if row["access"] == "custom" and row["runs"] == "apply":
            found.append(
                Finding(
                    "medium",
                    area,
                    obj,
                    "custom access with runs: apply: it applies changes, write power under a "
                    "custom label",
                )
            )
        if level == "plan":
            found.append(
                Finding(
                    "low",
                    area,
                    obj,
                    f"{row['access']} access that plans runs: a plan runs the configuration's "
                    "code on the workspace's agents and reads its variables; treat it as write",
                )
            )
    return findings_frame(found)


def style_matrix(matrix: pd.DataFrame) -> Any:
    """Colour each cell of a permissions matrix by its access level."""

    def colour(value: Any) -> str:
        if isinstance(value, str) and value in LEVEL_COLOURS:
            return f"background-color: {LEVEL_COLOURS[value]}; color: white; font-weight: bold"
        return ""

    return matrix.style.map(colour).format(na_rep="·")
