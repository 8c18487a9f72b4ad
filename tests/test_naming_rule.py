"""The naming rule for what comes back (docs/decisions.md, "Names").

``list_<things>()`` returns names; ``<things>_frame()`` returns a DataFrame; a view
has a noun of its own (``leases_by_mount``, ``permissions_matrix``); an action is a
verb and returns what it did. The return annotations are resolved with
:func:`typing.get_type_hints`, so an alias (``Names``) counts as what it stands for.
The package was never released: no old name is kept.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import typing
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

import toolkit.platform
import toolkit.secrets
from toolkit import PlatformClient, SecretsClient
from toolkit.drift import Snapshots
from toolkit.platform._base import PlatformArea
from toolkit.secrets._base import SecretsArea

# Names the areas import for type checking only, to resolve their annotations with.
_TYPE_ONLY = {
    "SecretsClient": SecretsClient,
    "PlatformClient": PlatformClient,
    "Snapshots": Snapshots,
}

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
DECISIONS = Path(__file__).resolve().parent.parent / "docs" / "decisions.md"


def _views_in(decisions: str) -> set[str]:
    """The names the "Views" row of the decisions' "Names" table lists as the views."""
    rows = [line for line in decisions.splitlines() if line.startswith("| Views | ")]
    assert len(rows) == 1, "docs/decisions.md has no single 'Views' row"
    choice = rows[0].split(" | ")[1]
    assert "these are the views: " in choice, rows[0]
    return set(re.findall(r"`(\w+)`", choice.split("these are the views: ", 1)[1]))


def test_the_decisions_list_the_views_this_test_allows() -> None:
    assert _views_in(DECISIONS.read_text(encoding="utf-8")) == VIEWS
    # A row that drifted (one view gone, one not in the code) is caught.
    row = "| Views | a noun, these are the views: `all_agents`, `agent_list` | why |"
    assert _views_in(row) == {"all_agents", "agent_list"} != VIEWS


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
    "tidy",
}


def _actions_in(decisions: str) -> set[str]:
    """The verbs the "Actions" row of the decisions' "Names" table names."""
    rows = [line for line in decisions.splitlines() if line.startswith("| Actions | ")]
    assert len(rows) == 1, "docs/decisions.md has no single 'Actions' row"
    return set(re.findall(r"`(\w+)`", rows[0].split(" | ")[1]))


def test_the_actions_the_decisions_name_are_actions_of_the_clients() -> None:
    # The row gives examples ("..."): each is an action this test allows, and every
    # action this test allows is a public call of an area.
    named = _actions_in(DECISIONS.read_text(encoding="utf-8"))
    assert named and named <= ACTIONS, sorted(named - ACTIONS)
    public = {name for _, name, _ in _public_calls()}
    assert public >= ACTIONS, sorted(ACTIONS - public)
    row = "| Actions | a verb (`remove_agents`, `purge_everything`) returns what it did | why |"
    assert not _actions_in(row) <= ACTIONS


# Calls that break the rule today, each with why it is not renamed yet; a name leaves this
# table when it is renamed (the test below fails while it is listed but gone).
NOT_YET: dict[str, str] = {}


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


def _returns(member: Any) -> Any:
    """What ``member`` is annotated to return, resolved (aliases and strings included)."""
    return typing.get_type_hints(member, localns=_TYPE_ONLY).get("return")


def _public_calls() -> Iterator[tuple[type, str, Any]]:
    for cls in _area_classes():
        for name, member in vars(cls).items():
            if not name.startswith("_") and inspect.isfunction(member):
                yield cls, name, member


def _returning(kind: Any) -> Iterator[tuple[str, str]]:
    for cls, name, member in _public_calls():
        if _returns(member) == kind:
            yield cls.__name__, name


def test_every_public_call_of_an_area_has_a_return_annotation_that_resolves() -> None:
    missing = [
        f"{c.__name__}.{n}" for c, n, m in _public_calls() if "return" not in m.__annotations__
    ]
    assert missing == []
    for _, _, member in _public_calls():
        _returns(member)  # raises NameError naming what does not resolve


def test_an_alias_of_names_is_read_as_names() -> None:
    Names = list[str]  # noqa: N806 - the alias the areas use

    def list_things() -> Names:
        return []

    # Under ``from __future__ import annotations`` the annotation is the string "Names".
    assert list_things.__annotations__["return"] == "Names"
    assert typing.get_type_hints(list_things, localns={"Names": Names})["return"] == list[str]
    # The reading a string comparison missed: calls annotated ``-> Names`` are seen.
    assert ("Policies", "list_policies") in set(_returning(list[str]))


