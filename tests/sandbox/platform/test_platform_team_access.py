"""Team access over HTTP (spec 4.3, part 2 rules 1-4, part 5)."""

from __future__ import annotations

import httpx
import pytest

from tests.sandbox.platform._platform_api import assert_error, team_id, workspace_id
from toolkit.sandbox.platform.errors import RuleViolation
from toolkit.sandbox.platform.models import CUSTOM_DEFAULTS, IMPLIED_PERMISSIONS


def _records(client: httpx.Client, ws: str, query: str = "") -> httpx.Response:
    return client.get(f"/team-workspaces?filter%5Bworkspace%5D%5Bid%5D={ws}{query}")


def _record_of(client: httpx.Client, ws: str, team: str) -> dict:
    return next(
        r
        for r in _records(client, ws).json()["data"]
        if r["relationships"]["team"]["data"]["id"] == team
    )


def _create(client: httpx.Client, ws: str, team: str, attributes: dict) -> httpx.Response:
    return client.post(
        "/team-workspaces",
        json={
            "data": {
                "type": "team-workspaces",
                "attributes": attributes,
                "relationships": {
                    "workspace": {"data": {"type": "workspaces", "id": ws}},
                    "team": {"data": {"type": "teams", "id": team}},
                },
            }
        },
    )


def _patch(client: httpx.Client, record: str, attributes: dict) -> httpx.Response:
    return client.patch(
        f"/team-workspaces/{record}",
        json={"data": {"type": "team-workspaces", "attributes": attributes}},
    )


@pytest.fixture
def ids(api) -> dict[str, str]:
    client = api()
    return {
        "networking": workspace_id(client, "acme", "networking"),
        "web-frontend": workspace_id(client, "acme", "web-frontend"),
        "billing-api": workspace_id(client, "acme", "billing-api"),
        "readers": team_id(client, "acme", "readers"),
        "planners": team_id(client, "acme", "planners"),
        "developers": team_id(client, "acme", "developers"),
        "security": team_id(client, "acme", "security"),
        "payroll": workspace_id(client, "initech", "payroll"),
    }


def test_records_list_for_a_workspace_unpaginated(api, ids):
    body = _records(api(), ids["web-frontend"]).json()
    assert "links" not in body
    record = body["data"][0]
    assert record["id"].startswith("tws-") and record["type"] == "team-workspaces"
    assert record["links"]["self"] == f"/api/v2/team-workspaces/{record['id']}"
    team = record["relationships"]["team"]
    assert team["links"]["related"] == f"/api/v2/teams/{team['data']['id']}"
    ws = record["relationships"]["workspace"]
    assert ws == {
        "data": {"id": ids["web-frontend"], "type": "workspaces"},
        "links": {"related": f"/api/v2/workspaces/{ids['web-frontend']}"},
    }
    assert len(body["data"]) == 3


def test_records_list_is_paginated_when_asked(api, ids):
    body = _records(api(), ids["web-frontend"], "&page[size]=2").json()
    assert len(body["data"]) == 2
    assert body["meta"]["pagination"]["total-count"] == 3


def test_the_workspace_filter_is_required_and_a_missing_workspace_is_404(api):
    error = assert_error(api().get("/team-workspaces"), 422)
    assert error["source"] == {"parameter": "filter[workspace][id]"}
    assert_error(_records(api(), "ws-nope"), 404)


@pytest.mark.parametrize("level", ["read", "plan", "write", "admin"])
def test_each_level_reports_its_implied_permissions(api, ids, level):
    client = api()
    response = _create(client, ids["networking"], ids["readers"], {"access": level})
    assert response.status_code == 200, response.text
    assert response.json()["data"]["attributes"] == {"access": level, **IMPLIED_PERMISSIONS[level]}


