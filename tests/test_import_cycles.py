"""No circle in the house: no module of ``toolkit/``, ``widgets/`` or ``benchmarks/`` imports
itself back through others.

An import counts wherever it is written: at module level, under ``if TYPE_CHECKING:``, and
inside a function. An import inside a function is allowed for an optional extra or for
import time only, and ``docs/decisions.md`` lists each such one that is not counted, in its
section "Imports inside functions (issue 36)": a listed import is left out of the graph, an
unlisted one is an edge like any other, and a listed one that is no longer written fails
(the list holds no stale row).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("toolkit", "widgets", "benchmarks")
DECISIONS = ROOT / "docs" / "decisions.md"
SECTION = "## Imports inside functions (issue 36)"


@dataclass(frozen=True)
class Import:
    """One import of one module of the house by another."""

    importer: str
    imported: str
    line: int
    in_function: bool


def modules(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Every module by its dotted name (a package by its own name, for its ``__init__``)."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _owner(name: str, known: dict[str, Path]) -> str | None:
    """The module of the house that ``name`` (a module, or a name in one) lives in."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    # ``from a import b``: the module ``a.b`` when there is one, else a name in ``a``.
    return [f"{prefix}.{alias.name}" for alias in node.names] + [prefix]


def imports(root: Path, packages: Iterable[str] = PACKAGES) -> list[Import]:
    """Every import of a module of the house by another, wherever it is written."""
    known = modules(root, packages)
    found: list[Import] = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"

        def visit(
            node: ast.AST, in_function: bool, module: str = module, is_package: bool = is_package
        ) -> None:
            for child in ast.iter_child_nodes(node):
                inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
                if isinstance(child, ast.Import | ast.ImportFrom):
                    names = _targets(child, module, is_package)
                    if isinstance(child, ast.ImportFrom):
                        # ``from a import b``: a.b if it is a module, else a.
                        subs = [n for n in names[:-1] if n in known]
                        rest = len(subs) < len(names) - 1
                        names = subs + ([names[-1]] if rest else [])
                    for name in names:
                        owner = _owner(name, known)
                        if owner is not None and owner != module:
                            found.append(Import(module, owner, child.lineno, inside))
                visit(child, inside)

        visit(tree, False)
    return found


def listed(text: str) -> set[tuple[str, str]]:
    """The (importer, imported) pairs the decisions' section lists, from its table rows."""
    if SECTION not in text:
        return set()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    pairs = set()
    for line in section.splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        row = line.startswith("|") and len(cells) >= 3 and cells[0] != "module"
        if row and re.fullmatch(r"[\w.]+", cells[0]):
            pairs.add((cells[0], cells[1]))
    return pairs


def graph(found: Iterable[Import], exempt: set[tuple[str, str]]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for one in found:
        if one.in_function and (one.importer, one.imported) in exempt:
            continue
        edges.setdefault(one.importer, set()).add(one.imported)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other (Tarjan's strongly connected components
    of more than one module), each as one circle through them, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def strong(start: str) -> None:
        # Iterative, so that a long chain does not reach Python's recursion limit.
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, rest = work[-1]
            for nxt in rest:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        groups.append(sorted(group))

    for node in sorted(set(edges) | {m for ms in edges.values() for m in ms}):
        if node not in index:
            strong(node)
    return sorted(_circle_through(group, edges) for group in groups)


def _circle_through(group: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A shortest way from the group's first module back to itself, inside the group."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(edges.get(node, set()) & members):
            if nxt == start:
                return paths[node] + [start]
            if nxt not in paths:
                paths[nxt] = paths[node] + [nxt]
                queue.append(nxt)
    raise AssertionError(f"no way back to {start} in {group}")


def _house() -> tuple[list[Import], set[tuple[str, str]]]:
    return imports(ROOT), listed(DECISIONS.read_text(encoding="utf-8"))


def test_no_module_of_the_house_imports_itself_back_through_others() -> None:
    found, exempt = _house()
    loops = circles(graph(found, exempt))
    assert not loops, "import circles (module-level, type-only and unlisted function-level):\n" + (
        "\n".join("  " + " -> ".join(loop) for loop in loops)
    )


def test_every_import_inside_a_function_the_decisions_list_is_still_written() -> None:
    found, exempt = _house()
    assert exempt, f"docs/decisions.md has no rows under {SECTION!r}"
    written = {(i.importer, i.imported) for i in found if i.in_function}
    stale = sorted(exempt - written)
    assert not stale, "docs/decisions.md lists imports inside functions no longer written: " + (
        ", ".join(f"{a} -> {b}" for a, b in stale)
    )


# -- the checker itself, on small trees ---------------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    "written",
    [
        "from .a import thing\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import thing\n",
        "def later():\n    from . import a\n",
        "import pkg.a\n",
    ],
    ids=["module level", "type only", "inside a function", "absolute"],
)
def test_a_circle_is_found_however_its_import_is_written(tmp_path: Path, written: str) -> None:
    root = _tree(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/a.py": "from .b import other\n", "pkg/b.py": written},
    )
    loops = circles(graph(imports(root, ["pkg"]), set()))
    assert loops == [["pkg.a", "pkg.b", "pkg.a"]]


def test_an_import_inside_a_function_the_decisions_list_does_not_close_a_circle(
    tmp_path: Path,
) -> None:
    root = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .b import other\n",
            "pkg/b.py": "def later():\n    from .a import thing\n",
        },
    )
    decisions = (
        f"{SECTION}\n\n| module | imports | why |\n|---|---|---|\n| `pkg.b` | `pkg.a` | x |\n"
    )
    assert listed(decisions) == {("pkg.b", "pkg.a")}
    assert circles(graph(imports(root, ["pkg"]), listed(decisions))) == []
    # The same import at module level counts, listed or not.
    (root / "pkg/b.py").write_text("from .a import thing\n", encoding="utf-8")
    assert circles(graph(imports(root, ["pkg"]), listed(decisions))) != []


def test_a_name_imported_from_a_package_is_an_import_of_the_package_not_of_a_module(
    tmp_path: Path,
) -> None:
    root = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "VALUE = 1\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/a.py": "from .. import VALUE\nfrom . import b\n",
            "pkg/sub/b.py": "",
        },
    )
    pairs = {(i.importer, i.imported) for i in imports(root, ["pkg"])}
    assert pairs == {("pkg.sub.a", "pkg"), ("pkg.sub.a", "pkg.sub.b")}
