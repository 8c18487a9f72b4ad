"""Lookups and assertions shared by the platform sandbox tests."""

from __future__ import annotations

from typing import Any

import httpx

JSONAPI = "application/vnd.api+json"


def by_name(client: httpx.Client, path: str, name: str, attribute: str = "name") -> dict[str, Any]:
    """The resource of a list whose attribute equals ``name``."""
    response = client.get(path, params={"page[size]": "100"})
    assert response.status_code == 200, response.text
    for item in response.json()["data"]:
        if item["attributes"][attribute] == name:
            return item  # type: ignore[no-any-return]
    raise AssertionError(f"{name} not found in {path}")


def pool_id(client: httpx.Client, org: str) -> str:
    response = client.get(f"/organizations/{org}/agent-pools")
    assert response.status_code == 200, response.text
    return str(response.json()["data"][0]["id"])


def workspace_id(client: httpx.Client, org: str, name: str) -> str:
    return str(by_name(client, f"/organizations/{org}/workspaces", name)["id"])


def team_id(client: httpx.Client, org: str, name: str) -> str:
    return str(by_name(client, f"/organizations/{org}/teams", name)["id"])


def policy_set_id(client: httpx.Client, org: str, name: str) -> str:
    return str(by_name(client, f"/organizations/{org}/policy-sets", name)["id"])


def agent_named(client: httpx.Client, pool: str, name: str) -> dict[str, Any]:
    return by_name(client, f"/agent-pools/{pool}/agents", name)


def assert_error(
    response: httpx.Response,
    status: int,
    *,
    pointer: str | None = None,
    detail_has: str | None = None,
) -> dict[str, Any]:
    """The response is a JSON:API error of ``status``; returns the first error object."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(JSONAPI)
    error = response.json()["errors"][0]
    assert error["status"] == str(status)
    assert error["title"]
    if pointer is not None:
        assert error["source"]["pointer"] == pointer, error
    if detail_has is not None:
        assert detail_has in error["detail"], error
    return error  # type: ignore[no-any-return]
