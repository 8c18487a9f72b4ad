"""Agent pools over HTTP (spec 4.1): list, show, create, update, delete."""

from __future__ import annotations

import httpx

from tests.sandbox.platform._platform_api import assert_error, pool_id, workspace_id
from toolkit.sandbox import DEFAULT_TOKEN, Sandbox


def _create(client: httpx.Client, org: str, attributes: dict, allowed=None) -> httpx.Response:
    data: dict = {"type": "agent-pools", "attributes": attributes}
    if allowed is not None:
        data["relationships"] = {"allowed-workspaces": {"data": allowed}}
    return client.post(f"/organizations/{org}/agent-pools", json={"data": data})


def _ws_ref(client: httpx.Client, org: str, name: str) -> dict:
    return {"type": "workspaces", "id": workspace_id(client, org, name)}


# -- list --------------------------------------------------------------------------------


def test_the_pool_list_shows_agent_count_links_and_status_counts(demo_api):
    body = demo_api().get("/organizations/acme/agent-pools").json()
    pool = body["data"][0]
    assert pool["id"].startswith("apool-")
    assert pool["type"] == "agent-pools"
    assert pool["attributes"]["name"] == "acme-private"
    assert pool["attributes"]["agent-count"] == 7
    assert pool["attributes"]["created-at"].endswith(".000Z")
    assert pool["links"]["self"] == f"/api/v2/agent-pools/{pool['id']}"
    rels = pool["relationships"]
    assert rels["agents"]["links"]["related"] == f"/api/v2/agent-pools/{pool['id']}/agents"
    assert rels["authentication-tokens"]["links"]["related"].endswith("/authentication-tokens")
    assert len(rels["workspaces"]["data"]) == 2
    assert body["meta"]["status-counts"] == {"total": 1, "matching": 1}
    assert body["meta"]["pagination"]["total-count"] == 1


def test_the_pool_list_of_a_missing_organization_is_404(demo_api):
    assert_error(demo_api().get("/organizations/nope/agent-pools"), 404)


def test_the_authentication_tokens_link_answers_an_empty_list(demo_api):
    client = demo_api()
    response = client.get(f"/agent-pools/{pool_id(client, 'acme')}/authentication-tokens")
    assert response.status_code == 200
    assert response.json()["data"] == []


def _many_pools() -> tuple[Sandbox, httpx.Client]:
    sb = Sandbox(demo=False, pool_limit=10).start()
    sb.platform.add_organization("org")
    shared = sb.platform.add_workspace("org", "shared")
    sb.platform.add_workspace("org", "other")
    sb.platform.add_pool("org", "Bravo", organization_scoped=False, allowed_workspace_ids=[shared])
    sb.platform.add_pool("org", "alpha-build")
    sb.platform.add_pool("org", "charlie", organization_scoped=False)
    sb.clock.advance(5)
    sb.platform.add_pool("org", "delta-build", organization_scoped=False)
    client = httpx.Client(
        base_url=sb.address + "/api/v2", headers={"Authorization": f"Bearer {DEFAULT_TOKEN}"}
    )
    return sb, client


