"""Agents over HTTP (spec 4.1, part 3) and the sandbox-only agent paths."""

from __future__ import annotations

import httpx

from tests.sandbox.platform._platform_api import agent_named, assert_error, pool_id


def test_agents_show_status_address_and_last_ping(demo_api):
    client = demo_api()
    agent = agent_named(client, pool_id(client, "acme"), "runner-01")
    assert agent["id"].startswith("agent-")
    assert agent["attributes"] == {
        "name": "runner-01",
        "status": "idle",
        "ip-address": "10.0.1.11",
        "last-ping-at": "2026-06-01T11:59:30.000Z",
    }
    shown = client.get(f"/agents/{agent['id']}").json()["data"]
    assert shown["links"]["self"] == f"/api/v2/agents/{agent['id']}"
    assert shown["attributes"]["name"] == "runner-01"


def test_the_demo_pool_has_agents_in_all_five_statuses(demo_api):
    client = demo_api()
    agents = client.get(f"/agent-pools/{pool_id(client, 'acme')}/agents").json()["data"]
    assert {a["attributes"]["status"] for a in agents} == {
        "idle",
        "busy",
        "exited",
        "errored",
        "unknown",
    }


def test_an_unknown_agent_silent_for_two_hours_reports_errored(sandbox, api):
    client = api()
    pool = pool_id(client, "acme")
    agent = agent_named(client, pool, "runner-06")  # unknown, pinged 25 minutes ago
    assert agent["attributes"]["status"] == "unknown"
    sandbox.clock.advance(95 * 60)
    assert client.get(f"/agents/{agent['id']}").json()["data"]["attributes"]["status"] == (
        "errored"
    )


def test_last_ping_since_filters_agents(demo_api):
    client = demo_api()
    pool = pool_id(client, "acme")
    response = client.get(
        f"/agent-pools/{pool}/agents", params={"filter[last-ping-since]": "2026-06-01T11:00:00Z"}
    )
    names = sorted(a["attributes"]["name"] for a in response.json()["data"])
    assert names == ["runner-01", "runner-02", "runner-03", "runner-06"]
    assert response.json()["meta"]["pagination"]["total-count"] == 4
    bad = client.get(f"/agent-pools/{pool}/agents?filter[last-ping-since]=yesterday")
    assert_error(bad, 400)


def test_agents_of_a_missing_pool_and_a_missing_agent_are_404(demo_api):
    assert_error(demo_api().get("/agent-pools/apool-nope/agents"), 404)
    assert_error(demo_api().get("/agents/agent-nope"), 404)


def test_exited_errored_and_unknown_agents_are_deleted_with_204(api):
    client = api()
    pool = pool_id(client, "acme")
    for name in ("runner-04", "runner-05", "runner-06", "runner-07"):
        agent = agent_named(client, pool, name)
        assert client.delete(f"/agents/{agent['id']}").status_code == 204
        assert_error(client.get(f"/agents/{agent['id']}"), 404)
    pools = client.get("/organizations/acme/agent-pools").json()["data"]
    assert pools[0]["attributes"]["agent-count"] == 3


def test_idle_and_busy_agents_cannot_be_deleted(api):
    client = api()
    pool = pool_id(client, "acme")
    for name in ("runner-01", "runner-02"):
        agent = agent_named(client, pool, name)
        error = assert_error(client.delete(f"/agents/{agent['id']}"), 412)
        assert agent["attributes"]["status"] in error["detail"]
        assert client.get(f"/agents/{agent['id']}").status_code == 200


def test_deleting_a_missing_agent_is_404_and_members_cannot_delete(api):
    assert_error(api().delete("/agents/agent-nope"), 404)
    client = api()
    agent = agent_named(client, pool_id(client, "acme"), "runner-04")
    assert_error(api("demo-member-alice").delete(f"/agents/{agent['id']}"), 404)
    assert client.get(f"/agents/{agent['id']}").status_code == 200


# -- sandbox-only paths ------------------------------------------------------------------


def _add(client: httpx.Client, pool: str, attributes: dict) -> httpx.Response:
    return client.post(
        f"/_sandbox/agent-pools/{pool}/agents",
        json={"data": {"type": "agents", "attributes": attributes}},
    )


def test_the_sandbox_path_adds_an_agent_to_a_pool(sandbox, api):
    client = api()
    pool = pool_id(client, "acme")
    response = _add(client, pool, {"name": "new", "status": "busy", "ip-address": "10.1.1.1"})
    assert response.status_code == 201, response.text
    agent = response.json()["data"]
    assert agent["attributes"]["status"] == "busy"
    assert client.get(f"/agents/{agent['id']}").status_code == 200
    assert len(client.get(f"/agent-pools/{pool}/agents").json()["data"]) == 8


def test_the_sandbox_path_moves_status_and_last_ping(api):
    client = api()
    pool = pool_id(client, "acme")
    agent = agent_named(client, pool, "runner-01")
    response = client.patch(
        f"/_sandbox/agents/{agent['id']}",
        json={
            "data": {
                "type": "agents",
                "attributes": {"status": "exited", "last-ping-at": "2026-06-01T10:00:00Z"},
            }
        },
    )
    assert response.status_code == 200, response.text
    attrs = response.json()["data"]["attributes"]
    assert attrs["status"] == "exited"
    assert attrs["last-ping-at"] == "2026-06-01T10:00:00.000Z"
    assert client.delete(f"/agents/{agent['id']}").status_code == 204


def test_the_sandbox_paths_validate_and_need_an_owner(api):
    client = api()
    pool = pool_id(client, "acme")
    assert_error(_add(client, pool, {"status": "sleepy"}), 422, pointer="/data/attributes/status")
    assert_error(
        _add(client, pool, {"last-ping-at": "noon"}), 422, pointer="/data/attributes/last-ping-at"
    )
    assert_error(_add(api("demo-member-alice"), pool, {"status": "idle"}), 404)
    assert len(client.get(f"/agent-pools/{pool}/agents").json()["data"]) == 7


# -- pages shown again after a change (rendered pages are kept) ---------------------------


def _page_statuses(client: httpx.Client, pool: str) -> dict[str, str]:
    page = client.get(f"/agent-pools/{pool}/agents", params={"page[size]": 100}).json()["data"]
    return {a["attributes"]["name"]: a["attributes"]["status"] for a in page}


def test_a_page_read_again_shows_an_unknown_agent_aged_into_errored(sandbox, api):
    client = api()
    pool = pool_id(client, "acme")
    assert _page_statuses(client, pool)["runner-06"] == "unknown"
    sandbox.clock.advance(95 * 60)
    assert _page_statuses(client, pool)["runner-06"] == "errored"


def test_a_page_read_again_shows_agents_reported_added_and_deleted_since(api):
    client = api()
    pool = pool_id(client, "acme")
    assert _page_statuses(client, pool)["runner-01"] == "idle"
    runner = agent_named(client, pool, "runner-01")
    client.patch(
        f"/_sandbox/agents/{runner['id']}",
        json={"data": {"type": "agents", "attributes": {"status": "exited"}}},
    ).raise_for_status()
    assert _page_statuses(client, pool)["runner-01"] == "exited"
    _add(client, pool, {"name": "late", "status": "busy", "ip-address": "10.1.1.2"})
    assert _page_statuses(client, pool)["late"] == "busy"
    gone = agent_named(client, pool, "runner-05")
    assert client.delete(f"/agents/{gone['id']}").status_code == 204
    assert "runner-05" not in _page_statuses(client, pool)
