"""TeamAccessForm: pick workspace, team and level, save, read the outcome."""

from __future__ import annotations

import pytest

from toolkit import APIError, PlatformClient
from toolkit._spec.team_access import CUSTOM_DEFAULTS, IMPLIED_PERMISSIONS
from widgets import TeamAccessForm


@pytest.fixture
def form(client: PlatformClient) -> TeamAccessForm:
    return TeamAccessForm(client, "acme")


def _pick(form: TeamAccessForm, workspace: str, team: str) -> None:
    form.workspace.label = workspace
    form.team.label = team


def _field_values(form: TeamAccessForm) -> dict[str, object]:
    return {name.replace("_", "-"): f.value for name, f in form.permissions.items()}


def test_the_dropdowns_list_the_organizations_workspaces_and_teams(
    form: TeamAccessForm, client: PlatformClient
) -> None:
    assert sorted(label for label, _ in form.workspace.options) == sorted(
        client.organizations.workspaces_frame("acme")["name"]
    )
    assert sorted(label for label, _ in form.team.options) == sorted(
        client.organizations.teams_frame("acme")["name"]
    )


@pytest.mark.parametrize("level", ["read", "plan", "write", "admin"])
def test_a_non_custom_level_shows_its_implied_permissions_read_only(
    form: TeamAccessForm, level: str
) -> None:
    _pick(form, "networking", "readers")
    form.access.value = level
    assert _field_values(form) == IMPLIED_PERMISSIONS[level]
    assert all(f.disabled for f in form.permissions.values())


def test_the_custom_level_enables_the_permission_fields(form: TeamAccessForm) -> None:
    _pick(form, "networking", "readers")
    form.access.value = "custom"
    assert _field_values(form) == CUSTOM_DEFAULTS
    assert not any(f.disabled for f in form.permissions.values())


def test_picking_a_team_with_a_record_shows_its_current_level(form: TeamAccessForm) -> None:
    _pick(form, "billing-api", "security")
    assert form.access.value == "custom"
    assert form.permissions["run_tasks"].value is True
    assert form.permissions["state_versions"].value == "read-outputs"
    assert form.save_button.description == "Update"


def test_saving_for_a_team_without_access_adds_a_record(
    form: TeamAccessForm, client: PlatformClient, acme: dict[str, str]
) -> None:
    _pick(form, "networking", "readers")
    assert form.save_button.description == "Add"
    form.access.value = "plan"
    form.save_button.click()

    records = client.team_access.access_frame(acme["networking"])
    mine = records[records["team_id"] == acme["readers"]]
    assert list(mine["access"]) == ["plan"]
    assert form.record is not None and form.record["id"] == mine.index[0]
    assert "Added" in form.status_text and form.record["id"] in form.status_text


def test_saving_custom_permissions_sends_the_fields_values(
    form: TeamAccessForm, client: PlatformClient
) -> None:
    _pick(form, "networking", "readers")
    form.access.value = "custom"
    form.permissions["runs"].value = "apply"
    form.permissions["variables"].value = "write"
    form.permissions["workspace_locking"].value = True
    form.save_button.click()

    assert form.record is not None
    stored = client.team_access.read(form.record["id"])
    assert (stored["access"], stored["runs"], stored["variables"]) == ("custom", "apply", "write")
    assert stored["workspace_locking"] is True
    assert stored["run_tasks"] is False


def test_saving_for_a_team_that_has_a_record_updates_it_in_place(
    form: TeamAccessForm, client: PlatformClient, acme: dict[str, str]
) -> None:
    ws = acme["web-frontend"]
    before = client.team_access.access_frame(ws)
    _pick(form, "web-frontend", "developers")
    assert form.access.value == "write"
    form.access.value = "admin"
    form.save_button.click()

    after = client.team_access.access_frame(ws)
    assert list(after.index) == list(before.index)
    assert list(after[after["team_id"] == acme["developers"]]["access"]) == ["admin"]
    assert "Updated" in form.status_text


def test_the_servers_error_message_is_shown_in_the_status_area(
    form: TeamAccessForm, client: PlatformClient, acme: dict[str, str]
) -> None:
    ws = acme["networking"]
    with pytest.raises(APIError) as refused:
        client.team_access.create(ws, "team-doesnotexist", "read")
    form.team.options = [("ghost", "team-doesnotexist")]
    _pick(form, "networking", "ghost")
    form.save_button.click()

    assert form.record is None
    assert refused.value.message in form.status_text
    assert str(refused.value.status) in form.status_text