def _names(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [p["attributes"]["name"] for p in response.json()["data"]]


def test_q_searches_pool_names_case_insensitively_and_counts_matches():
    sb, client = _many_pools()
    with sb, client:
        response = client.get("/organizations/org/agent-pools", params={"q": "BUILD"})
        assert _names(response) == ["alpha-build", "delta-build"]
        assert response.json()["meta"]["status-counts"] == {"total": 4, "matching": 2}


def test_pools_sort_by_name_or_created_at_and_a_dash_reverses():
    sb, client = _many_pools()
    with sb, client:
        path = "/organizations/org/agent-pools"
        assert _names(client.get(path, params={"sort": "name"})) == [
            "alpha-build",
            "Bravo",
            "charlie",
            "delta-build",
        ]
        assert _names(client.get(path, params={"sort": "-name"}))[0] == "delta-build"
        assert _names(client.get(path, params={"sort": "-created-at"}))[0] == "delta-build"
        assert _names(client.get(path, params={"sort": "created-at"}))[-1] == "delta-build"
        assert_error(client.get(path, params={"sort": "size"}), 400)


def test_the_allowed_workspace_filter_keeps_organization_scoped_pools_too():
    sb, client = _many_pools()
    with sb, client:
        path = "/organizations/org/agent-pools"
        response = client.get(path, params={"filter[allowed_workspaces][name]": "shared"})
        assert sorted(_names(response)) == ["Bravo", "alpha-build"]
        response = client.get(path + "?filter%5Ballowed_workspaces%5D%5Bname%5D=other")
        assert _names(response) == ["alpha-build"]
        assert response.json()["meta"]["status-counts"] == {"total": 4, "matching": 1}


def test_include_workspaces_adds_the_attached_workspaces(demo_api):
    client = demo_api()
    body = client.get("/organizations/acme/agent-pools", params={"include": "workspaces"}).json()
    names = sorted(w["attributes"]["name"] for w in body["included"])
    assert names == ["billing-api", "web-backend"]
    assert all(w["type"] == "workspaces" for w in body["included"])
    one = client.get(f"/agent-pools/{pool_id(client, 'acme')}?include=workspaces").json()
    assert sorted(w["attributes"]["name"] for w in one["included"]) == names


def test_an_unknown_include_is_400(demo_api):
    client = demo_api()
    error = assert_error(client.get("/organizations/acme/agent-pools?include=agents"), 400)
    assert error["source"] == {"parameter": "include"}
    assert_error(client.get(f"/agent-pools/{pool_id(client, 'acme')}?include=teams"), 400)


# -- show --------------------------------------------------------------------------------


def test_a_pool_is_shown_with_its_allowed_workspaces(demo_api):
    client = demo_api()
    pool = client.get(f"/agent-pools/{pool_id(client, 'globex')}").json()["data"]
    assert pool["attributes"]["organization-scoped"] is False
    allowed = pool["relationships"]["allowed-workspaces"]["data"]
    assert {a["id"] for a in allowed} == {
        workspace_id(client, "globex", "analytics"),
        workspace_id(client, "globex", "etl-jobs"),
    }


# -- create ------------------------------------------------------------------------------


def test_a_pool_is_created_with_organization_scope_by_default(api):
    client = api()
    response = _create(client, "initech", {"name": "initech_runners-1"})
    assert response.status_code == 201, response.text
    pool = response.json()["data"]
    assert pool["attributes"]["organization-scoped"] is True
    assert pool["relationships"]["workspaces"]["data"] == []
    assert client.get(f"/agent-pools/{pool['id']}").status_code == 200


def test_a_pool_is_created_with_allowed_workspaces(api):
    client = api()
    ref = _ws_ref(client, "initech", "payroll")
    response = _create(client, "initech", {"name": "p", "organization-scoped": False}, [ref])
    assert response.status_code == 201, response.text
    assert response.json()["data"]["relationships"]["allowed-workspaces"]["data"] == [ref]


def test_only_one_pool_per_organization_by_default(api):
    error = assert_error(_create(api(), "acme", {"name": "second"}), 422)
    assert "limit is 1" in error["detail"]


def test_the_pool_limit_option_allows_more_pools():
    with (
        Sandbox(pool_limit=2) as sb,
        httpx.Client(
            base_url=sb.address + "/api/v2", headers={"Authorization": f"Bearer {sb.token}"}
        ) as client,
    ):
        assert _create(client, "acme", {"name": "second"}).status_code == 201
        assert_error(_create(client, "acme", {"name": "third"}), 422, detail_has="limit is 2")


def test_pool_names_allow_only_letters_digits_dash_and_underscore(api):
    client = api()
    for bad in ("has space", "dot.ted", "", "sl/ash"):
        assert_error(
            _create(client, "initech", {"name": bad}), 422, pointer="/data/attributes/name"
        )
    assert_error(_create(client, "initech", {"name": 7}), 422, pointer="/data/attributes/name")
    assert_error(_create(client, "initech", {}), 422, pointer="/data/attributes/name")


def test_pool_names_are_unique_within_the_organization():
    with (
        Sandbox(pool_limit=3) as sb,
        httpx.Client(
            base_url=sb.address + "/api/v2", headers={"Authorization": f"Bearer {sb.token}"}
        ) as client,
    ):
        assert_error(
            _create(client, "acme", {"name": "ACME-private"}),
            422,
            pointer="/data/attributes/name",
            detail_has="already been taken",
        )
        # the same name in another organization is fine
        assert _create(client, "initech", {"name": "acme-private"}).status_code == 201


def test_organization_scoped_must_be_a_boolean(api):
    assert_error(
        _create(api(), "initech", {"name": "x", "organization-scoped": "yes"}),
        422,
        pointer="/data/attributes/organization-scoped",
    )


def test_allowed_workspaces_must_be_workspaces_of_the_organization(api):
    client = api()
    other_org = _ws_ref(client, "acme", "networking")
    assert_error(
        _create(client, "initech", {"name": "x"}, [other_org]),
        422,
        pointer="/data/relationships/allowed-workspaces/data/0/id",
    )
    good = _ws_ref(client, "initech", "payroll")
    assert_error(
        _create(client, "initech", {"name": "x"}, [good, {"type": "teams", "id": good["id"]}]),
        422,
        pointer="/data/relationships/allowed-workspaces/data/1/type",
    )
    assert_error(
        _create(client, "initech", {"name": "x"}, {"type": "workspaces"}),
        422,
        pointer="/data/relationships/allowed-workspaces/data",
    )
    # nothing was created by the refused requests
    assert client.get("/organizations/initech/agent-pools").json()["data"] == []


def test_a_member_cannot_create_a_pool(api):
    assert_error(_create(api("demo-member-dave"), "initech", {"name": "x"}), 404)


def test_a_pool_in_a_missing_organization_is_404(api):
    assert_error(_create(api(), "nope", {"name": "x"}), 404)


# -- update ------------------------------------------------------------------------------


def _patch(client: httpx.Client, pool: str, attributes: dict, allowed=None) -> httpx.Response:
    data: dict = {"type": "agent-pools", "attributes": attributes}
    if allowed is not None:
        data["relationships"] = {"allowed-workspaces": {"data": allowed}}
    return client.patch(f"/agent-pools/{pool}", json={"data": data})


def test_patch_keeps_the_name_and_resets_organization_scoped_to_true(api):
    client = api()
    pool = pool_id(client, "globex")
    response = _patch(client, pool, {})
    assert response.status_code == 200, response.text
    attrs = response.json()["data"]["attributes"]
    assert attrs["name"] == "globex-datacenter"
    assert attrs["organization-scoped"] is True
    # allowed workspaces are kept when the relationship is omitted
    assert len(response.json()["data"]["relationships"]["allowed-workspaces"]["data"]) == 2


def test_patch_renames_and_replaces_allowed_workspaces(api):
    client = api()
    pool = pool_id(client, "globex")
    ref = _ws_ref(client, "globex", "reporting")
    response = _patch(client, pool, {"name": "dc2", "organization-scoped": False}, [ref])
    assert response.status_code == 200, response.text
    data = response.json()["data"]
    assert data["attributes"] == {**data["attributes"], "name": "dc2", "organization-scoped": False}
    assert data["relationships"]["allowed-workspaces"]["data"] == [ref]


def test_a_refused_patch_changes_nothing(api):
    client = api()
    pool = pool_id(client, "globex")
    response = _patch(client, pool, {"name": "ok-name"}, [{"type": "workspaces", "id": "ws-x"}])
    assert_error(response, 422)
    assert client.get(f"/agent-pools/{pool}").json()["data"]["attributes"]["name"] == (
        "globex-datacenter"
    )


def test_patch_of_a_missing_pool_is_404_and_a_member_gets_404(api):
    assert_error(_patch(api(), "apool-nope", {}), 404)
    client = api()
    pool = pool_id(client, "globex")
    assert_error(_patch(api("demo-member-carol"), pool, {"name": "x"}), 404)


# -- delete ------------------------------------------------------------------------------


def test_a_pool_without_workspaces_is_deleted_with_204(api):
    client = api()
    created = _create(client, "initech", {"name": "short-lived"}).json()["data"]["id"]
    response = client.delete(f"/agent-pools/{created}")
    assert response.status_code == 204
    assert_error(client.get(f"/agent-pools/{created}"), 404)
    assert_error(client.delete(f"/agent-pools/{created}"), 404)


def test_a_pool_that_workspaces_use_cannot_be_deleted(api):
    client = api()
    pool = pool_id(client, "acme")
    error = assert_error(client.delete(f"/agent-pools/{pool}"), 422)
    assert "web-backend" in error["detail"]
    assert client.get(f"/agent-pools/{pool}").status_code == 200


def test_deleting_a_pool_deletes_its_agents(sandbox):
    pool = sandbox.platform.add_pool("initech", "temp")
    agent = sandbox.platform.add_agent(pool, name="a", status="idle", ip_address="10.0.0.1")
    headers = {"Authorization": f"Bearer {sandbox.token}"}
    with httpx.Client(base_url=sandbox.address + "/api/v2", headers=headers) as client:
        assert client.delete(f"/agent-pools/{pool}").status_code == 204
        assert_error(client.get(f"/agents/{agent}"), 404)
