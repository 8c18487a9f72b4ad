"""Clients of a fresh demo sandbox for each form test: the platform and the secrets server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolkit import PlatformClient
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient


@pytest.fixture
def client(sandbox: Sandbox) -> Iterator[PlatformClient]:
    with PlatformClient(sandbox.address, sandbox.token) as client:
        yield client


@pytest.fixture
def acme(client: PlatformClient) -> dict[str, str]:
    """``{name: id}`` of acme's workspaces, teams, policy sets and agent pools."""
    orgs = client.organizations
    frames = [
        orgs.workspaces_frame("acme"),
        orgs.teams_frame("acme"),
        orgs.policy_sets_frame("acme"),
    ]
    frames.append(client.agent_pools.pools_frame("acme"))
    return {name: id_ for frame in frames for id_, name in frame["name"].items()}


@pytest.fixture
def secrets_client(sandbox: Sandbox) -> Iterator[SecretsClient]:
    """A root client of the fresh sandbox's secrets server."""
    with SecretsClient(sandbox.address, sandbox.token) as client:
        yield client
