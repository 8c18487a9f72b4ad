"""JSON:API conventions of the platform sandbox: auth, media type, errors, pagination."""

from __future__ import annotations

import httpx

from tests.sandbox.platform._platform_api import JSONAPI, assert_error, pool_id
from toolkit.sandbox import DEFAULT_TOKEN, Sandbox


def test_ping_answers_204_with_an_empty_body_and_needs_no_token(demo_api):
    response = demo_api(None).get("/ping")
    assert response.status_code == 204
    assert response.content == b""


def test_a_request_without_a_token_is_refused_with_401(demo_api):
    error = assert_error(demo_api(None).get("/organizations"), 401)
    assert error["title"] == "unauthorized"


def test_an_unknown_token_is_refused_with_401(demo_api):
    assert_error(demo_api("not-a-token").get("/organizations/acme"), 401)


def test_answers_are_jsonapi_documents(demo_api):
    response = demo_api().get("/organizations")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(JSONAPI)
    assert [o["id"] for o in response.json()["data"]] == ["acme", "globex", "initech"]


def test_a_missing_record_is_a_404_error_object(demo_api):
    response = demo_api().get("/agent-pools/apool-doesnotexist")
    assert response.status_code == 404
    assert response.json() == {"errors": [{"status": "404", "title": "not found"}]}


def test_an_unknown_path_is_a_jsonapi_404(demo_api):
    assert_error(demo_api().get("/no-such-thing"), 404)


def test_a_wrong_method_is_405(demo_api):
    response = demo_api().put("/organizations/acme/agent-pools", json={})
    assert response.status_code == 405


def test_malformed_json_is_a_400_error_object(api):
    response = api().post("/organizations/initech/agent-pools", content=b"{not json")
    error = assert_error(response, 400)
    assert "not valid JSON" in error["detail"]


def test_plain_application_json_requests_are_accepted(api):
    client = api()
    response = client.post(
        "/organizations/initech/agent-pools",
        json={"data": {"type": "agent-pools", "attributes": {"name": "plain-json"}}},
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.text


def test_a_body_that_is_not_a_document_is_422(api):
    client = api()
    assert_error(client.post("/organizations/initech/agent-pools", json=[1]), 422, pointer="")
    assert_error(client.post("/organizations/initech/agent-pools", json={}), 422, pointer="/data")
    assert_error(
        client.post("/organizations/initech/agent-pools", json={"data": {"type": "agents"}}),
        422,
        pointer="/data/type",
    )


def test_the_date_header_and_timestamps_follow_the_sandbox_clock(demo_api):
    response = demo_api().get("/organizations/acme")
    created = response.json()["data"]["attributes"]["created-at"]
    assert created == "2025-04-27T12:00:00.000Z"
    assert response.headers["date"].endswith("GMT")


# -- pagination (convention 4) -----------------------------------------------------------


def _agents(client: httpx.Client, query: str) -> httpx.Response:
    return client.get(f"/agent-pools/{pool_id(client, 'acme')}/agents?{query}")


def test_pages_carry_links_and_pagination_meta(demo_api):
    body = _agents(demo_api(), "page[number]=2&page[size]=3").json()
    assert len(body["data"]) == 3
    assert body["meta"]["pagination"] == {
        "current-page": 2,
        "page-size": 3,
        "prev-page": 1,
        "next-page": 3,
        "total-pages": 3,
        "total-count": 7,
    }
    links = body["links"]
    assert "page%5Bnumber%5D=2" in links["self"] and "page%5Bsize%5D=3" in links["self"]
    assert "page%5Bnumber%5D=1" in links["prev"] and "page%5Bnumber%5D=1" in links["first"]
    assert "page%5Bnumber%5D=3" in links["next"] and "page%5Bnumber%5D=3" in links["last"]


def test_prev_and_next_are_null_at_the_ends(demo_api):
    first = _agents(demo_api(), "page[size]=3").json()
    assert first["links"]["prev"] is None and first["meta"]["pagination"]["prev-page"] is None
    last = _agents(demo_api(), "page[number]=3&page[size]=3").json()
    assert last["links"]["next"] is None and last["meta"]["pagination"]["next-page"] is None
    assert len(last["data"]) == 1


def test_next_links_can_be_followed_to_the_end(demo_api):
    client = demo_api()
    url: str | None = f"/agent-pools/{pool_id(client, 'acme')}/agents?page[size]=2"
    seen = []
    while url:
        body = client.get(url).json()
        seen += [a["id"] for a in body["data"]]
        url = body["links"]["next"]
    assert len(seen) == len(set(seen)) == 7


def test_encoded_and_raw_brackets_are_the_same_request(demo_api):
    raw = _agents(demo_api(), "page[number]=2&page[size]=2").json()
    encoded = _agents(demo_api(), "page%5Bnumber%5D=2&page%5Bsize%5D=2").json()
    assert [a["id"] for a in raw["data"]] == [a["id"] for a in encoded["data"]]
    assert raw["meta"] == encoded["meta"]


def test_the_default_page_size_is_20(demo_api):
    body = _agents(demo_api(), "").json()
    assert body["meta"]["pagination"]["page-size"] == 20


def test_invalid_page_values_fall_back_to_the_defaults(demo_api):
    for query in ("page[number]=abc&page[size]=-4", "page[number]=0&page[size]=0"):
        pagination = _agents(demo_api(), query).json()["meta"]["pagination"]
        assert pagination["current-page"] == 1
        assert pagination["page-size"] == 20


def test_a_page_past_the_last_is_empty_with_correct_totals(demo_api):
    body = _agents(demo_api(), "page[number]=9&page[size]=5").json()
    assert body["data"] == []
    assert body["meta"]["pagination"]["total-count"] == 7
    assert body["meta"]["pagination"]["total-pages"] == 2
    assert body["meta"]["pagination"]["next-page"] is None


def test_page_size_is_capped_at_100():
    headers = {"Authorization": f"Bearer {DEFAULT_TOKEN}"}
    with Sandbox() as sb, httpx.Client(base_url=sb.address + "/api/v2", headers=headers) as client:
        pool = pool_id(client, "acme")
        for i in range(120):
            sb.platform.add_agent(pool, name=f"bulk-{i}", status="idle", ip_address="10.9.0.1")
        body = client.get(f"/agent-pools/{pool}/agents?page%5Bsize%5D=500").json()
    assert len(body["data"]) == 100
    assert body["meta"]["pagination"]["page-size"] == 100
    assert body["meta"]["pagination"]["total-pages"] == 2
