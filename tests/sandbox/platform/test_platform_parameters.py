"""Policy set parameters over HTTP (spec 4.2)."""

from __future__ import annotations

import httpx

from tests.sandbox.platform._platform_api import assert_error, by_name, policy_set_id


def _ps(client: httpx.Client, name: str = "security-baseline", org: str = "acme") -> str:
    return policy_set_id(client, org, name)


def _create(client: httpx.Client, ps: str, attributes: dict) -> httpx.Response:
    return client.post(
        f"/policy-sets/{ps}/parameters", json={"data": {"type": "vars", "attributes": attributes}}
    )


def _patch(client: httpx.Client, ps: str, var: str, attributes: dict | None) -> httpx.Response:
    data: dict = {"type": "vars", "id": var}
    if attributes is not None:
        data["attributes"] = attributes
    return client.patch(f"/policy-sets/{ps}/parameters/{var}", json={"data": data})


def test_a_parameter_is_created_with_201_and_defaults(api):
    client = api()
    ps = _ps(client)
    response = _create(client, ps, {"key": "region", "category": "policy-set"})
    assert response.status_code == 201, response.text
    var = response.json()["data"]
    assert var["id"].startswith("var-") and var["type"] == "vars"
    assert var["attributes"] == {
        "key": "region",
        "value": "",
        "category": "policy-set",
        "sensitive": False,
    }
    assert var["relationships"]["configurable"] == {
        "data": {"id": ps, "type": "policy-sets"},
        "links": {"related": f"/api/v2/policy-sets/{ps}"},
    }
    assert var["links"]["self"] == f"/api/v2/policy-sets/{ps}/parameters/{var['id']}"


def test_category_must_be_policy_set_and_key_is_required(api):
    client = api()
    ps = _ps(client)
    for attrs, pointer in [
        ({"key": "k", "category": "terraform"}, "/data/attributes/category"),
        ({"key": "k"}, "/data/attributes/category"),
        ({"category": "policy-set"}, "/data/attributes/key"),
        ({"key": "", "category": "policy-set"}, "/data/attributes/key"),
        ({"key": "k", "category": "policy-set", "value": 5}, "/data/attributes/value"),
        ({"key": "k", "category": "policy-set", "sensitive": "no"}, "/data/attributes/sensitive"),
    ]:
        assert_error(_create(client, ps, attrs), 422, pointer=pointer)
    response = client.post(
        f"/policy-sets/{ps}/parameters",
        json={"data": {"type": "variables", "attributes": {"key": "k"}}},
    )
    assert_error(response, 422, pointer="/data/type")
    assert len(client.get(f"/policy-sets/{ps}/parameters").json()["data"]) == 3


def test_a_duplicate_key_in_one_policy_set_is_422(api):
    client = api()
    response = _create(client, _ps(client), {"key": "allowed_regions", "category": "policy-set"})
    assert_error(response, 422, pointer="/data/attributes/key", detail_has="already been taken")


def test_a_sensitive_value_is_hidden_in_every_answer(api):
    client = api()
    ps = _ps(client)
    attrs = {"key": "token", "value": "s3cret", "category": "policy-set", "sensitive": True}
    created = _create(client, ps, attrs).json()["data"]
    assert created["attributes"]["value"] is None
    shown = client.get(f"/policy-sets/{ps}/parameters/{created['id']}").json()["data"]
    assert shown["attributes"]["value"] is None
    listed = client.get(f"/policy-sets/{ps}/parameters")
    assert "s3cret" not in listed.text


def test_the_list_is_unpaginated_without_page_parameters(demo_api):
    client = demo_api()
    body = client.get(f"/policy-sets/{_ps(client)}/parameters").json()
    assert len(body["data"]) == 3
    assert "links" not in body and "meta" not in body
    webhook = next(v for v in body["data"] if v["attributes"]["key"] == "slack_webhook")
    assert webhook["attributes"]["value"] is None and webhook["attributes"]["sensitive"] is True


def test_the_list_is_paginated_with_page_parameters(demo_api):
    client = demo_api()
    body = client.get(f"/policy-sets/{_ps(client)}/parameters?page[size]=2").json()
    assert len(body["data"]) == 2
    assert body["meta"]["pagination"]["total-count"] == 3
    assert body["links"]["next"] is not None
    default = client.get(f"/policy-sets/{_ps(client)}/parameters?page[number]=1").json()
    assert default["meta"]["pagination"]["page-size"] == 20


