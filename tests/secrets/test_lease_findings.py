"""Lease findings: counts from LIST alone, expiry states kept apart, throttled bulk revoke."""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

import pandas as pd
import pytest

from toolkit import InputError
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.leases import (
    counts_by_mount,
    expiry_findings,
    lease_count_findings,
    top_roles,
)

LIST_ONLY = 'path "sys/leases/lookup/*" { capabilities = ["list", "sudo"] }'


def _server_counts(sandbox: Sandbox) -> Counter[tuple[str, str]]:
    """What the sandbox holds, by mount and role, read from its state."""
    with sandbox.secrets.lock:
        leases = sandbox.secrets.leases.leases_under("")
    counts: Counter[tuple[str, str]] = Counter()
    for lease in leases:
        folder = lease.lease_id.rpartition("/")[0]
        if lease.mount.startswith("auth/"):
            counts[(lease.mount, "")] += 1
        else:
            counts[(lease.mount, folder.removeprefix(lease.mount).split("/")[1])] += 1
    return counts


def test_counts_by_mount_and_role_match_the_server_with_a_list_only_token(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    client.policies.write("acl", "list-only", LIST_ONLY)
    # Without the default policy, which grants the lease lookup.
    answer = client.http.json(
        "POST",
        "/auth/token/create",
        json={"policies": ["list-only"], "ttl": "1h", "no_default_policy": True},
    )
    with SecretsClient(sandbox.address, answer["auth"]["client_token"]) as lister:
        # This token cannot look a lease up: the counts come from LIST answers alone.
        with pytest.raises(Exception, match="permission denied"):
            lister.leases.lookup(client.leases.list_lease_ids("database/")[0])
        counts = lister.leases.lease_counts(mounts=client.leases.list_mounts())

    expected = _server_counts(sandbox)
    got = {(r.mount, r.role): r.count for r in counts.itertuples()}
    assert got == dict(expected)
    assert list(counts["count"]) == sorted(counts["count"], reverse=True)
    auth = counts[counts["kind"] == "auth"]
    assert list(auth["mount"]) == ["auth/token/"] and list(auth["role"]) == [""]


def test_counts_per_mount_and_top_roles_come_from_the_role_counts(
    demo_client: SecretsClient,
) -> None:
    counts = demo_client.leases.lease_counts()
    mounts = counts_by_mount(counts)
    assert mounts["count"].sum() == counts["count"].sum()
    database = counts[counts["mount"] == "database/"]
    assert mounts.loc["database/", "count"] == database["count"].sum()
    assert mounts.loc["database/", "roles"] == len(database)
    top = top_roles(counts, 2)
    assert list(top["role"]) == list(
        counts[counts["kind"] == "secret"].nlargest(2, "count")["role"]
    )
    with pytest.raises(InputError, match="n must be at least 1"):
        top_roles(counts, 0)


def test_a_role_past_the_threshold_is_a_lease_explosion_and_a_small_one_is_not(
    demo_client: SecretsClient,
) -> None:
    counts = demo_client.leases.lease_counts()
    biggest = counts.iloc[0]
    threshold = int(biggest["count"]) - 1
    found = lease_count_findings(counts, threshold=threshold)
    high = found[found["severity"] == "high"]
    assert list(high["object"]) == [f"{biggest['mount']}{biggest['role']}"]
    assert "lease explosion" in high["reason"].iloc[0]
    # The same leases under a threshold none reaches: nothing high.
    quiet = lease_count_findings(counts, threshold=int(biggest["count"]) * 20)
    assert quiet.empty


def test_past_due_leases_are_kept_apart_from_soon_expiring_ones(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    soon = client.tokens.create(policies=["auditors"], ttl="10m")
    later = client.tokens.create(policies=["auditors"], ttl="5h")
    leases = client.leases.leases_by_mount()
    states = client.leases.expiry(leases, within=timedelta(hours=1))

    past = states[states["state"] == "past due"]
    irrevocable = client.leases.irrevocable_frame(limit="none")
    assert set(past.index) == set(irrevocable.index)
    assert (past["overdue_seconds"] > 0).all()
    soon_ids = set(states[states["state"] == "expiring soon"].index)
    token_ids = set(leases[leases["mount"] == "auth/token/"].index)
    ours = soon_ids & token_ids
    assert len(ours) == 1 and all(states.loc[i, "ttl"] <= 600 for i in ours)
    assert not (states["overdue_seconds"].notna() & (states["state"] != "past due")).any()
    assert list(states["state"]).index("expiring soon") == len(past)  # past due come first
    del soon, later

    found = expiry_findings(states)
    assert set(found["severity"].astype(str)) == {"high", "info"}
    assert found[found["severity"] == "high"]["reason"].str.contains("past due").all()


def test_leases_with_nothing_due_give_no_expiry_findings(
    empty_sandbox: Sandbox,
) -> None:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        client.tokens.create(policies=["default"], ttl="5h")
        states = client.leases.expiry(within=3600)
        assert states.empty and list(states.columns)[0] == "state"
        assert expiry_findings(states).empty
        assert client.leases.findings().empty


def test_bulk_revoke_keeps_to_its_rate_and_revokes_each_lease_once(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = client.leases.list_lease_ids("database/creds/reporting/")[:12]
    planned = client.leases.revoke_in_batches(ids, rate=30, batch_size=4)
    assert set(planned["action"]) == {"would revoke"} and list(planned["batch"]) == [
        0,
        0,
        0,
        0,
        1,
        1,
        1,
        1,
        2,
        2,
        2,
        2,
    ]
    assert set(ids) <= set(client.leases.list_lease_ids("database/creds/reporting/"))

    started = time.monotonic()
    done = client.leases.revoke_in_batches(ids, rate=30, batch_size=4, dry_run=False)
    elapsed = time.monotonic() - started

    assert set(done["action"]) == {"revoked"} and list(done.index) == ids
    assert elapsed >= 8 / 30  # three batches: two waits of 4/30 s
    assert not set(ids) & set(client.leases.list_lease_ids("database/creds/reporting/"))


def test_a_refused_revocation_is_reported_on_its_row_and_the_rest_go_on(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    ids = client.leases.list_lease_ids("database/creds/reporting/")[:3]
    token = client.tokens.create(policies=["auditors"], ttl="1h")
    with SecretsClient(sandbox.address, token["client_token"].reveal()) as auditor:
        done = auditor.leases.revoke_in_batches(ids, rate=1000, dry_run=False)
    assert list(done["action"]) == ["failed"] * 3
    assert done["detail"].str.startswith("403: permission denied").all()
    assert set(ids) <= set(client.leases.list_lease_ids("database/creds/reporting/"))
    with pytest.raises(InputError, match="rate must be a positive number"):
        client.leases.revoke_in_batches(ids, rate=0)
    with pytest.raises(InputError, match="an empty lease id"):
        client.leases.revoke_in_batches(["", *ids], rate=5, dry_run=False)


def test_counts_of_an_empty_server_are_an_empty_frame(empty_sandbox: Sandbox) -> None:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        counts = client.leases.lease_counts()
    assert counts[counts["kind"] == "secret"].empty
    assert isinstance(counts["count"].dtype, pd.Int64Dtype)
    assert counts_by_mount(counts[counts["kind"] == "secret"]).empty
