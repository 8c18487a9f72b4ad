"""A form to give a team access to a workspace, or change the access it has.

    form = TeamAccessForm(client, "acme")
    form            # in a notebook cell: pick workspace, team and level, then Save

Workspaces and teams come from the client. The permission fields are editable
for the ``custom`` level only; for the other levels they show what the level
implies (from :mod:`toolkit._spec.team_access`). Saving adds a record, or
updates the team's record when it already has one on that workspace.
"""

from __future__ import annotations

from typing import Any

from toolkit import PlatformClient, Record, ToolkitError
from toolkit.platform.team_access import (
    ACCESS_LEVELS,
    PERMISSION_ATTRIBUTES,
    PERMISSION_VALUES,
    implied_permissions,
)

from ._common import Form

__all__ = ["TeamAccessForm"]


class TeamAccessForm(Form):
    """Add or update one team's access to one workspace of an organization."""

    title = "Team access to a workspace"

    def __init__(self, client: PlatformClient, organization: str) -> None:
        super().__init__()
        import ipywidgets as w

        self.client = client
        self.organization = organization
        self.existing: Record | None = None
        self.record: Record | None = None

        workspaces = client.organizations.workspaces_frame(organization).sort_values("name")
        teams = client.organizations.teams_frame(organization).sort_values("name")
        self.workspace = w.Dropdown(
            description="Workspace", options=[(n, i) for i, n in workspaces["name"].items()]
        )
        self.team = w.Dropdown(
            description="Team", options=[(n, i) for i, n in teams["name"].items()]
        )
        self.access = w.Dropdown(description="Access", options=ACCESS_LEVELS, value="read")
        self.permissions: dict[str, Any] = {}
        for api in PERMISSION_ATTRIBUTES:
            values = PERMISSION_VALUES[api]
            if all(isinstance(v, bool) for v in values):
                field: Any = w.Checkbox(description=api, indent=True)
            else:
                field = w.Dropdown(description=api, options=values)
            self.permissions[api.replace("-", "_")] = field
        self.save_button = self._button(
            self.save, description="Add", button_style="primary", icon="check"
        )

        self._on_change(self._show_permissions, self.access)
        self._on_change(self.load, self.workspace, self.team)

        self._layout(
            w.HBox([self.workspace, self.team]),
            self.access,
            w.HBox(
                [
                    w.VBox(list(self.permissions.values())[:3]),
                    w.VBox(list(self.permissions.values())[3:]),
                ]
            ),
            self.save_button,
        )
        self.load()

    def _find(self, workspace_id: str, team_id: str) -> Record | None:
        """The team's record on the workspace, if it has one."""
        records = self.client.team_access.access_frame(workspace_id)
        mine = records[records["team_id"] == team_id]
        if not len(mine):
            return None
        row = mine.iloc[0]
        return Record({"id": mine.index[0], **row.to_dict()}, kind="team-access")

    def load(self) -> None:
        """Show the selected team's current access to the selected workspace, if any."""
        self.existing = None
        if self.workspace.value and self.team.value:
            try:
                self.existing = self._find(self.workspace.value, self.team.value)
            except ToolkitError as exc:
                self.show_error(exc)
                return
        self.save_button.description = "Update" if self.existing else "Add"
        if self.existing:
            self.access.value = self.existing["access"]
            self.show_note(
                f"{self.team.label} has {self.existing['access']} access to "
                f"{self.workspace.label}; saving updates that record."
            )
        else:
            self.show_note(f"{self.team.label or 'The team'} has no access record here yet.")
        self._show_permissions()

    def _show_permissions(self) -> None:
        level = self.access.value
        custom = level == "custom"
        values = implied_permissions(level)
        if custom and self.existing is not None and self.existing.get("access") == "custom":
            values = {api: self.existing[api.replace("-", "_")] for api in PERMISSION_ATTRIBUTES}
        for api in PERMISSION_ATTRIBUTES:
            field = self.permissions[api.replace("-", "_")]
            field.value = values[api]
            field.disabled = not custom

    def save(self) -> Record | None:
        """Add the record, or update the team's existing one; show the outcome."""
        workspace_id, team_id, level = self.workspace.value, self.team.value, self.access.value
        permissions = (
            {name: field.value for name, field in self.permissions.items()}
            if level == "custom"
            else {}
        )
        try:
            existing = self._find(workspace_id, team_id)
            if existing is not None:
                record = self.client.team_access.update(existing["id"], access=level, **permissions)
                done = "Updated"
            else:
                record = self.client.team_access.create(workspace_id, team_id, level, **permissions)
                done = "Added"
        except ToolkitError as exc:
            self.show_error(exc)
            return None
        self.record = self.existing = record
        self.save_button.description = "Update"
        self.show_ok(
            f"{done} {self.team.label}'s {level} access to {self.workspace.label}.",
            record._repr_html_(),
        )
        return record

    def __repr__(self) -> str:
        return f"<TeamAccessForm organization={self.organization!r}>"
