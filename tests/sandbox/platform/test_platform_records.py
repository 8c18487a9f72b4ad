"""Organizations, workspaces, teams and policy sets over HTTP, and who sees them."""

from __future__ import annotations

from tests.sandbox.platform._platform_api import assert_error, pool_id, team_id, workspace_id
from toolkit._spec.team_access import ORGANIZATION_PERMISSIONS


def test_each_token_lists_only_its_organizations(demo_api):
    def orgs(token: str) -> list[str]:
        return [o["id"] for o in demo_api(token).get("/organizations").json()["data"]]

    assert orgs("admin") == ["acme", "globex", "initech"]
    assert orgs("demo-org-globex") == ["globex"]
    assert orgs("demo-member-dave") == ["acme", "initech"]
    assert_error(demo_api("demo-member-carol").get("/organizations/acme"), 404)


def test_an_organization_is_shown_by_name(demo_api):
    org = demo_api().get("/organizations/initech").json()["data"]
    assert org["type"] == "organizations"
    assert org["links"]["self"] == "/api/v2/organizations/initech"
    assert_error(demo_api().get("/organizations/nope"), 404)


def test_workspaces_list_paginates_and_searches_by_name(demo_api):
    client = demo_api()
    body = client.get("/organizations/acme/workspaces").json()
    assert body["meta"]["pagination"]["total-count"] == 5
    found = client.get("/organizations/acme/workspaces", params={"search[name]": "WEB"}).json()
    assert sorted(w["attributes"]["name"] for w in found["data"]) == ["web-backend", "web-frontend"]


def test_a_workspace_shows_its_pool(demo_api):
    client = demo_api()
    ws = client.get(f"/workspaces/{workspace_id(client, 'acme', 'web-backend')}").json()["data"]
    assert ws["id"].startswith("ws-")
    assert ws["attributes"]["execution-mode"] == "agent"
    assert ws["relationships"]["agent-pool"]["data"]["id"] == pool_id(client, "acme")
    assert_error(demo_api("demo-member-carol").get(f"/workspaces/{ws['id']}"), 404)


def test_teams_show_visibility_users_count_and_organization_access(demo_api):
    client = demo_api()
    team = client.get(f"/teams/{team_id(client, 'acme', 'developers')}").json()["data"]
    assert team["attributes"] == {
        "name": "developers",
        "visibility": "organization",
        "users-count": 2,
        "organization-access": dict.fromkeys(ORGANIZATION_PERMISSIONS, False),
    }


def test_secret_teams_are_seen_by_owners_and_their_members_only(demo_api):
    def teams(token: str) -> list[str]:
        body = demo_api(token).get("/organizations/acme/teams").json()
        return [t["attributes"]["name"] for t in body["data"]]

    assert "security" in teams("admin")
    assert "security" in teams("demo-member-alice")
    assert "security" not in teams("demo-member-bob")
    secret = team_id(demo_api(), "acme", "security")
    assert_error(demo_api("demo-member-bob").get(f"/teams/{secret}"), 404)


def test_policy_sets_show_their_kind(demo_api):
    client = demo_api()
    body = client.get("/organizations/globex/policy-sets").json()
    kinds = {p["attributes"]["name"]: p["attributes"]["kind"] for p in body["data"]}
    assert kinds == {"opa-guardrails": "opa", "tagging-rules": "sentinel"}
    one = body["data"][0]
    assert client.get(f"/policy-sets/{one['id']}").json()["data"]["id"] == one["id"]
    assert_error(demo_api("demo-member-alice").get(f"/policy-sets/{one['id']}"), 404)


def test_members_read_their_organizations_pools_and_agents(demo_api):
    alice = demo_api("demo-member-alice")
    pool = pool_id(alice, "acme")
    assert alice.get(f"/agent-pools/{pool}/agents").status_code == 200
    carol = demo_api("demo-member-carol")
    assert_error(carol.get(f"/agent-pools/{pool}"), 404)
    assert_error(carol.get(f"/agent-pools/{pool}/agents"), 404)
    assert_error(carol.get("/organizations/acme/agent-pools"), 404)
