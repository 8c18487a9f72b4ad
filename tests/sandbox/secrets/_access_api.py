"""Helpers for the secrets access tests: a /v1 client per token, and error checks."""

from __future__ import annotations

import httpx

from toolkit.sandbox import Sandbox


def v1(sb: Sandbox, token: str | None = None, **headers: str) -> httpx.Client:
    """An HTTP client for the sandbox's /v1 with ``token`` (the root token by default)."""
    sent = {"X-Vault-Token": token or sb.token, **headers}
    return httpx.Client(base_url=f"{sb.address}/v1", headers=sent, timeout=10)


def assert_error(response: httpx.Response, status: int, *fragments: str) -> None:
    """``response`` is ``status`` in the ``{"errors": [...]}`` shape, naming each fragment."""
    assert response.status_code == status, response.text
    errors = response.json()["errors"]
    assert isinstance(errors, list)
    text = " ".join(errors)
    for fragment in fragments:
        assert fragment in text, text


def issue(client: httpx.Client, **body: object) -> str:
    """A new token created by ``client``'s token with ``body``; its id."""
    response = client.post("auth/token/create", json=body)
    assert response.status_code == 200, response.text
    return str(response.json()["auth"]["client_token"])


def put_acl(client: httpx.Client, name: str, policy: str) -> None:
    response = client.post(f"sys/policies/acl/{name}", json={"policy": policy})
    assert response.status_code == 204, response.text