def test_patch_changes_only_what_is_sent(api):
    client = api()
    ps = _ps(client)
    var = by_name(client, f"/policy-sets/{ps}/parameters", "max_instance_size", "key")
    response = _patch(client, ps, var["id"], {"value": "m5.2xlarge"})
    assert response.status_code == 200, response.text
    assert response.json()["data"]["attributes"] == {
        "key": "max_instance_size",
        "value": "m5.2xlarge",
        "category": "policy-set",
        "sensitive": False,
    }


def test_an_empty_patch_returns_the_parameter_unchanged(api):
    client = api()
    ps = _ps(client)
    var = by_name(client, f"/policy-sets/{ps}/parameters", "allowed_regions", "key")
    for attributes in (None, {}):
        response = _patch(client, ps, var["id"], attributes)
        assert response.status_code == 200
        assert response.json()["data"] == var


def test_marking_sensitive_hides_the_value_from_then_on_and_cannot_be_undone(api):
    client = api()
    ps = _ps(client)
    var = by_name(client, f"/policy-sets/{ps}/parameters", "allowed_regions", "key")
    hidden = _patch(client, ps, var["id"], {"sensitive": True}).json()["data"]
    assert hidden["attributes"]["value"] is None
    response = _patch(client, ps, var["id"], {"sensitive": False})
    assert_error(response, 422, pointer="/data/attributes/sensitive")
    # a sensitive value can still be replaced, and stays hidden
    replaced = _patch(client, ps, var["id"], {"value": "us-west-2"}).json()["data"]
    assert replaced["attributes"]["value"] is None and replaced["attributes"]["sensitive"]


def test_patch_validates_key_category_and_id(api):
    client = api()
    ps = _ps(client)
    var = by_name(client, f"/policy-sets/{ps}/parameters", "allowed_regions", "key")
    taken = _patch(client, ps, var["id"], {"key": "max_instance_size"})
    assert_error(taken, 422, pointer="/data/attributes/key")
    assert_error(
        _patch(client, ps, var["id"], {"category": "env"}), 422, pointer="/data/attributes/category"
    )
    wrong_id = client.patch(
        f"/policy-sets/{ps}/parameters/{var['id']}",
        json={"data": {"type": "vars", "id": "var-other", "attributes": {"value": "x"}}},
    )
    assert_error(wrong_id, 422, pointer="/data/id")
    assert client.get(f"/policy-sets/{ps}/parameters/{var['id']}").json()["data"] == var


def test_delete_is_204_then_404(api):
    client = api()
    ps = _ps(client)
    var = by_name(client, f"/policy-sets/{ps}/parameters", "allowed_regions", "key")
    assert client.delete(f"/policy-sets/{ps}/parameters/{var['id']}").status_code == 204
    assert_error(client.get(f"/policy-sets/{ps}/parameters/{var['id']}"), 404)
    assert_error(client.delete(f"/policy-sets/{ps}/parameters/{var['id']}"), 404)
    assert_error(_patch(client, ps, var["id"], {"value": "x"}), 404)


def test_unknown_policy_sets_are_404(api):
    client = api()
    assert_error(client.get("/policy-sets/polset-nope/parameters"), 404)
    assert_error(_create(client, "polset-nope", {"key": "k", "category": "policy-set"}), 404)


def test_parameters_exist_only_for_sentinel_policy_sets(api):
    client = api()
    opa = _ps(client, "opa-guardrails", "globex")
    assert client.get(f"/policy-sets/{opa}").json()["data"]["attributes"]["kind"] == "opa"
    assert client.get(f"/policy-sets/{opa}/parameters").json()["data"] == []
    error = assert_error(_create(client, opa, {"key": "k", "category": "policy-set"}), 422)
    assert "sentinel" in error["detail"]


def test_members_read_parameters_but_cannot_change_them(api):
    member = api("demo-member-alice")
    ps = _ps(member)
    assert len(member.get(f"/policy-sets/{ps}/parameters").json()["data"]) == 3
    assert_error(_create(member, ps, {"key": "k", "category": "policy-set"}), 404)
    assert_error(api("demo-member-carol").get(f"/policy-sets/{ps}/parameters"), 404)
