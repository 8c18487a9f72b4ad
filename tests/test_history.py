"""The history store: frames appended as Parquet by target, runbook and date, one DuckDB view
per frame, columns added across versions kept, small files compacted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from toolkit import InputError, SecretsClient, Sensitive, history, report
from toolkit.report import Header
from toolkit.sandbox import Sandbox

DAY0 = datetime(2026, 3, 1, 6, 0, tzinfo=UTC)


def _header(day: int, runbook: str = "05_lease_audit", **fields: object) -> Header:
    return Header(
        server="https://bao.example:8200",
        server_version="2.7.2",
        cluster="prod-eu",
        runbook=runbook,
        generated_at=DAY0 + timedelta(days=day, seconds=40),
        server_time=DAY0 + timedelta(days=day),
        **fields,  # type: ignore[arg-type]
    )


def _counts(leases: int, **extra: list[object]) -> pd.DataFrame:
    return pd.DataFrame({"mount": ["database/", "pki/"], "count": [leases, 10], **extra})


def test_frames_land_partitioned_by_frame_target_runbook_and_the_servers_date(
    tmp_path: Path,
) -> None:
    written = history.append(tmp_path, {"lease_counts": _counts(5)}, _header(0), target="eu")
    assert len(written) == 2 and written[1].relative_to(tmp_path).parts[0] == history.AUDITS
    relative = written[0].relative_to(tmp_path).parts
    assert relative[:4] == ("lease_counts", "target=eu", "runbook=05_lease_audit",
                            "date=2026-03-01")  # fmt: skip
    row = history.open(tmp_path).sql("select * from lease_counts limit 1").df().iloc[0]
    assert row["audit_target"] == "eu" and row["audit_cluster"] == "prod-eu"
    assert row["audit_at"] == pd.Timestamp(DAY0)  # the server's time, not the client's
    assert row["audit_server_version"] == "2.7.2" and row["audit_runbook"] == "05_lease_audit"
    assert not list(tmp_path.rglob(".*.tmp"))


def test_one_view_per_frame_across_targets_and_dates_answers_a_trend(tmp_path: Path) -> None:
    for day in range(3):
        for target, growth in (("eu", 10), ("us", 0)):
            frames = {"lease_counts": _counts(100 + growth * day), "findings": pd.DataFrame()}
            history.append(tmp_path, frames, _header(day), target=target)
    assert history.list_frames(tmp_path) == ["audits", "findings", "lease_counts"]
    trend = (
        history.open(tmp_path)
        .sql(
            "select audit_target, audit_date::varchar as d, sum(count)::int as n "
            "from lease_counts where mount = 'database/' group by all order by all"
        )
        .fetchall()
    )
    assert [n for t, _, n in trend if t == "eu"] == [100, 110, 120]
    assert [n for t, _, n in trend if t == "us"] == [100, 100, 100]


def test_a_column_added_by_a_later_version_is_kept_and_none_is_dropped(tmp_path: Path) -> None:
    history.append(tmp_path, {"lease_counts": _counts(1, old=["a", "b"])}, _header(0), target="x")
    history.append(tmp_path, {"lease_counts": _counts(2, new=[1.5, 2.5])}, _header(1), target="x")
    frame = history.open(tmp_path).sql("select * from lease_counts order by audit_at").df()
    assert {"old", "new", "mount", "count"} <= set(frame.columns)
    assert list(frame["old"].iloc[:2]) == ["a", "b"] and frame["old"].iloc[2:].isna().all()
    assert frame["new"].iloc[:2].isna().all() and list(frame["new"].iloc[2:]) == [1.5, 2.5]


def test_compaction_merges_a_years_small_files_and_keeps_every_row(tmp_path: Path) -> None:
    for day in range(12):
        history.append(tmp_path, {"lease_counts": _counts(day)}, _header(day), target="eu")
    before = history.open(tmp_path).sql("select count(*), sum(count) from lease_counts").fetchall()
    kept = tmp_path / "lease_counts"
    assert len(list(kept.rglob("*.parquet"))) == 12
    assert history.compact(tmp_path, min_files=20).removed == 0  # fewer than asked: left alone
    assert history.compact(tmp_path, frames=["lease_counts"]).removed == 12
    files = list(kept.rglob("*.parquet"))
    assert len(files) == 1 and files[0].parent.name == "year=2026"
    after = history.open(tmp_path).sql("select count(*), sum(count) from lease_counts").fetchall()
    assert after == before
    history.append(tmp_path, {"lease_counts": _counts(99)}, _header(12), target="eu")
    assert history.compact(tmp_path, frames=["lease_counts"]).removed == 2  # merged file + new day
    assert history.compact(tmp_path).removed == 13  # the audits' own rows: 13 days, one file now
    assert history.open(tmp_path).sql("select count(*) from lease_counts").fetchall() == [(26,)]


def test_secrets_are_hidden_and_bad_names_refused_before_anything_is_written(
    tmp_path: Path,
) -> None:
    frame = pd.DataFrame({"user": ["svc"], "password": [Sensitive("hunter2-pw", "password")]})
    written = history.append(tmp_path, {"accounts": frame}, _header(0), target="eu")
    assert b"hunter2-pw" not in written[0].read_bytes()
    with pytest.raises(InputError, match="history target 'eu west'"):
        history.append(tmp_path / "b", {"accounts": frame}, _header(0), target="eu west")
    with pytest.raises(InputError, match="'audits' is the history's own"):
        history.append(tmp_path / "b", {"audits": frame}, _header(0), target="eu")
    with pytest.raises(InputError, match="frame name '../up'"):
        history.append(tmp_path / "b", {"../up": frame}, _header(0), target="eu")
    clash = pd.DataFrame({"audit_target": ["mine"]})
    with pytest.raises(InputError, match="column named 'audit_target'"):
        history.append(tmp_path / "c", {"f": clash}, _header(0), target="eu")
    with pytest.raises(InputError, match="no history at"):
        history.open(tmp_path / "nothing-here")


def test_filed_evidence_is_appended_when_a_history_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = {"lease_counts": _counts(3).set_index("mount")}
    report.save(frames, tmp_path / "ev1", _header(0), formats=["csv"], history=tmp_path / "h")
    monkeypatch.setenv("TOOLKIT_HISTORY", str(tmp_path / "h"))
    monkeypatch.setenv("TOOLKIT_TARGET", "nightly-eu")
    report.save(frames, tmp_path / "ev2", _header(1), formats=["csv"])
    rows = (
        history.open(tmp_path / "h")
        .sql("select audit_target, mount from lease_counts order by audit_at, mount")
        .fetchall()
    )
    assert rows == [("prod-eu", "database/"), ("prod-eu", "pki/"),
                    ("nightly-eu", "database/"), ("nightly-eu", "pki/")]  # fmt: skip


def test_a_fleets_parquet_evidence_is_appended_with_its_own_header(tmp_path: Path) -> None:
    paths = report.save(
        {"lease_counts": _counts(7)}, tmp_path / "ev", _header(2), formats=["parquet"]
    )
    blobs = {p.name: p.read_bytes() for p in paths}
    blobs["notes.txt"] = b"not evidence"
    written = history.append_evidence(tmp_path / "h", blobs, target="fleet-a")
    assert len(written) == 2 and "date=2026-03-03" in str(written[0])
    filed = history.open(tmp_path / "h").sql("select frame, rows from audits").fetchall()
    assert filed == [("lease_counts", 2)]
    row = history.open(tmp_path / "h").sql("select * from lease_counts limit 1").df().iloc[0]
    assert row["audit_target"] == "fleet-a" and row["audit_runbook"] == "05_lease_audit"


def test_the_header_carries_the_servers_clock_which_dates_the_snapshot(
    empty_sandbox: Sandbox, tmp_path: Path
) -> None:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        moved = empty_sandbox.clock.advance(40 * 24 * 3600).date().isoformat()
        header = report.header_of(client, runbook="05_lease_audit")
    assert header.server_time is not None
    assert header.server_time.date().isoformat() == moved  # the server's clock, not ours
    assert header.generated_at.date() < header.server_time.date()
    assert header.as_dict()["server_time"].startswith(moved)
    path, _ = history.append(tmp_path, {"n": pd.DataFrame({"n": [1]})}, header, target="sb")
    assert f"date={moved}" in str(path)


def test_an_audit_that_found_nothing_leaves_its_row_so_its_silence_is_told_from_absence(
    tmp_path: Path,
) -> None:
    finding = pd.DataFrame({"area": ["leases"], "object": ["pki/web"], "severity": ["low"]})
    none = finding.iloc[0:0]
    history.append(tmp_path, {"findings": finding}, _header(0), target="eu")
    history.append(tmp_path, {"findings": none}, _header(1), target="eu")  # fixed on day 1
    tokens = _header(1, "06_token_audit")
    history.append(tmp_path, {"findings": finding}, tokens, target="eu")
    con = history.open(tmp_path)
    filed = con.sql(
        "select audit_runbook, audit_date::varchar, rows from audits order by all"
    ).fetchall()
    assert filed == [("05_lease_audit", "2026-03-01", 1), ("05_lease_audit", "2026-03-02", 0),
                     ("06_token_audit", "2026-03-02", 1)]  # fmt: skip
    # The findings table alone cannot tell day 1 found nothing: it has no row of day 1.
    days = con.sql("select distinct audit_date::varchar from findings order by 1").fetchall()
    assert days == [("2026-03-01",), ("2026-03-02",)]  # the token audit's, not the lease audit's
