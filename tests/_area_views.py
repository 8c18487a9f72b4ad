"""The clients' views, derived, with the demo sandbox and a filler for each required
parameter: shared by the house tests that run every view (its coverage record, its
progress bar), so that each test file holds none of the other's internals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from tests.test_naming_rule import ACTIONS, _public_calls, _returns
from toolkit import PlatformClient
from toolkit._area import Area
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

__all__ = ["NOT_VIEWS", "_area", "_views", "clients", "fillers"]

# Frame-returning calls that are not views of what a server holds, and why.
NOT_VIEWS = {
    "across": "a combinator over another view (its record: tests/test_completeness.py)",
    "revocation_plan": "a plan of writes built from the ids given, nothing read",
    "remove_agents": "an action's plan and outcome",
    "remove_planned": "an action's outcome",
}


@pytest.fixture(scope="module")
def clients() -> Iterator[dict[str, Any]]:
    with (
        Sandbox() as sandbox,
        SecretsClient(sandbox.address, sandbox.token) as secrets,
        PlatformClient(sandbox.address, sandbox.token) as platform,
    ):
        yield {"secrets": secrets, "platform": platform}


def _views() -> list[tuple[str, str]]:
    return sorted(
        {
            (cls.__name__, name)
            for cls, name, member in _public_calls()
            if _returns(member) is pd.DataFrame and name not in ACTIONS and name not in NOT_VIEWS
        }
    )


def _area(clients: dict[str, Any], class_name: str) -> Any:
    for client in clients.values():
        for area in vars(client).values():
            if isinstance(area, Area) and any(c.__name__ == class_name for c in type(area).__mro__):
                return area
    raise AssertionError(f"no client has an area of class {class_name}")


@pytest.fixture(scope="module")
def fillers(clients: dict[str, Any]) -> dict[str, Any]:
    """A value for each required parameter a view takes, from the demo's own names."""
    platform, secrets = clients["platform"], clients["secrets"]
    return {
        "organization": "acme",
        "pool_id": platform.agent_pools.pools_frame("acme").index[0],
        "workspace_id": platform.organizations.workspaces_frame("acme").index[0],
        "policy_set_id": platform.organizations.policy_sets_frame("acme").index[0],
        "capability": "read",
        "path": "secret/data/app",
        "ref": ["default"],
        "principal": ["default"],
        "frame": secrets.leases.leases_by_mount(mounts=["broker/"]),
    }