def test_the_implied_permissions_match_the_real_service():
    assert IMPLIED_PERMISSIONS["read"] == {
        "runs": "read", "variables": "read", "state-versions": "read",
        "policy-mocks": "none", "workspace-locking": False, "run-tasks": False,
    }  # fmt: skip
    assert IMPLIED_PERMISSIONS["plan"]["runs"] == "plan"
    assert IMPLIED_PERMISSIONS["write"] == {
        "runs": "apply", "variables": "write", "state-versions": "write",
        "policy-mocks": "read", "workspace-locking": True, "run-tasks": False,
    }  # fmt: skip
    assert IMPLIED_PERMISSIONS["admin"] == {**IMPLIED_PERMISSIONS["write"], "run-tasks": True}


def test_custom_access_starts_from_the_defaults(api, ids):
    response = _create(api(), ids["networking"], ids["readers"], {"access": "custom"})
    assert response.json()["data"]["attributes"] == {"access": "custom", **CUSTOM_DEFAULTS}
    assert CUSTOM_DEFAULTS == {
        "runs": "read", "variables": "none", "state-versions": "none",
        "policy-mocks": "none", "workspace-locking": False, "run-tasks": False,
    }  # fmt: skip


def test_custom_access_takes_every_permission(api, ids):
    attrs = {
        "access": "custom",
        "runs": "apply",
        "variables": "write",
        "state-versions": "read-outputs",
        "policy-mocks": "read",
        "workspace-locking": True,
        "run-tasks": True,
    }
    response = _create(api(), ids["networking"], ids["readers"], attrs)
    assert response.json()["data"]["attributes"] == attrs


@pytest.mark.parametrize(
    ("attribute", "value", "label"),
    [
        ("runs", "apply", "Runs"),
        ("variables", "write", "Variables"),
        ("state-versions", "read", "State versions"),
        ("policy-mocks", "read", "Policy mocks"),
        ("workspace-locking", True, "Workspace locking"),
        ("run-tasks", False, "Run tasks"),
    ],
)
def test_custom_only_attributes_are_refused_with_other_levels(api, ids, attribute, value, label):
    client = api()
    response = _create(
        client, ids["networking"], ids["readers"], {"access": "read", attribute: value}
    )
    error = assert_error(response, 422, pointer=f"/data/attributes/{attribute}")
    assert error["detail"] == (
        f"{label} is read-only when access level is 'read'; "
        "use the 'custom' access level to set this attribute."
    )
    assert all(
        r["relationships"]["team"]["data"]["id"] != ids["readers"]
        for r in _records(client, ids["networking"]).json()["data"]
    )


@pytest.mark.parametrize(
    ("attrs", "pointer", "named"),
    [
        ({"access": "owner"}, "access", "'owner'"),
        ({}, "access", "required"),
        ({"access": "custom", "runs": "destroy"}, "runs", "'destroy'"),
        ({"access": "custom", "variables": "admin"}, "variables", "'admin'"),
        ({"access": "custom", "state-versions": "all"}, "state-versions", "'all'"),
        ({"access": "custom", "policy-mocks": "write"}, "policy-mocks", "'write'"),
        ({"access": "custom", "workspace-locking": "true"}, "workspace-locking", "boolean"),
        ({"access": "custom", "run-tasks": 1}, "run-tasks", "boolean"),
    ],
)
def test_values_are_validated_naming_the_attribute(api, ids, attrs, pointer, named):
    response = _create(api(), ids["networking"], ids["readers"], attrs)
    error = assert_error(response, 422, pointer=f"/data/attributes/{pointer}")
    assert named in error["detail"]


def test_relationships_are_required_and_typed(api, ids):
    client = api()
    no_rels = client.post(
        "/team-workspaces",
        json={"data": {"type": "team-workspaces", "attributes": {"access": "read"}}},
    )
    assert_error(no_rels, 422, pointer="/data/relationships/workspace/data")
    wrong = client.post(
        "/team-workspaces",
        json={
            "data": {
                "type": "team-workspaces",
                "attributes": {"access": "read"},
                "relationships": {
                    "workspace": {"data": {"type": "workspaces", "id": ids["networking"]}},
                    "team": {"data": {"type": "users", "id": ids["readers"]}},
                },
            }
        },
    )
    assert_error(wrong, 422, pointer="/data/relationships/team/data/type")


