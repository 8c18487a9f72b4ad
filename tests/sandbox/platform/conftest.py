"""Helpers for the platform sandbox tests: an HTTP client per token, and demo lookups."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from toolkit.sandbox import Sandbox

JSONAPI = "application/vnd.api+json"

ClientFactory = Callable[..., httpx.Client]


def _factory(sb: Sandbox, opened: list[httpx.Client]) -> ClientFactory:
    def make(token: str | None = "admin") -> httpx.Client:
        headers = {"Content-Type": JSONAPI}
        if token is not None:
            headers["Authorization"] = f"Bearer {sb.token if token == 'admin' else token}"
        client = httpx.Client(base_url=sb.address + "/api/v2", headers=headers, timeout=10)
        opened.append(client)
        return client

    return make


@pytest.fixture
def api(sandbox: Sandbox) -> Iterator[ClientFactory]:
    """``api(token)``: a client on a fresh demo sandbox ('admin' is the sandbox token)."""
    opened: list[httpx.Client] = []
    yield _factory(sandbox, opened)
    for client in opened:
        client.close()


@pytest.fixture
def demo_api(demo_sandbox: Sandbox) -> Iterator[ClientFactory]:
    """``demo_api(token)``: a client on the shared demo sandbox, for reads only."""
    opened: list[httpx.Client] = []
    yield _factory(demo_sandbox, opened)
    for client in opened:
        client.close()
