"""tests/ mirrors the package: a newcomer who changes a module finds its tests by its name.

- a folder of tests is a package's (``tests/_http`` for ``toolkit/_http``,
  ``tests/widgets`` for ``widgets``), a slow suite's, or a helper's;
- a test file at the root names a module or package at the package's root
  (``test_frames.py`` for ``toolkit/_frames.py``, ``test_spec_tables.py`` for
  ``toolkit/_spec``), names the module it tests in a table here, or is one of the
  house-wide checks listed here with what it holds;
- inside a package's folder, a folder is a sub-package's (``tests/sandbox/secrets``) and a
  test file names a module of that package (``tests/secrets/test_ad.py`` for
  ``toolkit/secrets/ad.py``; an engine of ``sandbox/secrets/engines`` is tested flat in
  ``tests/sandbox/secrets``) or the table names what it tests.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import SLOW_FOLDERS

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# Folders that hold no package's tests: the real servers the suites start, reference
# clients driven side by side with ours, and data files.
HELPERS = {"servers", "clients", "data", "mutation", "__pycache__"}
# Root test files that check the house as a whole, not one module.
HOUSE_WIDE = {
    "test_answer_fuzz.py": "every view of both clients under spoiled answers",
    "test_auth_matrix.py": "every endpoint of both APIs, every kind of caller",
    "test_coverage_walks.py": "a walk of either client files what it could not read",
    "test_coverage_views.py": "derived views keep their source's coverage record",
    "test_every_view_covered.py": "every frame view of both clients carries a coverage record",
    "test_concurrency.py": "the fan-out paths of both clients against sandboxes",
    "test_dead_code.py": "nothing in the package is unused unless kept with a reason",
    "test_docstring_references.py": "every docstring cross-reference names something that exists",
    "test_readme_layout.py": "the README's layout table names every module, and only those",
    "test_fuzz.py": "every endpoint of both sandbox APIs under bad input",
    "test_file_size.py": "no module over 600 lines unless the decisions say why",
    "test_import_cycles.py": "no module of the house imports itself back through others",
    "test_layout.py": "this file",
    "test_makefile.py": "the Makefile, the README's commands and pictures",
    "test_naming_rule.py": "the names of both clients",
    "test_paging.py": "JSON:API paging in every platform view",
    "test_paths.py": "every call of both clients that puts a name in an address",
    "test_public_api.py": "what the package offers",
    "test_races.py": "concurrent writes against both sandboxes",
    "test_secret_paths.py": "known secrets through every call of both clients",
}
# Test files named for what they check rather than for their module, by their path under
# tests/: the module, or the package they check as a whole.
NAMED_FOR_WHAT = {
    "test_acl_parsing.py": "toolkit/_spec/hcl.py",
    "test_connection_card.py": "toolkit/_card.py",
    "test_evidence.py": "toolkit/report.py",
    "test_login_config.py": "toolkit/_config.py",
    "_http/test_fan_out.py": "toolkit/_http/fanout.py",
    "_http/test_hostile_servers.py": "toolkit/_http",
    "_http/test_hostile_servers_bounds.py": "toolkit/_http",
    "_http/test_hostile_servers_review.py": "toolkit/_http",
    "_http/test_proxies.py": "toolkit/_http/transport.py",
    "fleet/test_history.py": "toolkit/history.py",
    "platform/test_agent_capacity.py": "toolkit/platform/agent_pools.py",
    "platform/test_effective_access.py": "toolkit/platform/team_access.py",
    "platform/test_platform_across_organizations.py": "toolkit/platform/organizations.py",
    "sandbox/test_cli.py": "toolkit/__main__.py",
    "sandbox/test_house.py": "toolkit/sandbox/secrets",
    "sandbox/test_house_dialect.py": "toolkit/sandbox",
    "sandbox/test_layers.py": "toolkit/sandbox",
    "sandbox/test_one_door.py": "toolkit/sandbox",
    "sandbox/platform/test_platform_conventions.py": "toolkit/sandbox/platform/http",
    "sandbox/platform/test_platform_records.py": "toolkit/sandbox/platform/organizations.py",
    "sandbox/secrets/test_acl.py": "toolkit/sandbox/secrets/policies.py",
    "sandbox/secrets/test_access_truth.py": "toolkit/sandbox/secrets",
    "sandbox/secrets/test_conventions.py": "toolkit/sandbox/secrets/http",
    "secrets/test_certificate_estate.py": "toolkit/secrets/pki/estate.py",
    "secrets/test_engine_findings.py": "toolkit/findings.py",
    "secrets/test_lease_findings.py": "toolkit/secrets/leases/rules.py",
    "secrets/test_logins.py": "toolkit/secrets/auth.py",
    "secrets/test_radar.py": "toolkit/secrets/leases/radar.py",
    "secrets/test_radar_rules.py": "toolkit/secrets/leases/radar.py",
    "secrets/test_radar_time_bands_and_mounts.py": "toolkit/secrets/leases/radar.py",
    "secrets/test_revocation.py": "toolkit/secrets/leases/revocation.py",
    "secrets/test_revocation_crash.py": "toolkit/secrets/leases/revocation.py",
    "secrets/test_revocation_refusals.py": "toolkit/secrets/leases/revocation.py",
    "secrets/test_no_secret_shown.py": "toolkit/secrets",
    "secrets/test_token_sprawl.py": "toolkit/secrets/tokens/sprawl.py",
    "widgets/test_imports.py": "widgets/__init__.py",
    "widgets/test_labels_and_text.py": "widgets/_common.py",
    "widgets/test_secret_fields.py": "widgets",
}
# Packages whose sub-packages are tested flat in their parent's folder, not in a folder each:
# an engine's sandbox tests are tests/sandbox/secrets/test_<engine>.py.
FLAT = {"toolkit/sandbox/secrets/engines"}


def _packages(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if (p / "__init__.py").is_file())


def _names(folder: Path) -> set[str]:
    """Modules and packages directly in ``folder``, without a leading underscore."""
    found = {p.stem.lstrip("_") for p in folder.glob("*.py")}
    found |= {p.name.lstrip("_") for p in _packages(folder)}
    return found - {"init", "main"}


def _mirrors(tests: Path, root: Path) -> dict[Path, Path]:
    """Each folder of tests that mirrors a package, with the package: ``tests/<p>`` for
    ``toolkit/<p>``, ``tests/widgets`` for ``widgets``, and within them ``<q>`` for ``<p>/<q>``."""
    todo = [(tests / p.name, p) for p in _packages(root / "toolkit")]
    todo.append((tests / "widgets", root / "widgets"))
    found = {}
    while todo:
        folder, package = todo.pop()
        if folder.is_dir():
            found[folder] = package
            todo += [(folder / p.name, p) for p in _packages(package)]
    return found


def _unnamed(folder: Path, package: Path, listed: set[Path], flat: set[Path]) -> list[Path]:
    """Test files in ``folder`` that name no module of ``package`` (nor the package itself,
    nor a sub-package tested flat) and are not ``listed``; a first word that is the folder's
    own name is a prefix (``tests/sandbox/platform/test_platform_pools.py``)."""
    modules = _names(package)
    for sub in _packages(package):
        if sub in flat:
            modules |= _names(sub)
    own = folder.name.lstrip("_")
    stray = []
    for path in sorted(folder.glob("test_*.py")):
        words = path.stem.removeprefix("test_").split("_")
        if words[0] == own and len(words) > 1:
            words = words[1:]
        named = any("_".join(words[:n]) in modules for n in range(1, len(words) + 1))
        itself = path.stem == f"test_{package.name.lstrip('_')}"
        if not (named or itself or path in listed):
            stray.append(path)
    return stray


def test_each_folder_of_tests_is_a_packages_a_slow_suites_or_a_helpers() -> None:
    packages = {p.name for p in _packages(ROOT / "toolkit")}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir()}
    stray = folders - packages - {"widgets"} - set(SLOW_FOLDERS) - HELPERS
    assert stray == set()
    # Inside a package's folder, a folder is a sub-package's (tests/sandbox/secrets).
    mirrors = _mirrors(TESTS, ROOT)
    inner = [
        f
        for folder in mirrors
        for f in folder.iterdir()
        if f.is_dir() and f.name not in HELPERS and f not in mirrors
    ]
    assert inner == []


def test_each_root_test_file_names_a_root_module_or_checks_the_whole_house() -> None:
    listed = {TESTS / name for name in [*HOUSE_WIDE, *NAMED_FOR_WHAT]}
    stray = _unnamed(TESTS, ROOT / "toolkit", listed, set())
    assert stray == [], "\n".join(p.name for p in stray)
    assert set(HOUSE_WIDE) <= {p.name for p in TESTS.glob("test_*.py")}


def test_each_test_file_in_a_packages_folder_names_a_module_of_it() -> None:
    listed = {TESTS / name for name in NAMED_FOR_WHAT}
    flat = {ROOT / name for name in FLAT}
    stray = [
        str(path.relative_to(TESTS))
        for folder, package in sorted(_mirrors(TESTS, ROOT).items())
        for path in _unnamed(folder, package, listed, flat)
    ]
    assert stray == [], "\n".join(stray)


def test_the_table_names_test_files_that_exist_and_what_they_test() -> None:
    assert [name for name in NAMED_FOR_WHAT if not (TESTS / name).is_file()] == []
    assert [what for what in NAMED_FOR_WHAT.values() if not (ROOT / what).exists()] == []
    assert all((ROOT / name).is_dir() for name in FLAT)


def test_the_name_rule_finds_a_made_up_stray(tmp_path: Path) -> None:
    """A house built to break the rule: the check names exactly what breaks it."""
    package = tmp_path / "toolkit/secrets"
    for name in ("__init__.py", "sprawl.py", "engines/__init__.py", "engines/ad/__init__.py"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("")
    (tmp_path / "toolkit/__init__.py").write_text("")
    folder = tmp_path / "tests/secrets"
    for name in (
        "test_sprawl.py",  # names its module
        "test_secrets.py",  # names the package itself
        "test_secrets_sprawl.py",  # the folder's name as a prefix
        "test_ad.py",  # an engine, tested flat
        "test_token_sprawl.py",  # a breach: there is no module ``token``
        "test_directory.py",  # a breach: the engine's other name
        "stray/test_sprawl.py",  # a folder that mirrors no package
    ):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("")
    assert _mirrors(tmp_path / "tests", tmp_path) == {folder: package}
    flat = {package / "engines"}
    found = _unnamed(folder, package, set(), flat)
    assert found == [folder / "test_directory.py", folder / "test_token_sprawl.py"]
    # Listed in the table, a file is no longer a stray; without the flat rule, an engine is.
    listed = {folder / "test_token_sprawl.py"}
    assert _unnamed(folder, package, listed, flat) == [folder / "test_directory.py"]
    assert folder / "test_ad.py" in _unnamed(folder, package, set(), set())


# What starts a process: a test that reaches one (itself or through a helper of its
# module) is a slow test, so that the fast suite runs no process, kernel or server binary.
STARTERS = {"subprocess", "Popen", "fork", "multiprocessing", "NotebookClient", "Tinyproxy"}
STARTER_MODULES = {"tests.sandbox._process"}
# Processes the fast suite may start, each with why.
FAST_PROCESSES = {
    ("test_makefile.py", "_dry_run"): "`make -n` prints the recipe and runs none of it",
}


def _is_slow(decorators: list[ast.expr]) -> bool:
    return any("slow" in ast.unparse(d) for d in decorators)


def _starts_a_process(node: ast.AST, starters: set[str]) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and child.id in starters:
            return True
        if isinstance(child, ast.Attribute) and child.attr in starters:
            return True
    return False


def test_every_test_that_starts_a_process_is_marked_slow() -> None:
    stray = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if path.relative_to(TESTS).parts[0] in SLOW_FOLDERS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(
            isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in n.targets)
            and "slow" in ast.unparse(n.value)
            for n in tree.body
        ):
            continue
        starters = set(STARTERS)
        for node in tree.body:  # names imported from a module that starts processes
            if isinstance(node, ast.ImportFrom) and any(
                (node.module or "").startswith(m) for m in STARTER_MODULES
            ):
                starters |= {a.asname or a.name for a in node.names}
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        # Helpers (and fixtures) that start one, followed one call deep.
        helpers = {
            f.name
            for f in functions
            if not f.name.startswith("test_")
            and (path.name, f.name) not in FAST_PROCESSES
            and _starts_a_process(f, starters)
        }
        for function in functions:
            if not function.name.startswith("test_") or _is_slow(function.decorator_list):
                continue
            uses = {a.arg for a in function.args.args}
            if _starts_a_process(function, starters | helpers) or uses & helpers:
                stray.append(f"{path.relative_to(TESTS)}::{function.name}")
    assert stray == [], "\n".join(stray)