def test_a_missing_team_or_workspace_or_another_organizations_team_is_404(api, ids):
    client = api()
    assert_error(_create(client, "ws-nope", ids["readers"], {"access": "read"}), 404)
    assert_error(_create(client, ids["networking"], "team-nope", {"access": "read"}), 404)
    assert_error(_create(client, ids["payroll"], ids["readers"], {"access": "read"}), 404)


def test_a_team_cannot_get_a_second_record_for_a_workspace(api, ids):
    response = _create(api(), ids["web-frontend"], ids["readers"], {"access": "admin"})
    assert_error(response, 422, detail_has="already has access")


def test_plan_outputs_is_accepted_and_ignored(api, ids):
    response = _create(
        api(), ids["networking"], ids["readers"], {"access": "read", "plan-outputs": "none"}
    )
    assert response.status_code == 200, response.text
    assert "plan-outputs" not in response.json()["data"]["attributes"]


def test_patch_changes_level_and_custom_permissions(api, ids):
    client = api()
    record = _record_of(client, ids["web-frontend"], ids["readers"])
    custom = _patch(client, record["id"], {"access": "custom", "variables": "read"})
    assert custom.status_code == 200, custom.text
    assert custom.json()["data"]["attributes"] == {
        **CUSTOM_DEFAULTS,
        "access": "custom",
        "variables": "read",
    }
    # staying custom keeps what is not sent
    kept = _patch(client, record["id"], {"runs": "plan"}).json()["data"]["attributes"]
    assert kept["variables"] == "read" and kept["runs"] == "plan"
    back = _patch(client, record["id"], {"access": "write"}).json()["data"]["attributes"]
    assert back == {"access": "write", **IMPLIED_PERMISSIONS["write"]}
    refused = _patch(client, record["id"], {"runs": "plan"})
    assert_error(refused, 422, detail_has="access level is 'write'")
    shown = client.get(f"/team-workspaces/{record['id']}").json()["data"]["attributes"]
    assert shown["access"] == "write"


def test_delete_is_204_and_the_team_may_then_be_added_again(api, ids):
    client = api()
    record = _record_of(client, ids["web-frontend"], ids["readers"])
    assert client.delete(f"/team-workspaces/{record['id']}").status_code == 204
    assert_error(client.get(f"/team-workspaces/{record['id']}"), 404)
    assert_error(client.delete(f"/team-workspaces/{record['id']}"), 404)
    assert (
        _create(client, ids["web-frontend"], ids["readers"], {"access": "plan"}).status_code == 200
    )


# -- visibility (part 2 rule 4, part 5) ------------------------------------------------


def test_a_member_sees_only_records_of_its_own_teams_including_secret_ones(api, ids):
    alice = api("demo-member-alice")  # developers, platform-admins, security (secret)
    seen = _records(alice, ids["billing-api"]).json()["data"]
    assert [r["relationships"]["team"]["data"]["id"] for r in seen] == [ids["security"]]
    bob = api("demo-member-bob")  # developers, readers, planners
    seen = _records(bob, ids["billing-api"]).json()["data"]
    assert [r["relationships"]["team"]["data"]["id"] for r in seen] == [ids["readers"]]
    owner = api("demo-owner-olivia")
    assert len(_records(owner, ids["billing-api"]).json()["data"]) == 2


def test_a_member_cannot_read_other_teams_records_or_change_any(api, ids):
    owner = api()
    security = _record_of(owner, ids["billing-api"], ids["security"])
    bob = api("demo-member-bob")
    assert_error(bob.get(f"/team-workspaces/{security['id']}"), 404)
    readers = _record_of(owner, ids["billing-api"], ids["readers"])
    assert bob.get(f"/team-workspaces/{readers['id']}").status_code == 200
    assert_error(_patch(bob, readers["id"], {"access": "admin"}), 404)
    assert_error(bob.delete(f"/team-workspaces/{readers['id']}"), 404)
    assert_error(_create(bob, ids["networking"], ids["readers"], {"access": "read"}), 404)
    assert (
        owner.get(f"/team-workspaces/{readers['id']}").json()["data"]["attributes"]["access"]
        == "read"
    )


