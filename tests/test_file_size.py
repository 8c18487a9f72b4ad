"""No module of ``toolkit/`` or ``widgets/`` over 600 lines, unless the decisions say why.

A file that grows past a screenful of screenfuls holds more than one thing: split it along
its seams, as ``secrets/pki`` is. The exceptions are the rows of the ``docs/decisions.md``
section "Files over 600 lines (issue 36)", each a path and why that one must be long; a row
for a file that is no longer over the limit fails too, so the list stays true.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("toolkit", "widgets")
LIMIT = 600
SECTION = "## Files over 600 lines (issue 36)"


def line_counts(root: Path = ROOT) -> dict[str, int]:
    """Lines of every Python file under the folders, by its path from the root."""
    return {
        path.relative_to(root).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for folder in FOLDERS
        for path in sorted((root / folder).rglob("*.py"))
    }


def allowed(decisions: str) -> dict[str, str]:
    """The files the decisions' section lets be long, with why."""
    if SECTION not in decisions:
        return {}
    section = decisions.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        path = cells[0].strip("`")
        if line.startswith("|") and len(cells) >= 2 and re.fullmatch(r"[\w./]+\.py", path):
            rows[path] = cells[1]
    return rows


def too_long(counts: dict[str, int], exceptions: dict[str, str]) -> list[str]:
    return [
        f"{path}: {lines} lines"
        for path, lines in sorted(counts.items(), key=lambda item: -item[1])
        if lines > LIMIT and path not in exceptions
    ]


def _decisions() -> str:
    return (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8")


def test_no_module_is_over_600_lines_unless_the_decisions_say_why() -> None:
    offenders = too_long(line_counts(), allowed(_decisions()))
    assert not offenders, (
        f"over {LIMIT} lines: split each along its seams, or say in docs/decisions.md "
        f"({SECTION!r}) why it must be long:\n  " + "\n  ".join(offenders)
    )


def test_every_long_file_the_decisions_allow_is_still_long() -> None:
    counts = line_counts()
    stale = [p for p in allowed(_decisions()) if counts.get(p, 0) <= LIMIT]
    assert not stale, (
        f"docs/decisions.md allows these to exceed {LIMIT} lines, but they do not: "
        + (", ".join(stale))
    )


def test_a_long_file_is_named_with_its_length_and_an_allowed_one_is_not() -> None:
    counts = {"toolkit/big.py": 601, "toolkit/small.py": 600, "toolkit/kept.py": 900}
    decisions = f"{SECTION}\n\n| file | why |\n|---|---|\n| `toolkit/kept.py` | one table |\n"
    assert allowed(decisions) == {"toolkit/kept.py": "one table"}
    assert too_long(counts, allowed(decisions)) == ["toolkit/big.py: 601 lines"]
