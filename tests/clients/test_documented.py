"""The "Official clients" section of docs/differences.md names tests that exist.

Each difference a client shows is documented with the test that pins it down;
this keeps the two from drifting apart (a renamed test, a dropped row).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _section(text: str, heading: str) -> str:
    found = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert found, f"docs/differences.md has no section {heading!r}"
    return found.group(1)


def test_every_documented_client_difference_names_a_test_that_exists() -> None:
    section = _section((ROOT / "docs" / "differences.md").read_text(), "Official clients")
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    named = {name for row in rows[1:] for name in re.findall(r"`(test_\w+)`", row.split("|")[-2])}
    defined = {
        name
        for path in (ROOT / "tests" / "clients").glob("test_*.py")
        for name in re.findall(r"^def (test_\w+)", path.read_text(), re.M)
    }
    assert len(rows) - 1 >= 5 and all("`test_" in row.split("|")[-2] for row in rows[1:])
    assert named <= defined, sorted(named - defined)
    # The two values pytfe cannot hold are among them.
    assert {
        "test_pytfe_reads_the_exited_and_errored_statuses_as_unknown",
        "test_pytfe_names_the_policy_mocks_permission_sentinel_mocks",
    } <= named
