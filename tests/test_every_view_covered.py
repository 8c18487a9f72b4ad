"""Every view of both clients carries its completeness record (issue 23).

The views are derived, as the naming test derives them: each public call of every
area annotated to return a DataFrame, less the actions (verbs that return what they
did) and the few listed below with why. Each is run against the demo sandbox with
its required parameters filled from the demo's own names; a view that returns a frame
without ``attrs["coverage"]`` fails here, so a new view cannot read as "unproven", and
a new required parameter with no filler fails too, naming it.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from tests.test_naming_rule import ACTIONS, _public_calls, _returns
from toolkit import PlatformClient
from toolkit._area import Area
from toolkit._coverage import coverage_of
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

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


@pytest.mark.parametrize(("class_name", "name"), _views(), ids=lambda v: str(v))
def test_every_view_files_what_it_could_read(
    clients: dict[str, Any], fillers: dict[str, Any], class_name: str, name: str
) -> None:
    method = getattr(_area(clients, class_name), name)
    kwargs = {}
    for param, spec in inspect.signature(method).parameters.items():
        if spec.default is spec.empty and spec.kind not in (spec.VAR_POSITIONAL, spec.VAR_KEYWORD):
            assert param in fillers, f"{class_name}.{name}: add a filler for {param!r} here"
            kwargs[param] = fillers[param]
    frame = method(**kwargs)
    assert isinstance(frame, pd.DataFrame)
    (record,) = coverage_of(frame)
    assert record.view
    # The demo's owner token reads everything but the users of teams (the sandbox's
    # teams carry no users relationship), which effective_access says.
    assert record.complete or name == "effective_access", record.summary()
