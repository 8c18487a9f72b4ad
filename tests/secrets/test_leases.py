"""Leases through the client: one at a time, the walk of the lookup tree, and bulk actions."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

from tests._demo_leases import demo_lease_folders, demo_roles
from toolkit import BadRequest, InputError
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.leases import Lease
from toolkit.secrets import SecretsClient
from toolkit.secrets.leases import lease_summary, split_lease_id
from toolkit.secrets.leases._lookup import lease_fields


@pytest.fixture(scope="module")
def lease_snapshot() -> Iterator[tuple[pd.DataFrame, dict[str, Lease]]]:
    """The walked lease frame and the server's leases at the same instant.

    A sandbox of its own, read right after it starts: demo leases expire on a
    two-minute grid from the clock's start, so none is gone before the walk ends
    (checked, not assumed); the session-wide demo sandbox loses leases as it runs.
    """
    with Sandbox() as sandbox, SecretsClient(sandbox.address, sandbox.token) as client:
        with sandbox.secrets.lock:
            before = {le.lease_id: le for le in sandbox.secrets.leases.leases_under("")}
        frame = client.leases.leases_by_mount()
        with sandbox.secrets.lock:
            first_expiry = min(
                le.expire_time for le in before.values() if le.expire_time and not le.irrevocable
            )
            assert sandbox.secrets.clock.now() < first_expiry, "a lease expired during the walk"
        yield frame, before


@pytest.fixture(scope="module")
def lease_frame(lease_snapshot: tuple[pd.DataFrame, dict[str, Lease]]) -> pd.DataFrame:
    return lease_snapshot[0]


def test_leases_by_mount_holds_every_lease_the_server_holds(
    lease_snapshot: tuple[pd.DataFrame, dict[str, Lease]],
) -> None:
    lease_frame, leases = lease_snapshot
    assert len(leases) == sum(demo_lease_folders().values())
    assert set(lease_frame.index) == set(leases)
    for lease_id, row in lease_frame.iterrows():
        lease = leases[str(lease_id)]
        assert row["mount"] == lease.mount
        assert row["issue_time"] == lease.issue_time
        assert row["expire_time"] == lease.expire_time
        if lease.last_renewal_time is None:
            assert pd.isna(row["last_renewal_time"])
        else:
            assert row["last_renewal_time"] == lease.last_renewal_time
        assert bool(row["renewable"]) == (lease.renewable and not lease.irrevocable)


def test_the_lease_frame_has_stable_columns_and_real_dtypes(lease_frame: pd.DataFrame) -> None:
    assert lease_frame.index.name == "lease_id"
    assert list(lease_frame.columns) == [
        "mount",
        "role",
        "issue_time",
        "expire_time",
        "last_renewal_time",
        "ttl",
        "renewable",
    ]
    assert str(lease_frame["expire_time"].dtype) == "datetime64[ns, UTC]"
    assert str(lease_frame["ttl"].dtype) == "Int64"
    assert str(lease_frame["renewable"].dtype) == "boolean"
    roles = set(lease_frame.loc[lease_frame["mount"] == "database/", "role"])
    assert roles == demo_roles("database/")
    assert set(lease_frame.loc[lease_frame["mount"] == "ad/", "role"]) == demo_roles("ad/")


def test_a_prefix_or_mounts_limit_the_walk(demo_client: SecretsClient) -> None:
    readonly = demo_client.leases.leases_by_mount("database/creds/readonly")
    assert len(readonly) and set(readonly["role"]) == {"readonly"}
    both = demo_client.leases.leases_by_mount(mounts=["broker/", "pki/"])
    assert set(both["mount"]) == {"broker/", "pki/"}
    with pytest.raises(InputError):
        demo_client.leases.leases_by_mount("a/", mounts=["b/"])


def test_the_summary_counts_leases_per_mount_by_ttl(lease_frame: pd.DataFrame) -> None:
    summary = lease_summary(lease_frame)
    database = lease_frame[lease_frame["mount"] == "database/"]
    row = summary.loc["database/"]
    assert row["count"] == len(database)
    assert row["expiring_1h"] == int((database["ttl"] <= 3600).sum())
    assert row["expiring_24h"] == int((database["ttl"] <= 86400).sum())
    assert row["min_ttl"] == database["ttl"].min()
    assert row["median_ttl"] == float(database["ttl"].median())
    assert int(summary["count"].sum()) == len(lease_frame)


def test_the_summary_of_no_leases_is_an_empty_frame_with_its_columns(
    lease_frame: pd.DataFrame,
) -> None:
    empty = lease_summary(lease_frame.iloc[0:0])
    assert empty.empty and list(empty.columns) == [
        "count",
        "expiring_1h",
        "expiring_24h",
        "min_ttl",
        "median_ttl",
    ]


def test_lookup_reads_the_spec_field_and_the_real_servers_last_renewal() -> None:
    spec = lease_fields({"last_renewal_time": "2026-06-01T10:00:00.5Z"}, "x/1")
    real = lease_fields({"last_renewal": "2026-06-01T10:00:00.5Z", "path": "x/1"}, "x/1")
    assert spec["last_renewal_time"] == real["last_renewal_time"]
    assert real["last_renewal_time"].tzinfo is not None


def test_a_lease_id_splits_into_mount_and_role() -> None:
    assert split_lease_id("database/creds/readonly/Xy") == ("database/", "readonly")
    assert split_lease_id("auth/token/create/Xy") == ("auth/token/", "create")
    assert split_lease_id("kv/team/creds/r/Xy", ["kv/team/"]) == ("kv/team/", "r")


def test_lookup_list_renew_and_revoke_one_lease(client: SecretsClient) -> None:
    leases = client.leases
    role = leases.list_leases("database/creds/readonly/")
    assert role and not any(k.endswith("/") for k in role)
    lease_id = "database/creds/readonly/" + role[0]
    looked = leases.lookup(lease_id)
    assert looked["lease_id"] == lease_id and looked["renewable"] is True
    renewed = leases.renew(lease_id, 600)
    assert renewed["lease_id"] == lease_id and renewed["lease_duration"] <= 600
    assert leases.lookup(lease_id)["last_renewal_time"] is not None
    leases.revoke(lease_id)
    with pytest.raises(BadRequest, match="invalid lease"):
        leases.lookup(lease_id)


def test_bulk_renew_reports_every_lease_and_never_stops_at_a_failure(
    client: SecretsClient,
) -> None:
    ids = client.leases.list_lease_ids("database/creds/app/")[:5]
    certificate = client.leases.list_lease_ids("pki/")[0]
    todo = [*ids[:2], "database/creds/app/unknown", certificate, *ids[2:]]

    planned = client.leases.renew_leases(todo, 900, show_progress=False)
    assert set(planned["action"]) == {"would renew"}

    done = client.leases.renew_leases(todo, 900, dry_run=False, show_progress=False)
    assert list(done.index) == todo
    assert (done.loc[ids, "action"] == "renewed").all()
    assert done.loc["database/creds/app/unknown", "action"] == "failed"
    assert "lease not found" in str(done.loc["database/creds/app/unknown", "detail"])
    assert done.loc[certificate, "action"] == "failed"


def test_a_renewal_past_the_max_ttl_returns_the_servers_capping_warning(
    client: SecretsClient,
) -> None:
    first, second, third = client.leases.list_lease_ids("database/creds/app/")[:3]
    within = client.leases.renew(first, 60)
    assert within["lease_duration"] == 60 and within["warnings"] == []
    capped = client.leases.renew(second, 10**8)
    assert capped["lease_duration"] < 10**8
    assert len(capped["warnings"]) == 1 and "capped" in capped["warnings"][0]
    done = client.leases.renew_leases([third], 10**8, dry_run=False, show_progress=False)
    detail = str(done.loc[third, "detail"])
    assert detail.startswith("lease_duration ") and "exceeded the effective max_ttl" in detail


def test_a_dry_run_changes_nothing(client: SecretsClient) -> None:
    ids = client.leases.list_lease_ids("broker/creds/producer/")[:3]
    before = [client.leases.lookup(i)["expire_time"] for i in ids]
    client.leases.renew_leases(ids, 3600, show_progress=False)
    plan = client.leases.revoke_leases(ids, show_progress=False)
    assert set(plan["action"]) == {"would revoke"}
    assert [client.leases.lookup(i)["expire_time"] for i in ids] == before


def test_bulk_revoke_revokes_each_lease(client: SecretsClient) -> None:
    ids = client.leases.list_lease_ids("broker/creds/consumer/")[:4]
    done = client.leases.revoke_leases(ids, dry_run=False, show_progress=False)
    assert set(done["action"]) == {"revoked"}
    remaining = set(client.leases.list_lease_ids("broker/creds/consumer/"))
    assert not remaining & set(ids)


def test_revoke_prefix_and_revoke_force_empty_a_prefix(client: SecretsClient) -> None:
    client.leases.revoke_prefix("database/creds/reporting")
    assert client.leases.list_lease_ids("database/creds/reporting/") == []
    client.leases.revoke_force("database/creds/app")
    assert client.leases.list_lease_ids("database/creds/app/") == []
    with pytest.raises(InputError):
        client.leases.revoke_prefix("")


def test_irrevocable_leases_are_counted_and_listed_as_the_server_holds_them(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    counts = client.leases.count_irrevocable()
    with sandbox.secrets.lock:
        expected_counts, total = sandbox.secrets.leases.count_irrevocable()
        irrevocable, _ = sandbox.secrets.leases.list_irrevocable()
    assert counts["lease_count"] == total and counts["counts"] == expected_counts
    frame = client.leases.irrevocable_frame()
    assert set(frame.index) == {lease.lease_id for lease in irrevocable}
    assert frame["error"].notna().all()
    assert len(client.leases.irrevocable_frame(limit=2)) == 2


def test_tidy_returns_the_servers_warning(client: SecretsClient) -> None:
    assert any("Tidy" in w for w in client.leases.tidy())
