"""A history written by fleet runs of the lease audit, the sandbox clock moved a day between
runs, and the trends runbook run over it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest

from tests._runbooks import NOTEBOOKS, run_runbook
from toolkit import SecretsClient, history, report
from toolkit.__main__ import main
from toolkit._durable import Lock
from toolkit.fleet import parse_targets, run_fleet
from toolkit.sandbox import ENV_ADDRESS, ENV_TOKEN, Sandbox

DAY = 24 * 3600


@pytest.fixture
def two_sandboxes() -> Iterator[tuple[Sandbox, Sandbox]]:
    with Sandbox() as east, Sandbox() as west:
        yield east, west


def test_fleet_runs_days_apart_build_a_history_the_trends_runbook_reads(
    two_sandboxes: tuple[Sandbox, Sandbox], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    east, west = two_sandboxes
    monkeypatch.setenv("HISTORY_TEST_EAST", east.token)
    monkeypatch.setenv("HISTORY_TEST_WEST", west.token)
    targets = parse_targets(
        f"""
[defaults]
timeout = 120

[[target]]
name = "east"
kind = "secrets"
address = "{east.address}"
token_env = "HISTORY_TEST_EAST"

[[target]]
name = "west"
kind = "secrets"
address = "{west.address}"
token_env = "HISTORY_TEST_WEST"
"""
    )
    shared = tmp_path / "history"
    growing = SecretsClient(east.address, east.token)
    for run in range(3):
        done = run_fleet(
            NOTEBOOKS / "05_lease_audit.ipynb",
            targets,
            tmp_path / f"run-{run}",
            parallel=2,
            show_progress=False,
            history=shared,
        )
        assert done.ok, done.results
        for sandbox in (east, west):
            sandbox.clock.advance(DAY)
        for _ in range(25):
            growing.tokens.create(policies=["default"], ttl="720h", display_name="growth")
    growing.close()
    assert not (tmp_path / "run-0" / "history").exists()  # --history took its place

    con = history.open(shared)
    days = con.sql(
        "select audit_target, count(distinct audit_date), min(audit_date)::varchar "
        "from lease_counts group by 1 order by 1"
    ).fetchall()
    # The sandbox clock dates each snapshot: three days from the demo epoch, per target.
    assert days == [("east", 3, "2026-06-01"), ("west", 3, "2026-06-01")]
    tokens = con.sql(
        "select audit_target, audit_date::varchar, sum(count)::int from lease_counts "
        "where mount = 'auth/token/' group by all order by all"
    ).fetchall()
    east_counts = [n for t, _, n in tokens if t == "east"]
    west_counts = [n for t, _, n in tokens if t == "west"]
    assert east_counts[1] - east_counts[0] == 25 and east_counts[2] - east_counts[1] == 25
    assert len(set(west_counts)) == 1
    header = con.sql("select distinct audit_runbook, audit_server_version from findings").fetchall()
    assert header == [("05_lease_audit", "2.7.2")]

    monkeypatch.setenv(ENV_ADDRESS, east.address)
    monkeypatch.setenv(ENV_TOKEN, east.token)
    notebook = run_runbook(
        "14_trends.ipynb",
        tmp_path,
        {"history_dir": str(shared), "evidence_dir": str(tmp_path / "evidence")},
        [east.token, west.token],
        timeout=120,
    )
    text = json.dumps(notebook)
    assert "2 target(s), 6 snapshot(s); growth adds up on every target" in text
    growth = (tmp_path / "evidence" / "14_trends-growth.csv").read_text().splitlines()
    assert "east,auth/token/,4,54,50,25.0" in growth
    assert east.token not in text and west.token not in text


def _parquet_probe(path: Path, *change: str) -> Path:
    """The fleet probe filing its evidence as Parquet (and ``change``d: old, new), at ``path``."""
    probe = json.loads((Path(__file__).with_name("probe.ipynb")).read_text())
    for cell in probe["cells"]:
        text = "".join(cell["source"]).replace('["csv", "html"]', '["parquet"]')
        cell["source"] = text.replace(*change) if change else text
    path.write_text(json.dumps(probe))
    return path


def test_the_command_keeps_the_history_under_out_or_in_the_shared_folder_it_is_given(
    demo_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runbook = _parquet_probe(tmp_path / "probe-parquet.ipynb")
    monkeypatch.setenv("HISTORY_TEST_TOKEN", demo_sandbox.token)
    # Set in the runner: the kernels must not see it (the runner appends, they do not).
    monkeypatch.setenv("TOOLKIT_HISTORY", str(tmp_path / "not-here"))
    targets = tmp_path / "targets.toml"
    targets.write_text(
        f'[[target]]\nname = "one"\nkind = "secrets"\naddress = "{demo_sandbox.address}"\n'
        'token_env = "HISTORY_TEST_TOKEN"\n'
    )
    common = ["fleet", str(runbook), "--targets", str(targets), "--no-progress"]
    assert main([*common, "--out", str(tmp_path / "a")]) == 0
    assert main([*common, "--out", str(tmp_path / "b"), "--history", str(tmp_path / "h")]) == 0
    assert not (tmp_path / "not-here").exists()
    assert not (tmp_path / "b" / "history").exists()
    for root in (tmp_path / "a" / "history", tmp_path / "h"):
        rows = history.open(root).sql("select audit_target, policy from policies").fetchall()
        assert rows == [("one", "root")]


def test_frames_the_history_cannot_take_are_a_note_on_the_target_not_a_failed_run(
    demo_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runbook = _parquet_probe(
        tmp_path / "probe-clash.ipynb",
        '{"policy": list(me["policies"])}',
        '{"policy": list(me["policies"]), "audit_target": "mine"}',
    )
    monkeypatch.setenv("HISTORY_TEST_TOKEN", demo_sandbox.token)
    targets = parse_targets(
        f'[[target]]\nname = "one"\nkind = "secrets"\naddress = "{demo_sandbox.address}"\n'
        'token_env = "HISTORY_TEST_TOKEN"\n'
    )
    run = run_fleet(runbook, targets, tmp_path / "out", show_progress=False)
    assert run.ok
    (record,) = run.results
    assert "column named 'audit_target'" in record["history_error"]
    assert (tmp_path / "out" / "one" / "evidence" / "evidence-policies.parquet").is_file()


def _seed_old_version(root: Path, sandbox: Sandbox, audits: int) -> None:
    """``audits`` earlier runs of the probe by an older version, whose ``policy`` was a number."""
    with SecretsClient(sandbox.address, sandbox.token) as client:
        now = report.header_of(client).server_time
    assert now is not None
    for k in range(audits):
        header = report.Header(
            server=sandbox.address,
            runbook="fleet-probe",
            server_time=now - timedelta(minutes=k + 1),
        )
        history.append(root, {"policies": pd.DataFrame({"policy": [k]})}, header, target="one")


def _fleet_command(
    runbook: Path, tmp_path: Path, sandbox: Sandbox, shared: Path
) -> subprocess.CompletedProcess[str]:
    targets = tmp_path / "targets.toml"
    targets.write_text(
        f'[[target]]\nname = "one"\nkind = "secrets"\naddress = "{sandbox.address}"\n'
        'token_env = "HISTORY_TEST_TOKEN"\n'
    )
    return subprocess.run(
        [sys.executable, "-m", "toolkit", "fleet", str(runbook), "--targets", str(targets),
         "--out", str(tmp_path / "out"), "--history", str(shared), "--no-progress"],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "HISTORY_TEST_TOKEN": sandbox.token},
    )  # fmt: skip


def test_a_column_whose_type_changed_between_versions_is_migrated_and_the_index_written(
    demo_sandbox: Sandbox, tmp_path: Path
) -> None:
    shared = tmp_path / "history"
    _seed_old_version(shared, demo_sandbox, audits=8)
    runbook = _parquet_probe(tmp_path / "probe-parquet.ipynb")
    done = _fleet_command(runbook, tmp_path, demo_sandbox, shared)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "note:" not in done.stdout
    assert (tmp_path / "out" / "index.html").is_file()
    kept = list((shared / "policies").rglob("*.parquet"))
    assert len(kept) == 1 and kept[0].name.startswith("compacted-")  # nine audits, one file
    policies = history.open(shared).sql("select policy from policies order by audit_at").fetchall()
    assert policies == [(str(k),) for k in reversed(range(8))] + [("root",)]  # as text


def test_a_compaction_that_cannot_run_is_skipped_and_said_and_the_run_goes_on(
    demo_sandbox: Sandbox, tmp_path: Path
) -> None:
    shared = tmp_path / "history"
    _seed_old_version(shared, demo_sandbox, audits=8)
    runbook = _parquet_probe(tmp_path / "probe-parquet.ipynb")
    with Lock(shared / "history"):  # as if another run were compacting it
        done = _fleet_command(runbook, tmp_path, demo_sandbox, shared)
    assert done.returncode == 0, done.stdout + done.stderr
    (note,) = [line for line in done.stdout.splitlines() if line.startswith("note:")]
    assert f"history {shared} not compacted" in note and f"process {os.getpid()}" in note
    assert "not compacted" in (tmp_path / "out" / "index.html").read_text()
    assert history.open(shared).sql("select count(*)::int from policies").fetchall() == [(9,)]
