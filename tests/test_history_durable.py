"""The history is whole and single: an audit shows whole or not at all, a compaction holds the
history's lock and shows every row once, a column whose type changed is merged as the views
read it or refused by name."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from toolkit import InputError, history
from toolkit._durable import Lock, Locked
from toolkit.report import Header

DAY0 = datetime(2026, 3, 1, 6, 0, tzinfo=UTC)


def _header(day: int) -> Header:
    return Header(
        server="https://bao.example:8200",
        cluster="prod-eu",
        runbook="05_lease_audit",
        server_time=DAY0 + timedelta(days=day),
    )


def _counts(leases: object) -> pd.DataFrame:
    return pd.DataFrame({"mount": ["database/", "pki/"], "count": [leases, leases]})


def _rows(root: Path, sql: str) -> list[tuple[object, ...]]:
    return history.open(root).sql(sql).fetchall()


def test_frames_whose_audits_row_never_landed_are_not_read(tmp_path: Path) -> None:
    # What a kill -9 between an audit's frames and its audits row leaves: the frames alone.
    whole, torn = tmp_path / "whole", tmp_path / "torn"
    history.append(torn, {"lease_counts": _counts(1)}, _header(0), target="eu")
    frame_file, _ = history.append(whole, {"lease_counts": _counts(5)}, _header(1), target="eu")
    left = torn / frame_file.relative_to(whole)
    left.parent.mkdir(parents=True)
    shutil.copy(frame_file, left)
    assert _rows(torn, "select sum(count)::int from lease_counts") == [(2,)]
    assert _rows(torn, "select count(*)::int from audits") == [(1,)]
    # Compaction leaves it be (its audit may still be landing) and merges none of it.
    history.compact(torn)
    assert _rows(torn, "select sum(count)::int from lease_counts") == [(2,)]


def test_a_compaction_stopped_before_removing_what_it_merged_shows_each_row_once(
    tmp_path: Path,
) -> None:
    for day in range(4):
        history.append(tmp_path, {"lease_counts": _counts(day)}, _header(day), target="eu")
    saved = tmp_path.parent / "saved"
    shutil.copytree(tmp_path / "lease_counts", saved)
    assert history.compact(tmp_path, frames=["lease_counts"]).removed == 4
    # As if it had stopped after writing the merged file: the small files are back.
    shutil.copytree(saved, tmp_path / "lease_counts", dirs_exist_ok=True)
    assert _rows(tmp_path, "select count(*)::int, sum(count)::int from lease_counts") == [(8, 12)]
    assert history.compact(tmp_path, frames=["lease_counts"]).removed == 4  # finished now
    assert len(list((tmp_path / "lease_counts").rglob("*.parquet"))) == 1
    assert _rows(tmp_path, "select count(*)::int, sum(count)::int from lease_counts") == [(8, 12)]


def test_a_compaction_while_another_holds_the_history_is_refused_naming_the_holder(
    tmp_path: Path,
) -> None:
    for day in range(3):
        history.append(tmp_path, {"lease_counts": _counts(day)}, _header(day), target="eu")
    with Lock(tmp_path / "history"), pytest.raises(Locked, match=r"in use by process \d+"):
        history.compact(tmp_path)
    assert len(list(tmp_path.rglob("*.parquet"))) == 6  # nothing merged, nothing removed
    assert history.compact(tmp_path).removed == 6


def test_a_number_that_became_text_is_merged_as_text_as_the_views_read_it(tmp_path: Path) -> None:
    history.append(tmp_path, {"lease_counts": _counts(7)}, _header(0), target="eu")
    history.append(tmp_path, {"lease_counts": _counts("many")}, _header(1), target="eu")
    before = _rows(tmp_path, "select count from lease_counts order by audit_at, mount")
    assert before == [("7",), ("7",), ("many",), ("many",)]
    assert history.compact(tmp_path).removed == 4
    assert _rows(tmp_path, "select count from lease_counts order by audit_at, mount") == before


def test_a_column_whose_type_cannot_be_merged_is_refused_by_name_and_left_as_it_is(
    tmp_path: Path,
) -> None:
    history.append(tmp_path, {"lease_counts": _counts(7)}, _header(0), target="eu")
    # A count that became a time: no type holds both, in DuckDB's views nor in a merged file.
    timed = pd.DataFrame({"mount": ["database/"], "count": pd.to_datetime(["2026-03-02T00:00Z"])})
    history.append(tmp_path, {"lease_counts": timed}, _header(1), target="eu")
    done = history.compact(tmp_path)
    assert done.removed == 2  # the audits' own rows merged; the frame's files refused
    (refusal,) = done.refused
    assert "lease_counts/target=eu/runbook=05_lease_audit year 2026 not compacted" in refusal
    assert "column 'count' is int64 in" in refusal and "cannot be merged" in refusal
    assert len(list((tmp_path / "lease_counts").rglob("*.parquet"))) == 2


# -- with processes ------------------------------------------------------------------------------
_APPEND = textwrap.dedent(
    """
    import resource, sys
    from datetime import UTC, datetime
    import numpy as np, pandas as pd
    from toolkit import InputError, history
    from toolkit.report import Header

    limit = int(sys.argv[2])
    header = Header(server="https://bao.example:8200", runbook="05_lease_audit",
                    server_time=datetime(2026, 3, 2, 6, tzinfo=UTC))
    small = pd.DataFrame({"mount": ["database/"], "count": [1]})
    noise = pd.DataFrame({"blob": np.random.default_rng(1).bytes(4 * limit).hex()[:4 * limit]},
                         index=[0])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        history.append(sys.argv[1], {"lease_counts": small, "noise": noise}, header, target="eu")
    except InputError as exc:  # the durable module's StateError: one line
        print("refused:", exc)
    """
)


@pytest.mark.slow  # it starts a process with a file-size limit
def test_a_full_disk_mid_append_leaves_no_half_audit_visible(tmp_path: Path) -> None:
    history.append(tmp_path, {"lease_counts": _counts(3)}, _header(0), target="eu")
    done = subprocess.run(
        [sys.executable, "-c", _APPEND, str(tmp_path), str(200_000)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: "), done.stdout
    assert "could not be written (File too large)" in done.stdout  # EFBIG: the size limit
    assert done.stdout.count("\n") == 1
    assert history.list_frames(tmp_path) == ["audits", "lease_counts"]
    assert _rows(tmp_path, "select sum(count)::int from lease_counts") == [(6,)]
    assert _rows(tmp_path, "select count(*)::int from audits") == [(1,)]
    assert not list(tmp_path.rglob("*.tmp"))  # nothing half-written left behind


_COMPACT = textwrap.dedent(
    """
    import json, sys
    from toolkit import history
    from toolkit._durable import Locked
    try:
        done = history.compact(sys.argv[1])
        print(json.dumps({"removed": done.removed}))
    except Locked as exc:
        print(json.dumps({"locked": str(exc)}))
    """
)


@pytest.mark.slow  # it starts two processes
def test_two_compactions_at_once_neither_crashes_nor_doubles_a_row(tmp_path: Path) -> None:
    days = 120
    for day in range(days):
        history.append(tmp_path, {"lease_counts": _counts(day)}, _header(day), target="eu")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _COMPACT, str(tmp_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    answers = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
        answers.append(json.loads(out))
    removed = sum(a.get("removed", 0) for a in answers)
    assert removed == 2 * days  # each small file merged once, by one or the other
    for answer in answers:
        assert "removed" in answer or "in use by process" in answer["locked"]
    assert _rows(tmp_path, "select count(*)::int from audits") == [(days,)]
    assert _rows(tmp_path, "select count(*)::int from lease_counts") == [(2 * days,)]


def test_open_refuses_nothing_it_cannot_find(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no history at"):
        history.compact(tmp_path / "absent")


def test_the_runbooks_snapshots_are_audits_of_the_history_read_the_same_way(
    tmp_path: Path,
) -> None:
    from toolkit.drift import Snapshots

    grants = pd.DataFrame({"workspace": ["web", "api"], "team": ["ops", "dev"]}).set_index(
        "workspace"
    )
    shots = Snapshots(tmp_path)
    shots.save("grants", grants, taken_at=DAY0)
    later = pd.concat(
        [grants, pd.DataFrame({"team": ["sec"]}, index=pd.Index(["db"], name="workspace"))]
    )
    drift = shots.since_last("grants", later, taken_at=DAY0 + timedelta(days=1))
    assert list(drift.index) == ["db"] and list(drift["change"]) == ["added"]
    pd.testing.assert_frame_equal(shots.latest("grants"), later)  # its named index again
    # The same snapshots, with SQL: one store of past audits.
    rows = _rows(tmp_path, "select audit_runbook, count(*)::int from grants group by 1")
    assert rows == [("snapshots", 5)]
    history.compact(tmp_path)  # merged files read back the same
    pd.testing.assert_frame_equal(shots.latest("grants"), later)
    assert [s.taken_at for s in shots.list("grants")] == [DAY0, DAY0 + timedelta(days=1)]


def test_snapshots_an_older_toolkit_kept_as_files_are_still_compared_with(tmp_path: Path) -> None:
    from toolkit.drift import Snapshots

    old = pd.DataFrame({"mount": ["database/"], "count": [3]})
    old.to_parquet(tmp_path / "lease_counts-20260301T060000Z.parquet")
    drift = Snapshots(tmp_path).since_last(
        "lease_counts", _counts(3), taken_at=DAY0 + timedelta(days=1), key="mount"
    )
    assert list(drift["change"]) == ["added"]  # pki/ is new; database/ held 3 then as now
    assert list(drift.index) == ["pki/"]
