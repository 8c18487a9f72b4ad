"""Fixtures that start real sandbox servers on loopback for the tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.sandbox import Sandbox

# Plugins: the leak tests' fixtures (``leaks``, ``debug_logs``) and the suites' tallies.
pytest_plugins = ["tests._leaks", "tests._tally"]


# The folders whose every test starts servers or processes; each has a make target of its
# own (the Makefile's SLOW_SUITES, held equal to this by tests/test_makefile.py). Their
# tests are marked slow, so that `-m "not slow"` is the fast suite wherever it is run.
SLOW_FOLDERS = ("real", "browser", "binder", "launch", "fleet", "runbooks")
_TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(item.path).resolve()
        if not path.is_relative_to(_TESTS):
            continue  # a notebook collected beside the tests
        parts = path.relative_to(_TESTS).parts
        if len(parts) > 1 and parts[0] in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)


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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many known secrets the leak tests fed and in how many places they grepped."""
    fed = paths = 0
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "teardown":
                continue
            props = dict(getattr(report, "user_properties", ()))
            fed += int(props.get("secrets_fed", 0))
            paths += int(props.get("secret_paths", 0))
    if paths:
        terminalreporter.write_line(f"secret leak tests: fed {fed} secrets through {paths} paths")
