"""Team access to workspaces (spec 4.3, part 2 rules 1-4).

Who sees and changes which records (rule 4): an organization's owners see and
change every record; a member whose team has ``admin`` access on a workspace
(a workspace admin), or whose team holds the organization-level
``manage-workspaces`` permission (rule 3: admin on every workspace), sees and
changes every record of that workspace,
including the secret teams'; any other member sees only the records of the
teams it is on, and changes none (answered as if they did not exist).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from ..._spec.team_access import (
    ACCESS_LEVELS,
    CUSTOM_DEFAULTS,
    IMPLIED_PERMISSIONS,
    PERMISSION_ATTRIBUTES,
    PERMISSION_VALUES,
)
from .errors import RecordNotFound, RuleViolation

if TYPE_CHECKING:
    from .ids import IdSource
    from .organizations import Caller, OrganizationStore, Team, Workspace

__all__ = [
    "ACCESS_LEVELS",
    "IMPLIED_PERMISSIONS",
    "PermissionSettings",
    "TeamWorkspace",
    "TeamAccessStore",
]

_LABELS = {
    "runs": "Runs",
    "variables": "Variables",
    "state-versions": "State versions",
    "policy-mocks": "Policy mocks",
    "workspace-locking": "Workspace locking",
    "run-tasks": "Run tasks",
}


@dataclass
class TeamWorkspace:
    id: str
    team_id: str
    workspace_id: str
    access: str
    # the six permissions of a ``custom`` record, by their names in the spec
    custom: dict[str, str | bool] = field(default_factory=lambda: dict(CUSTOM_DEFAULTS))

    @property
    def permissions(self) -> dict[str, str | bool]:
        """The six permissions: the stored ones for ``custom``, else those the level implies."""
        if self.access == "custom":
            return dict(self.custom)
        return dict(IMPLIED_PERMISSIONS[self.access])


@dataclass(frozen=True)
class PermissionSettings:
    """The custom permissions a create or update sets; None leaves one as it is.

    Values are checked by the store (they arrive from a document unchecked).
    """

    runs: str | bool | None = None
    variables: str | bool | None = None
    state_versions: str | bool | None = None
    policy_mocks: str | bool | None = None
    workspace_locking: str | bool | None = None
    run_tasks: str | bool | None = None

    def given(self) -> dict[str, str | bool]:
        """The permissions set, by their names in the spec, in the spec's order."""
        values = {f.name.replace("_", "-"): getattr(self, f.name) for f in fields(self)}
        return {name: values[name] for name in PERMISSION_ATTRIBUTES if values[name] is not None}


