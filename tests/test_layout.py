"""tests/ mirrors the package: a newcomer who changes a module finds its tests by its name.

- a folder of tests is a package's (``tests/_http`` for ``toolkit/_http``,
  ``tests/widgets`` for ``widgets``), a slow suite's, or a helper's;
- a test file at the root names a module or package at the package's root
  (``test_frames.py`` for ``toolkit/_frames.py``, ``test_spec_tables.py`` for
  ``toolkit/_spec``), names the module it tests in a table here, or is one of the
  house-wide checks listed here with what it holds.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import SLOW_FOLDERS

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# Folders that hold no package's tests: the real servers the suites start, reference
# clients driven side by side with ours, and data files.
HELPERS = {"servers", "clients", "data", "__pycache__"}
# Root test files that check the house as a whole, not one module.
HOUSE_WIDE = {
    "test_answer_fuzz.py": "every view of both clients under spoiled answers",
    "test_auth_matrix.py": "every endpoint of both APIs, every kind of caller",
    "test_completeness.py": "a walk of either client files what it could not read",
    "test_completeness_views.py": "derived views keep their source's completeness record",
    "test_every_view_covered.py": "every frame view of both clients carries a coverage record",
    "test_concurrency.py": "the fan-out paths of both clients against sandboxes",
    "test_fuzz.py": "every endpoint of both sandbox APIs under bad input",
    "test_layout.py": "this file",
    "test_makefile.py": "the Makefile, the README's commands and pictures",
    "test_naming_rule.py": "the names of both clients",
    "test_paging.py": "JSON:API paging in every platform view",
    "test_paths.py": "every call of both clients that puts a name in an address",
    "test_public_api.py": "what the package offers",
    "test_races.py": "concurrent writes against both sandboxes",
    "test_secret_paths.py": "known secrets through every call of both clients",
}
# Root test files named for what they check rather than for their module: the module.
NAMED_FOR_WHAT = {
    "test_acl_parsing.py": "toolkit/_spec/acl.py",
    "test_connection_card.py": "toolkit/_card.py",
    "test_evidence.py": "toolkit/report.py",
    "test_login_config.py": "toolkit/_config.py",
}


def _names(folder: Path) -> set[str]:
    """Modules and packages directly in ``folder``, without a leading underscore."""
    found = {p.stem.lstrip("_") for p in folder.glob("*.py")}
    found |= {p.name.lstrip("_") for p in folder.iterdir() if (p / "__init__.py").is_file()}
    return found - {"init", "main"}


def test_each_folder_of_tests_is_a_packages_a_slow_suites_or_a_helpers() -> None:
    packages = {p.name for p in (ROOT / "toolkit").iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in TESTS.iterdir() if p.is_dir()}
    stray = folders - packages - {"widgets"} - set(SLOW_FOLDERS) - HELPERS
    assert stray == set()


def test_each_root_test_file_names_a_root_module_or_checks_the_whole_house() -> None:
    modules = _names(ROOT / "toolkit")
    stray = []
    for path in sorted(TESTS.glob("test_*.py")):
        words = path.stem.removeprefix("test_").split("_")
        named = any("_".join(words[:n]) in modules for n in range(1, len(words) + 1))
        if not named and path.name not in {*HOUSE_WIDE, *NAMED_FOR_WHAT}:
            stray.append(path.name)
    assert stray == [], "\n".join(stray)
    assert set(HOUSE_WIDE) | set(NAMED_FOR_WHAT) <= {p.name for p in TESTS.glob("test_*.py")}
    assert all((ROOT / module).is_file() for module in NAMED_FOR_WHAT.values())


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
