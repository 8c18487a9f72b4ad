"""The naming rule for what comes back (docs/decisions.md, "Names"), and the old names
kept for one release.

``list_<things>()`` returns names; ``<things>_frame()`` returns a DataFrame; a view
has a noun of its own (``leases_by_mount``, ``permissions_matrix``); an action is a
verb and returns what it did. Each renamed method keeps its old name for one
release, warning with the new one.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import pytest

import toolkit.platform
import toolkit.secrets
from toolkit import PlatformClient, SecretsClient
from toolkit._deprecation import RenamedMethod
from toolkit.platform._base import Area as PlatformArea
from toolkit.sandbox import Sandbox
from toolkit.secrets._base import Area as SecretsArea

# The views: DataFrames named for what they show, not for the resource they list.
VIEWS = {
    "across",
    "agent_capacity",
    "agents_by_status",
    "all_agents",
    "can",
    "catalog",
    "crl_entries",
    "effective_access",
    "effective_access_matrix",
    "explain",
    "expiry",
    "findings",
    "holders",
    "inventory",
    "keys_by_provider",
    "lease_counts",
    "leases_by_mount",
    "leases_by_namespace",
    "lease_radar",
    "library_status",
    "mounts_by_namespace",
    "organization_access",
    "permissions_long",
    "permissions_matrix",
    "policies_by_namespace",
    "revocation_plan",
    "rotation_audit",
    "session_certificates",
    "stale_agents",
    "summary",
    "token_sprawl",
    "topic_permissions",
    "vhost_permissions",
    "who_can",
}
# The actions: verbs that return what they did (names or a frame of outcomes).
ACTIONS = {
    "check_in",
    "delete_issuer",
    "lookup_leases",
    "manage_check_in",
    "remove_agents",
    "remove_planned",
    "renew_leases",
    "revoke_in_batches",
    "revoke_leases",
    "rotate_root",
    "test_policy",
}


def _area_classes() -> list[type]:
    found = set()
    for package in (toolkit.secrets, toolkit.platform):
        # Packages too (``toolkit.secrets.pki`` is one module a part).
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if (
                    inspect.isclass(value)
                    and issubclass(value, SecretsArea | PlatformArea)
                    and value.__module__ == module.__name__
                ):
                    found.add(value)
    return sorted(found, key=lambda c: c.__name__)


def _returning(kind: str) -> Iterator[tuple[str, str]]:
    for cls in _area_classes():
        for name, member in vars(cls).items():
            returns = str(getattr(member, "__annotations__", {}).get("return", ""))
            if not name.startswith("_") and inspect.isfunction(member) and kind in returns:
                yield cls.__name__, name


def test_every_call_that_returns_names_is_a_list_call_or_an_action() -> None:
    stray = [
        f"{cls}.{name}"
        for cls, name in _returning("list[str]")
        if not name.startswith("list_") and name not in ACTIONS
    ]
    assert stray == []


def test_every_call_that_returns_a_frame_is_a_frame_call_a_view_or_an_action() -> None:
    stray = [
        f"{cls}.{name}"
        for cls, name in _returning("DataFrame")
        if not name.endswith("_frame") and name not in VIEWS | ACTIONS
    ]
    assert stray == []
    # A list_ call returning a frame was the old ambiguity (list_irrevocable).
    assert [n for _, n in _returning("DataFrame") if n.startswith("list_")] == []


# -- the old names, one release ------------------------------------------------------------

FIXED_NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

# (client, area attribute, old name, new name, arguments from the demo data)
Args = Callable[[Any], tuple[tuple[Any, ...], dict[str, Any]]]


def _none(_client: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (), {}


def _acme(_client: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return ("acme",), {}


def _pool(client: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (str(client.agent_pools.pools_frame("acme").index[0]),), {}


def _policy_set(client: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (str(client.organizations.policy_sets_frame("acme").index[0]),), {}


def _workspace(client: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (str(client.organizations.workspaces_frame("acme").index[0]),), {}


def _now(_client: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return (), {"now": FIXED_NOW}


RENAMED: list[tuple[str, str, str, str, Args]] = [
    ("platform", "organizations", "list", "organizations_frame", _none),
    ("platform", "organizations", "teams", "teams_frame", _acme),
    ("platform", "organizations", "workspaces", "workspaces_frame", _acme),
    ("platform", "organizations", "policy_sets", "policy_sets_frame", _acme),
    ("platform", "agent_pools", "list", "pools_frame", _acme),
    ("platform", "agent_pools", "agents", "agents_frame", _pool),
    ("platform", "policy_set_parameters", "list", "parameters_frame", _policy_set),
    ("platform", "team_access", "list", "access_frame", _workspace),
    ("secrets", "broker", "roles", "roles_frame", _none),
    ("secrets", "database", "connections", "connections_frame", _none),
    ("secrets", "database", "roles", "roles_frame", _none),
    ("secrets", "database", "static_roles", "static_roles_frame", _now),
    ("secrets", "ad", "roles", "list_roles", _none),
    ("secrets", "ad", "sets", "list_sets", _none),
    ("secrets", "keymgmt", "keys", "keys_frame", _none),
    ("secrets", "keymgmt", "providers", "providers_frame", _none),
    ("secrets", "keymgmt", "key_versions", "key_versions_frame", _none),
    ("secrets", "keymgmt", "distributions", "distributions_frame", _none),
    ("secrets", "leases", "list", "list_leases", lambda _c: (("database/creds/",), {})),
    ("secrets", "leases", "list_irrevocable", "irrevocable_frame", _none),
    ("secrets", "password_policies", "list", "list_policies", _none),
    ("secrets", "plugins", "list", "list_plugins", lambda _c: (("secret",), {})),
    ("secrets", "policies", "list", "list_policies", _none),
    ("secrets", "tokens", "accessors", "list_accessors", _none),
    ("secrets", "tokens", "roles", "roles_frame", _none),
]


@pytest.fixture(scope="module")
def clients(demo_sandbox: Sandbox) -> Iterator[dict[str, Any]]:
    with (
        SecretsClient(demo_sandbox.address, demo_sandbox.token) as bao,
        PlatformClient(demo_sandbox.address, demo_sandbox.token) as platform,
    ):
        yield {"secrets": bao, "platform": platform}


@pytest.mark.parametrize(
    ("service", "area", "old", "new", "args"),
    RENAMED,
    ids=[f"{area}.{old}" for _, area, old, _, _ in RENAMED],
)
def test_an_old_name_warns_with_its_new_name_and_answers_as_the_new_call(
    clients: dict[str, Any], service: str, area: str, old: str, new: str, args: Args
) -> None:
    client = clients[service]
    positional, keywords = args(client)
    target = getattr(client, area)
    expected = getattr(target, new)(*positional, **keywords)
    message = rf"{type(target).__name__}\.{old}\(\) is deprecated .* use .*\.{new}\(\)"
    with pytest.warns(DeprecationWarning, match=message):
        answer = getattr(target, old)(*positional, **keywords)
    if isinstance(expected, pd.DataFrame):
        pd.testing.assert_frame_equal(answer, expected)
    else:
        assert answer == expected


def test_every_old_name_kept_has_its_test() -> None:
    kept = {
        (cls.__name__, name, value.new)
        for cls in _area_classes()
        for name, value in vars(cls).items()
        if isinstance(value, RenamedMethod)
    }
    clients = {"secrets": SecretsClient, "platform": PlatformClient}
    tested = set()
    for service, area, old, new, _ in RENAMED:
        source = inspect.getsource(clients[service])
        assigned = re.search(rf"self\.{area} = (\w+)\(", source)
        assert assigned, (service, area)
        tested.add((assigned.group(1), old, new))
    assert kept == tested


def test_an_old_name_is_not_offered_in_the_areas_repr(clients: dict[str, Any]) -> None:
    text = repr(clients["secrets"].policies)
    assert "list_policies" in text
    assert not re.search(r"\blist\b(?!_)", text.split("calls:", 1)[1])
