"""Fixtures for the secrets client: clients on real sandboxes, and the initial shares."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient


@pytest.fixture
def client(sandbox: Sandbox) -> Iterator[SecretsClient]:
    """A root client of a fresh demo sandbox (for tests that change state)."""
    with SecretsClient(sandbox.address, sandbox.token) as c:
        yield c


@pytest.fixture
def demo_client(demo_sandbox: Sandbox) -> Iterator[SecretsClient]:
    """A root client of the session's demo sandbox (read-only use)."""
    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as c:
        yield c


@pytest.fixture
def old_shares(sandbox: Sandbox, tmp_path: Path) -> list[str]:
    """The fresh sandbox's current unseal shares (hex), as ``sys/init`` handed them out."""
    path = tmp_path / "init.json"
    sandbox.secrets.write_init_file(str(path))
    return list(json.loads(path.read_text())["keys"])