@pytest.mark.parametrize("token", ["demo-org-acme", "demo-owner-olivia", "admin"])
def test_organization_and_owners_tokens_act_as_owners(api, ids, token):
    client = api(token)
    response = _create(client, ids["networking"], ids["planners"], {"access": "plan"})
    assert response.status_code == 200, response.text


def test_records_of_other_organizations_are_invisible(api, ids):
    for token in ("demo-org-globex", "demo-member-carol", "demo-owner-gus"):
        client = api(token)
        assert_error(_records(client, ids["web-frontend"]), 404)
        assert_error(_create(client, ids["networking"], ids["planners"], {"access": "plan"}), 404)


# -- workspace admins (part 2 rule 4) --------------------------------------------------
# alice's platform-admins team has admin on networking; bob's teams are admin nowhere.


def test_a_workspace_admin_adds_changes_and_removes_team_access_there(api, ids):
    alice = api("demo-member-alice")
    created = _create(alice, ids["networking"], ids["readers"], {"access": "read"})
    assert created.status_code == 200, created.text
    record = created.json()["data"]
    changed = _patch(alice, record["id"], {"access": "custom", "runs": "plan"})
    assert changed.status_code == 200, changed.text
    assert changed.json()["data"]["attributes"]["runs"] == "plan"
    owner = api()
    shown = owner.get(f"/team-workspaces/{record['id']}").json()["data"]["attributes"]
    assert (shown["access"], shown["runs"]) == ("custom", "plan")
    assert alice.delete(f"/team-workspaces/{record['id']}").status_code == 204
    assert_error(owner.get(f"/team-workspaces/{record['id']}"), 404)


def test_a_workspace_admin_sees_every_record_there_including_secret_teams(sandbox, api, ids):
    # a secret team alice is not on
    red_team = sandbox.platform.add_team("acme", "red-team", members=["erin-token"], secret=True)
    owner = api()
    secret = _create(owner, ids["networking"], red_team, {"access": "read"}).json()["data"]
    planners = _create(owner, ids["networking"], ids["planners"], {"access": "plan"})
    alice = api("demo-member-alice")
    assert_error(alice.get(f"/teams/{red_team}"), 404)  # the team itself stays hidden
    seen = {r["id"] for r in _records(alice, ids["networking"]).json()["data"]}
    assert seen == {r["id"] for r in _records(owner, ids["networking"]).json()["data"]}
    assert secret["id"] in seen and len(seen) == 3
    assert alice.get(f"/team-workspaces/{secret['id']}").status_code == 200
    # bob is on planners, not an admin of networking: he sees only his team's record
    bob = api("demo-member-bob")
    assert [r["id"] for r in _records(bob, ids["networking"]).json()["data"]] == [
        planners.json()["data"]["id"]
    ]
    assert_error(bob.get(f"/team-workspaces/{secret['id']}"), 404)


def test_a_workspace_admin_changes_nothing_on_workspaces_it_does_not_administer(api, ids):
    alice = api("demo-member-alice")  # write on web-frontend (developers), custom on billing-api
    owner = api()
    readers = _record_of(owner, ids["web-frontend"], ids["readers"])
    assert_error(_patch(alice, readers["id"], {"access": "admin"}), 404)
    assert_error(alice.delete(f"/team-workspaces/{readers['id']}"), 404)
    assert_error(_create(alice, ids["web-frontend"], ids["planners"], {"access": "read"}), 404)
    security = _record_of(owner, ids["billing-api"], ids["security"])
    assert_error(_patch(alice, security["id"], {"access": "admin"}), 404)
    assert_error(_records(alice, ids["payroll"]), 404)  # another organization
    after = {r["id"]: r for r in _records(owner, ids["web-frontend"]).json()["data"]}
    assert after[readers["id"]] == readers
    assert _record_of(owner, ids["billing-api"], ids["security"]) == security


