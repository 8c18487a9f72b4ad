"""Evidence is written only inside its folder, and its manifest can be checked again."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest

import toolkit
from toolkit import report

WHEN = datetime(2026, 11, 23, 3, 0, tzinfo=UTC)


def _frames() -> dict[str, pd.DataFrame]:
    leases = pd.DataFrame({"lease_id": ["db/creds/app/1"], "ttl": [3600]}).set_index("lease_id")
    return {"leases": leases}


def _header() -> report.Header:
    return report.Header(server="https://bao.example.com:8200", generated_at=WHEN)


def test_a_dangling_symbolic_link_in_the_folder_is_refused_and_nothing_is_written_outside(
    tmp_path: Path,
) -> None:
    folder, outside = tmp_path / "evidence", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (folder / "evidence-leases.csv").symlink_to(outside / "planted.csv")
    with pytest.raises(toolkit.InputError, match="evidence-leases.csv exists already"):
        report.save(_frames(), folder, _header())
    assert list(outside.iterdir()) == []
    assert [p.name for p in folder.iterdir()] == ["evidence-leases.csv"]


def test_an_evidence_folder_that_is_a_symbolic_link_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "evidence").symlink_to(real)
    with pytest.raises(toolkit.InputError, match="is a symbolic link"):
        report.save(_frames(), tmp_path / "evidence", _header())
    assert list(real.iterdir()) == []


def test_a_file_where_the_folder_belongs_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "evidence").write_text("not a folder\n")
    with pytest.raises(toolkit.InputError) as caught:
        report.save(_frames(), tmp_path / "evidence", _header())
    assert "is a file, not a folder" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert (tmp_path / "evidence").read_text() == "not a folder\n"
    with pytest.raises(toolkit.InputError, match="a folder above it is a file"):
        report.save(_frames(), tmp_path / "evidence" / "inner", _header())


def test_verify_names_each_changed_missing_and_extra_file(tmp_path: Path) -> None:
    report.save(_frames(), tmp_path, _header())
    assert report.verify(tmp_path) == []
    csv = tmp_path / "evidence-leases.csv"
    csv.write_text(csv.read_text() + "forged,1\n")
    (tmp_path / "evidence.html").unlink()
    (tmp_path / "notes.txt").write_text("added later\n")
    assert report.verify(tmp_path) == [
        "changed: evidence-leases.csv",
        "missing: evidence.html",
        "extra: notes.txt",
    ]


def test_verify_refuses_a_folder_without_a_readable_manifest(tmp_path: Path) -> None:
    with pytest.raises(toolkit.InputError, match="has no MANIFEST.json"):
        report.verify(tmp_path)
    (tmp_path / report.MANIFEST).write_text("{not json")
    with pytest.raises(toolkit.InputError, match="cannot be read"):
        report.verify(tmp_path)


def _verify(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolkit", "evidence", "verify", str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.slow  # it starts python -m toolkit
def test_the_evidence_verify_command_exits_1_naming_each_file_that_does_not_match(
    tmp_path: Path,
) -> None:
    report.save(_frames(), tmp_path, _header())
    good = _verify(tmp_path)
    assert good.returncode == 0, good.stderr
    assert "every file matches the manifest" in good.stdout
    parquet = tmp_path / "evidence-leases.parquet"
    parquet.write_bytes(parquet.read_bytes()[:-1] + b"\0")
    (tmp_path / "evidence.xlsx").unlink()
    bad = _verify(tmp_path)
    assert bad.returncode == 1
    assert bad.stdout.splitlines()[:2] == [
        "changed: evidence-leases.parquet",
        "missing: evidence.xlsx",
    ]
    manifest = json.loads((tmp_path / report.MANIFEST).read_text())
    assert len(manifest["files"]) == 5
    none = _verify(tmp_path / "absent")
    assert none.returncode == 2
    assert none.stderr.count("\n") == 1
