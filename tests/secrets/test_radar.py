"""The lease radar: the streamed scan that resumes, time-left buckets, growth against
a snapshot and the projected crossing, top offenders, the revocation plan."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from toolkit._durable import load_record
from toolkit.drift import Snapshots
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.checkpoint import WalkInterrupted, server_identity
from toolkit.secrets.leases.radar import (
    expiry_calendar,
    lease_radar,
    radar_since_snapshot,
    scan_leases,
    top_offenders,
    ttl_buckets,
)


@pytest.fixture
def client(empty_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as c:
        yield c


def _seed(sandbox: Sandbox, per_role: int = 40) -> None:
    with sandbox.secrets.lock:
        for i in range(per_role * 3):
            folder = f"database/creds/scale-{i % 3}"
            sandbox.secrets.leases.create(folder, ttl=600 + 3600 * (i % 50), suffix=f"s{i:06d}")


def test_a_chunked_scan_finds_what_the_lease_audit_finds(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    _seed(empty_sandbox)
    whole = client.leases.leases_by_mount()
    scan = client.leases.scan(chunk=13, max_rows=30)  # spools to Parquet past 30 rows
    frame = scan.frame()
    assert scan.parquet is not None and scan.walk.complete
    assert sorted(frame.index) == sorted(whole.index)
    assert frame.dtypes.to_dict() == whole.dtypes.to_dict()
    buckets = ttl_buckets(scan)
    assert int(buckets["count"].sum()) == len(whole)
    assert buckets.loc["database/", "ttl_up_to_1h"] == int(
        (whole[whole.mount == "database/"].ttl <= 3600).sum()
    )
    calendar = expiry_calendar(scan, freq="D")
    assert int(calendar.to_numpy().sum()) == int(whole["expire_time"].notna().sum())


def _saved(client: SecretsClient, point: Path) -> dict[str, Any]:
    identity = server_identity(client.http, "leases scan checkpoint", {"starts": [""]})
    saved = load_record(point, identity)
    assert saved is not None
    return saved


def test_an_interrupted_scan_resumes_from_its_checkpoint(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    point = tmp_path / "leases.checkpoint"
    seen: list[int] = []

    def stop_after_three(rows: int) -> None:
        seen.append(rows)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as stopped:
        scan_leases(client.http, checkpoint=point, chunk=15, on_chunk=stop_after_three)
    assert seen == [15, 30, 40]
    assert any("40 leases looked up" in n for n in getattr(stopped.value, "__notes__", []))
    saved = _saved(client, point)
    assert saved["rows"] == 40 and not saved["finished"]

    whole = client.leases.leases_by_mount()
    lookups: list[str] = []
    client.http.response_hooks.append(
        lambda r: lookups.append(r.url) if r.method == "POST" else None
    )
    scan = client.leases.scan(checkpoint=point, chunk=15)
    assert scan.resumed and sorted(scan.frame().index) == sorted(whole.index)
    assert len(lookups) == len(whole) - 40  # the done ones are not looked up again
    assert _saved(client, point)["finished"]


def test_a_lost_connection_stops_the_scan_saying_how_far_it_got(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox)
    with empty_sandbox.secrets.lock:  # one level deeper: listed after the others are looked up
        for i in range(30):
            empty_sandbox.secrets.leases.create("auth/token/create/deep", ttl=60, suffix=f"d{i}")
    empty_sandbox.faults.drop_after_apply("LIST", "/v1/sys/leases/lookup/auth/token/create/deep", 9)
    point = tmp_path / "scan.json"
    with pytest.raises(WalkInterrupted, match=r"120 leases looked up .*run it again"):
        client.leases.scan(checkpoint=point, chunk=50)
    empty_sandbox.faults.clear()
    lookups: list[str] = []
    client.http.response_hooks.append(
        lambda r: lookups.append(r.url) if r.method == "POST" else None
    )
    scan = client.leases.scan(checkpoint=point, chunk=50)
    assert scan.resumed and len(scan.frame()) == 150 and len(lookups) == 30


def test_radar_projects_the_crossing_from_growth_since_the_snapshot(tmp_path: Path) -> None:
    def counts(n_db: int, n_tok: int) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "mount": pd.array(["database/", "auth/token/"], dtype="string"),
                "role": pd.array(["ro", ""], dtype="string"),
                "kind": pd.array(["secret", "auth"], dtype="string"),
                "count": pd.array([n_db, n_tok], dtype="Int64"),
            }
        )

    then = datetime(2026, 6, 1, tzinfo=UTC)
    now = then + timedelta(days=10)
    store = Snapshots(tmp_path)
    store.save("lease-counts", counts(1000, 500), taken_at=then)
    radar = radar_since_snapshot(counts(21000, 500), store, threshold=41000, now=now)
    db = radar.loc["database/"]
    assert db["growth"] == 20000 and db["growth_per_day"] == 2000.0
    assert db["projected_crossing"] == pd.Timestamp(now + timedelta(days=10))
    assert db["status"] == "crossing within 30 days"
    assert radar.loc["auth/token/", "status"] == "steady"
    server = radar.loc["(server)"]
    assert server["count"] == 21500 and server["previous_count"] == 1500
    assert len(store.list("lease-counts")) == 2  # stored for the next run

    first = lease_radar(counts(300, 0), threshold=256)
    assert first.loc["database/", "status"] == "over"
    assert first.loc["auth/token/", "status"] == "first snapshot"
    top = top_offenders(counts(21000, 500), previous=counts(1000, 600), n=1)
    assert list(top["mount"]) == ["database/"] and top.loc[0, "growth"] == 20000


def test_the_revocation_plan_sends_nothing_until_apply_and_never_twice(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    _seed(empty_sandbox, per_role=10)
    ids = client.leases.list_lease_ids("database/creds/scale-0/")
    journal = tmp_path / "revoked.journal"
    preview = client.leases.revocation_plan(ids, rate=1000, batch_size=4, journal=journal)
    assert len(preview) == 10 and set(preview["outcome"]) == {"will send"}
    assert set(preview["method"]) == {"POST"} and set(preview["path"]) == {"sys/leases/revoke"}
    assert list(preview["batch"]) == [0] * 4 + [1] * 4 + [2] * 2
    assert len(client.leases.list_lease_ids("database/creds/scale-0/")) == 10

    revokes: list[str] = []
    client.http.response_hooks.append(
        lambda r: revokes.append(r.url) if r.url.endswith("/sys/leases/revoke") else None
    )
    done = client.leases.revocation_plan(
        ids[:6], rate=1000, batch_size=4, apply=True, journal=journal
    )
    assert set(done["outcome"]) == {"revoked"} and len(revokes) == 6
    again = client.leases.revocation_plan(ids, rate=1000, batch_size=4, apply=True, journal=journal)
    assert len(again) == 10 and len(revokes) == 10  # the six already sent are not sent again
    assert (again["outcome"] == "revoked").all()
    assert again["detail"].str.startswith("recorded by an earlier run").sum() == 6
    assert client.leases.list_lease_ids("database/creds/scale-0/") == []
    assert sum(empty_sandbox.secrets.leases.revoke_requests.values()) == 10


def test_the_area_radar_compares_with_its_last_snapshot_by_the_servers_clock(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    def add(count: int, tag: str) -> None:
        with empty_sandbox.secrets.lock:
            for i in range(count):
                folder = "database/creds/scale-0"
                empty_sandbox.secrets.leases.create(folder, ttl=7 * 86400, suffix=f"{tag}{i}")

    add(30, "a")
    first = client.leases.lease_radar(Snapshots(tmp_path), threshold=1000)
    assert set(first["status"]) == {"first snapshot"} and first.attrs["coverage"]["complete"]
    add(20, "b")
    empty_sandbox.clock.advance(86400)  # a day later, by the server's clock
    client.http.json("GET", "/sys/health")  # the layer reads the server's Date again
    second = client.leases.lease_radar(Snapshots(tmp_path), threshold=1000)
    database = second.loc["database/"]
    assert database["growth"] == 20 and 19 <= database["growth_per_day"] <= 21
    assert database["status"] == "growing" and len(Snapshots(tmp_path).list("lease-counts")) == 2


def test_views_of_a_scan_carry_what_the_scan_could_not_read(
    empty_sandbox: Sandbox, client: SecretsClient
) -> None:
    from toolkit._coverage import Gap, coverage_of

    _seed(empty_sandbox)
    scan = client.leases.scan()
    assert all(c.complete for c in coverage_of(ttl_buckets(scan)))
    scan.walk.unread.append(Gap("database/creds/", 403, "not permitted"))
    for view in (ttl_buckets(scan), expiry_calendar(scan)):
        (record,) = coverage_of(view)
        assert not record.complete and record.gaps[0].path == "database/creds/"