def test_a_team_of_another_organization_is_404_for_a_workspace_admin_too(api, ids):
    alice = api("demo-member-alice")
    dave_team = team_id(api(), "initech", "payroll-admins")
    assert_error(_create(alice, ids["networking"], dave_team, {"access": "read"}), 404)


def test_a_workspace_admin_who_gives_up_admin_loses_the_right_to_change(api, ids):
    alice = api("demo-member-alice")
    own = _record_of(api(), ids["networking"], team_id(api(), "acme", "platform-admins"))
    assert _patch(alice, own["id"], {"access": "write"}).status_code == 200
    assert_error(_patch(alice, own["id"], {"access": "admin"}), 404)
    assert_error(_create(alice, ids["networking"], ids["readers"], {"access": "read"}), 404)


# -- organization-level access (part 2 rule 3) ------------------------------------------


def test_a_team_document_shows_its_organization_level_permissions(sandbox, api):
    team = sandbox.platform.add_team(
        "acme",
        "workspace-managers",
        members=["mona-token"],
        organization_access=["manage-workspaces"],
    )
    shown = api().get(f"/teams/{team}").json()["data"]["attributes"]["organization-access"]
    assert shown["manage-workspaces"] is True
    assert shown["read-workspaces"] is False and shown["manage-policies"] is False


def test_the_owners_team_holds_every_organization_level_permission(api):
    owner = api()
    owners = next(
        t
        for t in owner.get("/organizations/acme/teams").json()["data"]
        if t["attributes"]["name"] == "owners"
    )
    assert all(owners["attributes"]["organization-access"].values())
    readers = team_id(owner, "acme", "readers")
    plain = owner.get(f"/teams/{readers}").json()["data"]["attributes"]["organization-access"]
    assert not any(plain.values())


def test_manage_workspaces_makes_a_member_admin_of_every_workspace_of_its_organization(
    sandbox, api, ids
):
    sandbox.platform.add_team(
        "acme",
        "workspace-managers",
        members=["mona-token"],
        organization_access=["manage-workspaces"],
    )
    auditors = sandbox.platform.add_team("acme", "auditors")
    mona = api("mona-token")
    # no team-workspace record names her team, yet she manages team access everywhere
    created = _create(mona, ids["billing-api"], auditors, {"access": "read"})
    assert created.status_code == 200, created.text
    seen = {r["id"] for r in _records(mona, ids["networking"]).json()["data"]}
    assert seen == {r["id"] for r in _records(api(), ids["networking"]).json()["data"]}
    # ...of her own organization only
    assert_error(_records(mona, ids["payroll"]), 404)


def test_a_team_without_manage_workspaces_gains_nothing_from_other_organization_permissions(
    sandbox, api, ids
):
    sandbox.platform.add_team(
        "acme", "policy-editors", members=["pat-token"], organization_access=["manage-policies"]
    )
    pat = api("pat-token")
    assert_error(_create(pat, ids["billing-api"], ids["readers"], {"access": "read"}), 404)
    assert _records(pat, ids["networking"]).json()["data"] == []


def test_seeding_refuses_an_unknown_organization_permission_and_a_second_owners_team(sandbox):
    with pytest.raises(RuleViolation, match="unknown organization permission"):
        sandbox.platform.add_team("acme", "x", organization_access=["manage-everything"])
    with pytest.raises(RuleViolation, match="already has an owners team"):
        sandbox.platform.add_team("acme", "more-owners", owners=True)
    assert "x" not in {t.name for t in sandbox.platform.org_store.teams.values()}


def test_a_teams_organization_access_survives_a_restart_on_stored_state(tmp_path):
    from toolkit.sandbox import Sandbox

    path = str(tmp_path / "platform.db")
    with Sandbox(state=path) as first:
        team = first.platform.add_team(
            "acme", "workspace-managers", organization_access=["manage-workspaces"]
        )
    with Sandbox(state=path) as second:
        assert second.resumed
        kept = second.platform.org_store.teams[team]
        assert kept.organization_access == frozenset({"manage-workspaces"})
        assert kept.holds("manage-workspaces") and not kept.holds("manage-policies")
