"""``python -m toolkit runbooks DIR``: the shipped runbooks copied out for a pip-installed user."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _runbooks(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolkit", "runbooks", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_every_runbook_is_copied_into_a_new_folder_byte_for_byte(tmp_path: Path) -> None:
    target = tmp_path / "ops" / "runbooks"
    done = _runbooks(str(target))
    assert done.returncode == 0, done.stderr
    assert len(RUNBOOKS) >= 12
    assert sorted(p.name for p in target.iterdir()) == [p.name for p in RUNBOOKS]
    for runbook in RUNBOOKS:
        assert (target / runbook.name).read_bytes() == runbook.read_bytes()
    assert f"Copied {len(RUNBOOKS)} runbooks" in done.stdout


@pytest.mark.slow
def test_a_runbook_already_there_is_not_overwritten_and_nothing_is_copied(
    tmp_path: Path,
) -> None:
    edited = tmp_path / RUNBOOKS[0].name
    edited.write_text("my edited runbook")
    done = _runbooks(str(tmp_path))
    assert done.returncode == 1
    assert RUNBOOKS[0].name in done.stderr and "--force" in done.stderr
    assert edited.read_text() == "my edited runbook"
    assert [p.name for p in tmp_path.iterdir()] == [RUNBOOKS[0].name]


@pytest.mark.slow
def test_force_overwrites_the_runbooks_already_there(tmp_path: Path) -> None:
    edited = tmp_path / RUNBOOKS[0].name
    edited.write_text("my edited runbook")
    done = _runbooks(str(tmp_path), "--force")
    assert done.returncode == 0, done.stderr
    assert edited.read_bytes() == RUNBOOKS[0].read_bytes()
    assert len(list(tmp_path.iterdir())) == len(RUNBOOKS)


@pytest.mark.slow
def test_a_file_in_place_of_the_folder_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "runbooks"
    blocker.write_text("")
    done = _runbooks(str(blocker))
    assert done.returncode == 1
    assert "not a folder" in done.stderr
