"""The lease radar's rules, each on its own: the status of a mount against the threshold,
the time-left buckets, and what a revocation run sends (toolkit/secrets/leases/radar.py)."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from toolkit import InputError
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.leases.radar import (
    ADVISORY_LIMIT,
    expiry_calendar,
    lease_radar,
    top_offenders,
    ttl_buckets,
)

NOW = datetime(2026, 6, 11, tzinfo=UTC)
THEN = NOW - timedelta(days=10)


def counts(**by_mount: int) -> pd.DataFrame:
    mounts = list(by_mount)
    return pd.DataFrame(
        {
            "mount": pd.array(mounts, dtype="string"),
            "role": pd.array(["r"] * len(mounts), dtype="string"),
            "kind": pd.array(["secret"] * len(mounts), dtype="string"),
            "count": pd.array(list(by_mount.values()), dtype="Int64"),
        }
    )


def radar(now: dict[str, int], then: dict[str, int] | None, threshold: int = 1000) -> pd.DataFrame:
    previous = counts(**then) if then is not None else None
    return lease_radar(
        counts(**now),
        previous=previous,
        previous_at=THEN if then is not None else None,
        now=NOW,
        threshold=threshold,
    )


# -- the status of a mount ----------------------------------------------------------------


def test_a_count_at_the_threshold_is_over_it_from_that_moment() -> None:
    at = radar({"db/": 1000}, None).loc["db/"]
    assert at["status"] == "over"
    assert at["projected_crossing"] == pd.Timestamp(NOW)
    assert at["share_of_threshold"] == 1.0
    below = radar({"db/": 999}, None).loc["db/"]
    assert below["status"] == "first snapshot" and pd.isna(below["projected_crossing"])


def test_a_count_that_fell_is_shrinking_and_one_that_held_is_steady() -> None:
    frame = radar({"down/": 400, "flat/": 500}, {"down/": 500, "flat/": 500})
    down, flat = frame.loc["down/"], frame.loc["flat/"]
    assert down["status"] == "shrinking"
    assert down["growth"] == -100 and down["growth_per_day"] == -10.0
    assert pd.isna(down["projected_crossing"])
    assert flat["status"] == "steady"
    assert flat["growth"] == 0 and flat["growth_per_day"] == 0.0


def test_growth_projects_the_crossing_and_names_it_within_thirty_days_or_growing() -> None:
    frame = radar(
        {"fast/": 400, "edge/": 100, "slow/": 100}, {"fast/": 300, "edge/": 70, "slow/": 99}
    )
    fast = frame.loc["fast/"]  # 10 a day: 600 to go in 60 days
    assert fast["status"] == "growing"
    assert fast["projected_crossing"] == pd.Timestamp(NOW + timedelta(days=60))
    edge = frame.loc["edge/"]  # 3 a day: 900 to go in 300 days
    assert edge["growth_per_day"] == 3.0 and edge["status"] == "growing"
    near = radar({"near/": 700}, {"near/": 600}).loc["near/"]  # 10 a day: exactly 30 days
    assert near["projected_crossing"] == pd.Timestamp(NOW + timedelta(days=30))
    assert near["status"] == "crossing within 30 days"
    assert frame.loc["slow/", "previous_count"] == 99


def test_a_mount_new_since_the_snapshot_grew_from_zero_and_the_server_row_sums_all() -> None:
    frame = radar({"old/": 10, "new/": 30}, {"old/": 10, "gone/": 5})
    assert frame.loc["new/", "previous_count"] == 0 and frame.loc["new/", "growth"] == 30
    server = frame.loc["(server)"]
    assert server["kind"] == "server"
    assert server["count"] == 40 and server["previous_count"] == 15 and server["growth"] == 25
    assert list(frame.index) == ["new/", "old/", "(server)"]
    assert frame.loc["new/", "kind"] == "secret"


def test_the_radar_refuses_a_threshold_below_one_and_a_snapshot_without_its_time() -> None:
    with pytest.raises(InputError, match="threshold must be at least 1, not 0"):
        radar({"db/": 1}, None, threshold=0)
    assert radar({"db/": 1}, None, threshold=1).loc["db/", "status"] == "over"
    with pytest.raises(InputError, match="previous_at is required"):
        lease_radar(counts(db=1), previous=counts(db=1), now=NOW)
    with pytest.raises(InputError, match="previous_at must be before now"):
        lease_radar(counts(db=1), previous=counts(db=1), previous_at=NOW, now=NOW)
    assert ADVISORY_LIMIT == 256_000
    assert lease_radar(counts(db=1), now=NOW).loc["db", "share_of_threshold"] == 1 / 256_000


def test_top_offenders_are_the_largest_with_growth_from_zero_for_new_ones() -> None:
    top = top_offenders(counts(a=5, b=9, c=7), previous=counts(a=1, b=10), n=2)
    assert list(top["mount"]) == ["b", "c"]
    assert list(top["growth"]) == [-1, 7]
    with pytest.raises(InputError, match="n must be at least 1, not 0"):
        top_offenders(counts(a=1), n=0)
    assert len(top_offenders(counts(a=1, b=2), n=1)) == 1


# -- time left ------------------------------------------------------------------------------


def _leases(*rows: tuple[str, float | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "mount": pd.array([m for m, _ in rows], dtype="string"),
            "ttl": pd.array([t for _, t in rows], dtype="Int64"),
            "expire_time": pd.array(
                [None if t is None else pd.Timestamp(NOW + timedelta(seconds=t)) for _, t in rows],
                dtype="datetime64[ns, UTC]",
            ),
        }
    )


def test_each_lease_falls_in_the_first_time_left_bucket_it_fits_and_empty_buckets_read_zero() -> (
    None
):
    frame = ttl_buckets(
        _leases(
            ("a/", 3600),
            ("a/", 3601),
            ("a/", 86400 * 7),
            ("a/", 86400 * 30 + 1),
            ("a/", None),
            ("b/", 10),
        )
    )
    assert frame.loc["a/"].to_dict() == {
        "count": 5,
        "ttl_up_to_1h": 1,
        "ttl_1h_to_24h": 1,
        "ttl_24h_to_7d": 1,
        "ttl_7d_to_30d": 0,
        "ttl_over_30d": 1,
        "no_expiry": 1,
    }
    assert frame.loc["b/"].to_dict() == {
        "count": 1,
        "ttl_up_to_1h": 1,
        "ttl_1h_to_24h": 0,
        "ttl_24h_to_7d": 0,
        "ttl_7d_to_30d": 0,
        "ttl_over_30d": 0,
        "no_expiry": 0,
    }


def test_the_expiry_calendar_counts_leases_a_period_and_mount() -> None:
    calendar = expiry_calendar(_leases(("a/", 60), ("a/", 120), ("b/", 86400), ("b/", None)))
    assert calendar.index.name == "expire_time"
    assert calendar.to_dict("list") == {"a/": [2, 0], "b/": [0, 1]}
    assert expiry_calendar(_leases(("a/", None))).empty


# -- revocation ------------------------------------------------------------------------------


@pytest.fixture
def client(empty_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as c:
        yield c


def _lease_ids(sandbox: Sandbox, client: SecretsClient, n: int) -> list[str]:
    with sandbox.secrets.lock:
        for i in range(n):
            sandbox.secrets.leases.create("database/creds/ro", ttl=600, suffix=f"r{i:03d}")
    return client.leases.list_lease_ids("database/creds/ro/")


def test_a_revocation_without_a_journal_revokes_every_lease_in_batches(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = _lease_ids(empty_sandbox, client, 5)
    done = client.leases.revocation_plan(ids, rate=1000, batch_size=2, apply=True)
    assert sorted(done.index) == sorted(ids)
    assert set(done["outcome"]) == {"revoked"}
    assert list(done["batch"]) == [0, 0, 1, 1, 2]
    assert client.leases.list_lease_ids("database/creds/ro/") == []


def test_the_preview_shows_every_lease_once_in_its_batch_and_sends_nothing(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = _lease_ids(empty_sandbox, client, 5)
    preview = client.leases.revocation_plan(ids + ids[:1], rate=2, batch_size=2)
    assert list(preview.index) == ids  # the first lease too, and the repeated one once
    assert list(preview["batch"]) == [0, 0, 1, 1, 2]
    assert set(preview["method"]) == {"POST"} and set(preview["outcome"]) == {"will send"}
    assert preview["body"].iloc[0] == f'{{"lease_id": "{ids[0]}", "sync": true}}'
    assert len(client.leases.list_lease_ids("database/creds/ro/")) == 5


def test_the_journal_is_created_in_a_new_folder_readable_by_its_owner_only(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    ids = _lease_ids(empty_sandbox, client, 3)
    journal = tmp_path / "new" / "folder" / "revoked.journal"
    client.leases.revocation_plan(ids, rate=1000, batch_size=2, apply=True, journal=journal)
    assert journal.is_file()
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600
    again = client.leases.revocation_plan(ids, rate=1000, batch_size=2, journal=journal)
    assert set(again["outcome"]) == {"revoked"}  # as recorded: nothing will be sent again
    assert set(again["method"]) == {""}


@pytest.mark.parametrize(
    ("rate", "batch_size", "says"),
    [
        (0, 10, "rate must be a positive number"),
        (-1.5, 10, "rate must be a positive number"),
        (None, 10, "rate must be a positive number"),
        (10, 0, "batch_size must be at least 1, not 0"),
    ],
)
def test_a_revocation_refuses_a_rate_or_batch_size_that_is_not_positive_and_sends_nothing(
    empty_sandbox: Sandbox, client: SecretsClient, rate: float, batch_size: int, says: str
) -> None:
    ids = _lease_ids(empty_sandbox, client, 2)
    for apply in (False, True):
        with pytest.raises(InputError, match=says):
            client.leases.revocation_plan(ids, rate=rate, batch_size=batch_size, apply=apply)
    assert len(client.leases.list_lease_ids("database/creds/ro/")) == 2
    one = client.leases.revocation_plan(ids, rate=0.5, batch_size=1)
    assert len(one) == 2


def test_the_revocation_plan_previews_by_default_in_batches_of_a_hundred(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    from toolkit.secrets.leases.revocation import revoke_leases

    ids = [f"database/creds/ro/x{i:03d}" for i in range(101)]
    preview = revoke_leases(client.http, ids, rate=1000)
    assert preview["batch"].value_counts().to_dict() == {0: 100, 1: 1}
    assert set(preview["path"]) == {"sys/leases/revoke"}
    assert set(preview["outcome"]) == {"will send"}


def test_a_scan_says_how_many_leases_it_holds_and_where(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    _lease_ids(empty_sandbox, client, 3)
    scan = client.leases.scan()
    assert repr(scan) == "<LeaseScan 3 leases; complete=True>"
    spooled = client.leases.scan(max_rows=1)
    assert spooled.parquet is not None
    assert repr(spooled) == f"<LeaseScan 3 leases in {spooled.parquet}; complete=True>"


def test_the_radar_since_a_snapshot_stores_under_its_name_and_names_the_one_it_read(
    tmp_path: Path,
) -> None:
    from toolkit.drift import Snapshots
    from toolkit.secrets.leases.radar import radar_since_snapshot

    store = Snapshots(tmp_path)
    first = radar_since_snapshot(counts(db=10), store, name="mine")
    assert first.attrs["previous_snapshot"] is None
    assert len(store.list("mine")) == 1 and store.list("lease-counts") == []
    second = radar_since_snapshot(counts(db=20), store, name="mine", save=False)
    kept = store.list("mine")[-1]
    assert str(kept.path) in second.attrs["previous_snapshot"]
    assert second.attrs["previous_snapshot"].startswith("mine taken ")
    assert second.loc["db", "previous_count"] == 10 and len(store.list("mine")) == 1


def test_top_offenders_are_ten_by_default_renumbered_with_whole_number_growth() -> None:
    many = counts(**{f"m{i:02d}": i for i in range(12)})
    top = top_offenders(many)
    assert len(top) == 10 and list(top.index) == list(range(10))
    assert list(top["mount"])[:2] == ["m11", "m10"] and "index" not in top.columns
    grown = top_offenders(many, previous=many)
    assert str(grown["growth"].dtype) == "Int64" and set(grown["growth"]) == {0}


def test_a_resumed_scan_says_how_many_leases_came_from_its_checkpoint(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    from toolkit.secrets.leases.radar import scan_leases

    _lease_ids(empty_sandbox, client, 25)
    point = tmp_path / "scan.checkpoint"

    def stop(rows: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as stopped:
        scan_leases(client.http, checkpoint=point, chunk=10, on_chunk=stop)
    (note,) = stopped.value.__notes__
    assert note.startswith("lease scan interrupted: 10 leases looked up")
    scan = scan_leases(client.http, checkpoint=point, chunk=10)
    assert scan.resumed and scan.leases == 25
    assert scan.notes == ["resumed: 10 leases came from the checkpoint"]
    frame = scan.frame()
    assert len(frame) == 25
    assert frame.attrs["coverage"]["view"] == "leases.scan"
    assert frame.attrs["coverage"]["complete"] is True
    assert scan_leases(client.http).notes == []


def test_a_scan_with_a_checkpoint_that_found_no_leases_names_no_parquet_folder(
    client: SecretsClient, tmp_path: Path
) -> None:
    scan = client.leases.scan(checkpoint=tmp_path / "scan.checkpoint")
    assert scan.parquet is None
    assert repr(scan) == "<LeaseScan 0 leases; complete=True>"


def _lookup_only(sandbox: Sandbox, client: SecretsClient) -> SecretsClient:
    """A client whose token may list and look up leases, and read nothing else."""
    client.policies.write(
        "acl",
        "lookup-only",
        'path "sys/leases/lookup/*" { capabilities = ["list", "sudo"] }\n'
        'path "sys/leases/lookup" { capabilities = ["update"] }',
    )
    answer = client.http.json(
        "POST", "/auth/token/create", json={"policies": ["lookup-only"], "no_default_policy": True}
    )
    return SecretsClient(sandbox.address, answer["auth"]["client_token"])


def test_a_scan_of_named_mounts_by_a_token_that_cannot_read_the_mount_table_says_so(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    _lease_ids(empty_sandbox, client, 2)
    with _lookup_only(empty_sandbox, client) as looker:
        frame = looker.leases.scan(["database/"]).frame()
    assert len(frame) == 2
    coverage = frame.attrs["coverage"]
    assert not coverage["complete"]
    assert [(g["path"], g["status"]) for g in coverage["gaps"]] == [("sys/mounts", 403)]
    assert coverage["gaps"][0]["reason"] == (
        "the mount names could not be checked (a mistyped mount reads as empty)"
    )


def _three_leases_in_two_folders(sandbox: Sandbox, suffix: str) -> None:
    """Three leases in each of ``database/creds/a`` and ``database/creds/b``."""
    with sandbox.secrets.lock:
        for folder in ("database/creds/a", "database/creds/b"):
            for i in range(3):
                sandbox.secrets.leases.create(folder, ttl=600, suffix=f"{suffix}{i}")


def test_a_scan_stopped_in_a_later_folder_resumes_without_the_folders_it_finished(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    from toolkit.secrets.checkpoint import WalkInterrupted
    from toolkit.secrets.leases.radar import scan_leases

    _three_leases_in_two_folders(empty_sandbox, "f")
    point = tmp_path / "scan.checkpoint"

    def cut_the_lookups(rows: int) -> None:  # after the first folder's leases are stored
        empty_sandbox.faults.drop_after_apply("POST", "/v1/sys/leases/lookup", 100)

    try:
        with pytest.raises(WalkInterrupted):
            scan_leases(client.http, checkpoint=point, on_chunk=cut_the_lookups)
    finally:
        empty_sandbox.faults.clear()
    lookups: list[str] = []
    client.http.response_hooks.append(
        lambda r: lookups.append(str(r.url)) if "sys/leases/lookup" in str(r.url) else None
    )
    scan = client.leases.scan(checkpoint=point)
    assert scan.resumed and scan.leases == 6
    assert len([u for u in lookups if u.endswith("/sys/leases/lookup")]) == 3


def test_a_growth_of_less_than_one_lease_a_day_is_still_growing() -> None:
    row = radar({"db": 11}, {"db": 10}).loc["db"]
    assert row["status"] == "growing" and row["growth_per_day"] == pytest.approx(0.1)


def test_a_crossing_thirty_and_a_half_days_away_is_growing_not_within_thirty_days() -> None:
    frame = radar({"db": 695, "kv": 700}, {"db": 595, "kv": 600})
    assert frame.loc["db", "status"] == "growing"  # 10 a day: 30.5 days to 1000
    assert frame.loc["kv", "status"] == "crossing within 30 days"  # 30 days exactly


def test_a_scan_takes_chunks_of_one_and_refuses_fewer(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    _lease_ids(empty_sandbox, client, 2)
    assert client.leases.scan(chunk=1).leases == 2
    with pytest.raises(InputError, match="^chunk must be at least 1, not 0$"):
        client.leases.scan(chunk=0)


def test_a_scan_past_its_deadline_stops_after_its_first_chunk(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    from toolkit.secrets.checkpoint import WalkInterrupted

    _lease_ids(empty_sandbox, client, 3)
    with pytest.raises(WalkInterrupted, match="deadline of 0 s passed"):
        client.leases.scan(chunk=1, deadline=0)


def test_views_of_a_scan_carry_the_scans_own_record(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    _lease_ids(empty_sandbox, client, 2)
    scan = client.leases.scan(["database/"])
    record = scan.frame().attrs["coverage"]
    assert record["view"] == "leases.scan" and record["asked"] == ["database/"]
    assert ttl_buckets(scan).attrs["coverage"] == record
    assert expiry_calendar(scan).attrs["coverage"] == record


def test_an_empty_scan_gives_the_lease_frame_with_its_columns(client: SecretsClient) -> None:
    from toolkit._frames import build_frame
    from toolkit.secrets.leases import LEASES

    frame = client.leases.scan().frame()
    typed = build_frame([], LEASES)
    assert frame.empty and frame.index.name == "lease_id"
    assert frame.dtypes.to_dict() == typed.dtypes.to_dict()


def _team_leases(sandbox: Sandbox) -> None:
    with sandbox.secrets.lock:
        for i in range(2):
            sandbox.secrets.leases.create("team/db/creds/ro", ttl=600, suffix=f"t{i}")


def test_a_full_scan_names_each_leases_mount_from_the_servers_mount_table(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    client.http.json("POST", "/sys/mounts/team/db", json={"type": "database"})
    _team_leases(empty_sandbox)
    frame = client.leases.scan().frame()
    assert set(zip(frame["mount"], frame["role"], strict=True)) == {("team/db/", "ro")}


def test_a_scan_of_named_mounts_names_each_leases_mount_by_them_without_the_mount_table(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    _team_leases(empty_sandbox)
    with _lookup_only(empty_sandbox, client) as looker:
        frame = looker.leases.scan(["team/db"]).frame()
    assert set(zip(frame["mount"], frame["role"], strict=True)) == {("team/db/", "ro")}


def test_the_checkpoint_names_the_folders_finished_and_the_last_lease_of_the_one_under_way(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    from toolkit._durable import load_record
    from toolkit.secrets.checkpoint import server_identity
    from toolkit.secrets.leases.radar import scan_leases

    _three_leases_in_two_folders(empty_sandbox, "k")
    a, b = (client.leases.list_lease_ids(f"database/creds/{f}/") for f in "ab")
    point = tmp_path / "scan.checkpoint"
    chunks: list[int] = []

    def stop_in_the_second_folder(rows: int) -> None:
        chunks.append(rows)
        if len(chunks) == 3:  # a's two chunks (2 and 1 leases), then b's first
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        scan_leases(client.http, checkpoint=point, chunk=2, on_chunk=stop_in_the_second_folder)
    identity = server_identity(client.http, "leases scan checkpoint", {"starts": [""]})
    saved = load_record(point, identity)
    assert saved is not None
    assert saved["state"]["done"] == ["database/creds/a/"]
    assert saved["state"]["partial"] == {"database/creds/b/": b[1].rpartition("/")[2]}
    scan = scan_leases(client.http, checkpoint=point, chunk=2)
    assert sorted(scan.frame().index) == sorted(a + b)
    finished = load_record(point, identity)
    assert finished is not None
    assert finished["state"]["done"] == ["database/creds/a/", "database/creds/b/"]
    assert finished["state"]["partial"] == {}


def test_a_scans_record_counts_the_leases_it_listed(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    _lease_ids(empty_sandbox, client, 3)
    assert client.leases.scan().frame().attrs["coverage"]["read"] == 3
