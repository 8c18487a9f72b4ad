"""Fixtures of the secrets sandbox tests: an httpx client on /v1 with the root token."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.sandbox.secrets._access_api import v1
from toolkit.sandbox import Sandbox


@pytest.fixture
def api(sandbox: Sandbox) -> Iterator[httpx.Client]:
    with v1(sandbox) as client:
        yield client


@pytest.fixture
def demo_api(demo_sandbox: Sandbox) -> Iterator[httpx.Client]:
    with v1(demo_sandbox) as client:
        yield client
