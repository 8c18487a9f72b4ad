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


# Names retired because each said two things (issue 36 item 3), with what replaced them. The
# test below refuses them in the code, the tests, the forms, the benchmarks, the notebooks,
# the README and the docs; this file alone may spell them.
RETIRED_MODULES = {
    "toolkit/catalog.py": "toolkit/sql_tables.py (the SQL layer; the plugin catalog keeps the word)",
    "toolkit/_spec/access.py": "toolkit/_spec/team_access.py (secrets/access answers who can)",
    "toolkit/_runbooks.py": "toolkit/_shipped.py (beside runbook.py, one letter apart)",
    "toolkit/runbooks": "toolkit/notebooks, the link to notebooks/ (beside runbook.py)",
    "tests/test_completeness.py": "tests/test_coverage_walks.py",
    "tests/test_completeness_views.py": "tests/test_coverage_views.py",
    "tests/real/test_completeness_real.py": "tests/real/test_coverage_real.py",
}
RETIRED_WORDS = {
    r"\bCatalog\b": "SQLTables (toolkit.sql_tables)",
    r"toolkit\.catalog\b|from \.catalog\b|\bcatalog\.py\b": "toolkit.sql_tables",
    r"_spec\.access\b|_spec/access\.py|_spec import access\b": "toolkit._spec.team_access",
    r"\b_runbooks\.py\b|toolkit\._runbooks\b|from \._runbooks\b|toolkit/runbooks\b": (
        "toolkit._shipped, toolkit/notebooks"
    ),
    r"\bIncompleteAudit\b": "PartialCoverage (coverage is the one word)",
    r"\bIncompleteAnswer\b": "PartialAnswer",
    r"(?i)\bcompleteness\b": "coverage (one word for one concept)",
    r"\bDirectory(Engine|Role|Config)?\b": "AD, ADEngine, ADRole, ADConfig (the engine is `ad`)",
}
ROOT = Path(__file__).resolve().parent.parent
_SCANNED = ("toolkit", "widgets", "tests", "benchmarks", "notebooks", "docs", "binder")
_SUFFIXES = {".py", ".md", ".ipynb", ".toml", ".cfg", ".txt", ""}


def _texts() -> Iterator[tuple[str, str]]:
    """Every text file a reader meets, as (path from the root, text); this file left out."""
    yield from (
        (name, (ROOT / name).read_text(encoding="utf-8"))
        for name in ("README.md", "Makefile", "pyproject.toml")
    )
    for folder in _SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            relative = path.relative_to(ROOT)
            if (
                path.is_file()
                and path.suffix in _SUFFIXES
                and path != Path(__file__).resolve()
                and not {"__pycache__", ".ipynb_checkpoints", "notebooks"} & set(relative.parts[1:])
            ):
                yield str(relative), path.read_text(encoding="utf-8", errors="replace")


def _retired_in(texts: Iterable[tuple[str, str]]) -> list[str]:
    return [
        f"{name}: {match.group(0)!r}, now {new}"
        for name, text in texts
        for pattern, new in RETIRED_WORDS.items()
        for match in re.finditer(pattern, text)
    ]


def test_no_retired_name_comes_back() -> None:
    back = [
        f"{old} exists again (now {new})"
        for old, new in RETIRED_MODULES.items()
        if (ROOT / old).exists() or (ROOT / old).is_symlink()
    ]
    assert back == []
    assert _retired_in(_texts()) == []
    # The check can fail: each retired spelling is caught, and its new name is not.
    for old in ("toolkit.catalog.Catalog", "from toolkit._spec.access import X", "IncompleteAudit",
                "the completeness record", "client.ad is a DirectoryEngine", "toolkit/_runbooks.py"):  # fmt: skip
        assert _retired_in([("x.py", old)]), old
    for new in ("toolkit.sql_tables.SQLTables", "from toolkit._spec.team_access import X",
                "PartialCoverage", "the coverage record", "client.ad is an AD", "the plugin catalog",
                "duckdb.CatalogException", "toolkit/_shipped.py"):  # fmt: skip
        assert _retired_in([("x.py", new)]) == [], new


def _one_letter_apart(names: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs of names equal once a leading underscore and a plural 's' are dropped."""
    seen: dict[str, str] = {}
    pairs = []
    for name in sorted(names):
        key = name.lstrip("_").removesuffix("s")
        if key in seen:
            pairs.append((seen[key], name))
        seen.setdefault(key, name)
    return pairs


def test_no_two_modules_of_a_folder_differ_by_an_underscore_or_a_plural() -> None:
    # runbook.py, _runbooks.py and runbooks/ were three things a letter apart.
    close = []
    for folder in ("toolkit", "widgets"):
        for where in [ROOT / folder, *(ROOT / folder).rglob("*")]:
            if where.is_dir() and not where.is_symlink() and where.name != "__pycache__":
                names = [
                    p.stem if p.suffix == ".py" else p.name
                    for p in where.iterdir()
                    if p.suffix == ".py" or (p.is_dir() and p.name != "__pycache__")
                ]
                close += [
                    f"{where.relative_to(ROOT)}: {a}, {b}" for a, b in _one_letter_apart(names)
                ]
    assert close == []
    assert _one_letter_apart(["runbook", "_runbooks", "runbooks", "report"]) == [
        ("_runbooks", "runbook"),
        ("_runbooks", "runbooks"),
    ]