def test_every_call_that_returns_names_is_a_list_call_or_an_action() -> None:
    stray = [
        f"{cls}.{name}"
        for cls, name in _returning(list[str])
        if not name.startswith("list_") and name not in ACTIONS and f"{cls}.{name}" not in NOT_YET
    ]
    assert stray == []
    present = {f"{c.__name__}.{n}" for c, n, _ in _public_calls()}
    assert set(NOT_YET) <= present, "a renamed call is still listed in NOT_YET"


def test_every_call_that_returns_a_frame_is_a_frame_call_a_view_or_an_action() -> None:
    stray = [
        f"{cls}.{name}"
        for cls, name in _returning(pd.DataFrame)
        if not name.endswith("_frame") and name not in VIEWS | ACTIONS
    ]
    assert stray == []
    # A list_ call returning a frame was the old ambiguity (list_irrevocable).
    assert [n for _, n in _returning(pd.DataFrame) if n.startswith("list_")] == []


# Class names defined twice today (none: the platform sandbox's errors and grant record were
# renamed by its rework, issue 25 item 3); a name leaves this table when it is renamed.
TWICE_YET: dict[str, str] = {}


def _class_definitions() -> dict[str, list[str]]:
    """Every class defined in the package and the forms (nested ones included), by name."""
    root = Path(toolkit.__file__).parent.parent
    where: dict[str, list[str]] = {}
    for folder in ("toolkit", "widgets"):
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef):
                    where.setdefault(node.name, []).append(str(path.relative_to(root)))
    return where


def test_no_class_name_means_two_things() -> None:
    # A traceback or a repr that says `Area` or `Seal` names one class, not one of three.
    twice = {name: paths for name, paths in _class_definitions().items() if len(paths) > 1}
    assert sorted(set(twice) - set(TWICE_YET)) == [], twice
    assert set(TWICE_YET) <= set(twice), "a renamed class is still listed in TWICE_YET"


# One verb set on both clients: read (one record), create, update, write (where the API
# has one call that creates or replaces), delete, list_ (names). A verb of another set,
# or a bare noun fetching one record (``agent(id)``), is refused.
OTHER_VERBS = {"get", "fetch", "add", "remove", "put"}
# Actions whose verb is part of what they do to many things, not a record's CRUD.
VERB_ACTIONS = {"remove_agents", "remove_planned", "remove_from_provider"}


def test_both_clients_use_one_verb_set() -> None:
    other = [
        f"{cls.__name__}.{name}"
        for cls, name, _ in _public_calls()
        if name.split("_")[0] in OTHER_VERBS and name not in VERB_ACTIONS
    ]
    assert other == []
    # A record fetched by its id is read_<thing>, never the bare noun.
    nouns = [
        f"{cls.__name__}.{name}"
        for cls, name, member in _public_calls()
        if name in {"agent", "pool", "organization", "grant", "parameter"}
    ]
    assert nouns == []


# Views over several organizations go through ``organizations.across`` (as namespaces
# through ``namespaces.across``) or take ``organizations=`` (``team_access.grants_frame``):
# a long ``<view>_all_organizations_frame`` name is not to come back.
def _long_across_names(names: Iterable[tuple[str, str]]) -> list[str]:
    return [f"{owner}.{name}" for owner, name in names if "all_organizations" in name]


def _client_calls() -> Iterator[tuple[str, str]]:
    """Every public call of both clients and of their areas."""
    for cls in (SecretsClient, PlatformClient):
        for name, member in inspect.getmembers(cls):
            if not name.startswith("_") and callable(member):
                yield cls.__name__, name
    for area, name, _ in _public_calls():
        yield area.__name__, name


def test_no_call_over_several_organizations_has_a_long_name() -> None:
    calls = list(_client_calls())
    assert ("TeamAccess", "grants_frame") in calls and ("Organizations", "across") in calls
    assert _long_across_names(calls) == []
    # The check can fail: the names this rule retired are caught.
    breach = [("TeamAccess", "permissions_matrix_all_organizations_frame")]
    assert _long_across_names(calls + breach) == [
        "TeamAccess.permissions_matrix_all_organizations_frame"
    ]