class TeamAccessStore:
    """Every team-workspace record, with one record per team and workspace."""

    def __init__(self, *, ids: IdSource, orgs: OrganizationStore) -> None:
        self.ids = ids
        self.orgs = orgs
        self.records: dict[str, TeamWorkspace] = {}
        self.pairs: set[tuple[str, str]] = set()  # (team id, workspace id)
        # record ids of each workspace, in creation order
        self.by_workspace: dict[str, dict[str, None]] = {}

    def __repr__(self) -> str:
        return f"<TeamAccessStore records={len(self.records)}>"

    # -- who may do what -------------------------------------------------------------
    def manages(self, caller: Caller, ws: Workspace) -> bool:
        """Whether the caller may change the workspace's team access and see all of it:
        an owner of its organization, a member of a team with ``admin`` on it, or of a
        team whose organization-level ``manage-workspaces`` makes it admin everywhere."""
        role = self.orgs.role(caller, ws.organization)
        if role == "owner":
            return True
        if role is None:
            return False
        if self.orgs.caller_holds(caller, ws.organization, "manage-workspaces"):
            return True
        mine = self.orgs.caller_teams(caller)
        return any(
            record.access == "admin" and record.team_id in mine for record in self._of(ws.id)
        )

    def _of(self, workspace_id: str) -> list[TeamWorkspace]:
        return [self.records[r] for r in self.by_workspace.get(workspace_id, {})]

    # -- endpoints -------------------------------------------------------------------
    def list_records(self, caller: Caller, workspace_id: str) -> list[TeamWorkspace]:
        """``GET /team-workspaces?filter[workspace][id]=``: members see their own teams' records."""
        ws = self.orgs.workspace(caller, workspace_id)
        records = self._of(ws.id)
        if self.manages(caller, ws):
            return records
        mine = self.orgs.caller_teams(caller)
        return [r for r in records if r.team_id in mine]

    def get(self, caller: Caller, access_id: str, *, manage: bool = False) -> TeamWorkspace:
        """``GET /team-workspaces/:id``; ``manage`` requires the right to change it."""
        record = self.records.get(access_id)
        if record is None:
            raise RecordNotFound()
        ws = self.orgs.workspaces[record.workspace_id]
        if self.manages(caller, ws):
            return record
        if manage or not self.orgs.role(caller, ws.organization):
            raise RecordNotFound()
        if caller.token not in self.orgs.teams[record.team_id].members:
            raise RecordNotFound()
        return record

    def create(
        self,
        caller: Caller,
        workspace_id: str,
        team_id: str,
        access: str,
        permissions: PermissionSettings = PermissionSettings(),
    ) -> TeamWorkspace:
        """``POST /team-workspaces`` (owners and the workspace's admins)."""
        self._settings(access, permissions, None)
        ws = self.orgs.workspaces.get(workspace_id)
        if ws is None or not self.manages(caller, ws):
            raise RecordNotFound()
        team = self.orgs.teams.get(team_id)
        if team is None or team.organization != ws.organization:
            raise RecordNotFound()
        return self.add(ws, team, access, permissions, unique=True)

    def add(
        self,
        ws: Workspace,
        team: Team,
        access: str,
        permissions: PermissionSettings,
        *,
        unique: bool,
    ) -> TeamWorkspace:
        """A new record, every rule checked before anything changes."""
        access, custom = self._settings(access, permissions, None)
        if (team.id, ws.id) in self.pairs:
            raise RuleViolation(
                f"team {team.name} already has access to workspace {ws.name}", "team"
            )
        record = TeamWorkspace(
            self.ids.new("tws-", team.id, ws.id, unique=unique), team.id, ws.id, access, custom
        )
        self.records[record.id] = record
        self.pairs.add((team.id, ws.id))
        self.by_workspace.setdefault(ws.id, {})[record.id] = None
        return record

    def update(
        self,
        caller: Caller,
        access_id: str,
        access: str | None = None,
        permissions: PermissionSettings = PermissionSettings(),
    ) -> TeamWorkspace:
        """``PATCH /team-workspaces/:id`` (owners and the workspace's admins)."""
        record = self.get(caller, access_id, manage=True)
        record.access, record.custom = self._settings(access, permissions, record)
        return record

    def delete(self, caller: Caller, access_id: str) -> None:
        """``DELETE /team-workspaces/:id`` (owners and the workspace's admins)."""
        record = self.get(caller, access_id, manage=True)
        del self.records[record.id]
        self.pairs.discard((record.team_id, record.workspace_id))
        self.by_workspace.get(record.workspace_id, {}).pop(record.id, None)

    # -- rules 1 and 2 ---------------------------------------------------------------
    @staticmethod
    def _settings(
        access: str | None, permissions: PermissionSettings, current: TeamWorkspace | None
    ) -> tuple[str, dict[str, str | bool]]:
        """The (access, custom permissions) a create or update leads to, or :class:`~.errors.RuleViolation`."""
        if access is not None:
            if access not in ACCESS_LEVELS:
                raise RuleViolation(
                    f"access {access!r} is not one of {', '.join(ACCESS_LEVELS)}", "access"
                )
        elif current is None:
            raise RuleViolation(f"access is required; one of {', '.join(ACCESS_LEVELS)}", "access")
        else:
            access = current.access
        given = permissions.given()
        for name, value in given.items():
            field_name = name.replace("-", "_")
            if access != "custom":
                raise RuleViolation(
                    f"{_LABELS[name]} is read-only when access level is '{access}'; "
                    "use the 'custom' access level to set this attribute.",
                    field_name,
                )
            allowed = PERMISSION_VALUES[name]
            if allowed == (False, True):
                if not isinstance(value, bool):
                    raise RuleViolation(f"{name} must be a boolean", field_name)
            elif not isinstance(value, str) or value not in allowed:
                raise RuleViolation(
                    f"{name} {value!r} is not one of {', '.join(map(str, allowed))}", field_name
                )
        if access != "custom":
            return access, dict(CUSTOM_DEFAULTS)
        # Switching to custom starts from the create defaults; staying custom keeps the rest.
        base = current.custom if current is not None and current.access == "custom" else {}
        return access, {**CUSTOM_DEFAULTS, **base, **given}
