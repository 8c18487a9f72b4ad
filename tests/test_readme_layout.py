"""The README's layout table names every module and package of the house, and nothing else.

A row's first cell names paths (``toolkit/_frames.py``, ``_masking.py``: a bare name
sits beside the first path); its second cell may name a folder's parts (``layer.py`` in
the ``toolkit/_http/`` row). Every top-level module and package of ``toolkit/``, every
module of ``toolkit/_http/`` and ``toolkit/_spec/``, and the top folders must be named,
and every name must exist: a module added, moved or removed fails here until the table
says so.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = re.compile(r"`([^`\s]+)`")
TOP_FOLDERS = ("widgets", "notebooks", "binder", "tests", "benchmarks")
# Folders whose every module the table names one by one.
SPELLED_OUT = ("toolkit/_http", "toolkit/_spec")


def layout_rows(readme: str) -> list[tuple[str, str]]:
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and not set(cells[0]) <= {"-", ""}:
            rows.append((cells[0], cells[1]))
    return rows[1:]  # the header row


def _is_path(token: str) -> bool:
    return token.endswith((".py", "/")) or token.startswith(("toolkit/", "widgets"))


def named_paths(rows: list[tuple[str, str]]) -> set[str]:
    """Every path the table names, as a path from the repository's root."""
    named = set()
    for first, second in rows:
        paths = [t for t in CODE.findall(first) if _is_path(t)]
        if not paths:
            continue
        lead = paths[0].rstrip("/")
        beside = str(Path(lead).parent)
        inside = beside if lead.endswith(".py") else lead
        named.add(lead)
        for token in paths[1:]:
            named.add(
                token.rstrip("/") if "/" in token.rstrip("/") else f"{beside}/{token}".rstrip("/")
            )
        base = inside
        for token in CODE.findall(second):
            if token.startswith(("toolkit/", "widgets/")) and token.endswith(".py"):
                named.add(token)  # a whole path
            elif token.endswith("/") and "/" in token.rstrip("/"):
                base = f"{inside}/{token.rstrip('/')}"  # a sub-folder: the names after it are in it
                named.add(base)
            elif token.endswith(".py") and "/" not in token:
                named.add(f"{base}/{token}")
            elif token.endswith("/"):
                named.add(f"{base}/{token.rstrip('/')}")
    return {p.removeprefix("./") for p in named}


def modules_to_name() -> set[str]:
    wanted = set(TOP_FOLDERS)
    for path in (ROOT / "toolkit").iterdir():
        if path.is_symlink() or path.name.startswith(("__", ".")):
            continue
        if path.suffix == ".py" or (path / "__init__.py").exists():
            wanted.add(f"toolkit/{path.name}")
    for folder in SPELLED_OUT:
        for path in (ROOT / folder).glob("*.py"):
            if path.name != "__init__.py":
                wanted.add(f"{folder}/{path.name}")
    return wanted


def test_the_layout_table_names_every_module_and_package() -> None:
    named = named_paths(layout_rows((ROOT / "README.md").read_text()))
    missing = sorted(modules_to_name() - named)
    assert not missing, f"the README's layout table does not name: {missing}"


def test_everything_the_layout_table_names_exists() -> None:
    named = named_paths(layout_rows((ROOT / "README.md").read_text()))
    # ``<mount>`` stands for any one folder
    gone = sorted(p for p in named if not any(ROOT.glob(re.sub(r"<[^>]+>", "*", p))))
    assert not gone, f"the README's layout table names what is not there: {gone}"


def test_a_module_left_out_of_the_table_is_missed() -> None:
    rows = [
        ("`toolkit/_frames.py`, `_masking.py`", "frames; masking"),
        ("`toolkit/_http/`", "`layer.py` (the facade)"),
    ]
    named = named_paths(rows)
    assert named == {
        "toolkit/_frames.py",
        "toolkit/_masking.py",
        "toolkit/_http",
        "toolkit/_http/layer.py",
    }
    assert "toolkit/_time.py" not in named
