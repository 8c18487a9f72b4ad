"""Fixtures that start real sandbox servers on loopback for the tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolkit.sandbox import Sandbox


@pytest.fixture(scope="session")
def demo_sandbox() -> Iterator[Sandbox]:
    """One demo sandbox for the whole session: for tests that only read."""
    with Sandbox() as sandbox:
        yield sandbox


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    """A fresh demo sandbox for one test: for tests that change state."""
    with Sandbox() as sandbox:
        yield sandbox


@pytest.fixture
def empty_sandbox() -> Iterator[Sandbox]:
    """A fresh sandbox with no demo data."""
    with Sandbox(demo=False) as sandbox:
        yield sandbox
