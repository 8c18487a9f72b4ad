"""Issue 33: one meaning for each time band, named in its column; the radar's ``mounts``
keeps it to those mounts, and a mount that does not exist is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkit import InputError, MountNotFound
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from toolkit.secrets.leases.radar import ttl_buckets
from toolkit.secrets.leases.rules import lease_summary

HOUR = 3600
# One lease in each band, and one on the bound between the first two.
TTLS = [30 * 60, HOUR, 2 * HOUR, 3 * 86400, 10 * 86400, 60 * 86400]


def _seed(sandbox: Sandbox) -> None:
    with sandbox.secrets.lock:
        for n, ttl in enumerate(TTLS):
            sandbox.secrets.leases.create("database/creds/bands", ttl=ttl, suffix=f"b{n}")


def test_each_time_band_names_both_ends_and_the_summary_counts_what_is_within(
    empty_sandbox: Sandbox,
) -> None:
    _seed(empty_sandbox)
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        leases = client.leases.leases_by_mount(mounts=["database/"])
    bands = ttl_buckets(leases).loc["database/"]
    within = lease_summary(leases).loc["database/"]
    assert bands[["ttl_up_to_1h", "ttl_1h_to_24h", "ttl_24h_to_7d", "ttl_7d_to_30d",
                  "ttl_over_30d", "no_expiry"]].tolist() == [2, 1, 1, 1, 1, 0]  # fmt: skip
    # The bands do not overlap; "expiring within 24 h" is the sum of the bands below it.
    assert bands["count"] == len(TTLS) == sum(bands.drop("count"))
    assert within["expiring_1h"] == bands["ttl_up_to_1h"]
    assert within["expiring_24h"] == bands["ttl_up_to_1h"] + bands["ttl_1h_to_24h"]
    assert not any(c.startswith("under_") for c in ttl_buckets(leases).columns)


def test_the_radar_keeps_to_the_mounts_asked_and_names_one_that_does_not_exist(
    empty_sandbox: Sandbox,
) -> None:
    _seed(empty_sandbox)
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        client.tokens.create(policies=["default"], ttl="1h")  # a lease under auth/token/
        whole = client.leases.lease_radar()
        assert {"database/", "auth/token/"} <= set(whole.index)
        radar = client.leases.lease_radar(mounts=["database/"])
        assert list(radar.index) == ["database/", "(server)"]
        assert radar.loc["(server)", "count"] == radar.loc["database/", "count"] == len(TTLS)
        assert radar.attrs["coverage"]["complete"]
        with pytest.raises(MountNotFound, match="nothing is mounted at 'databse/'"):
            client.leases.lease_radar(mounts=["databse/"])


def test_the_radar_refuses_a_lone_string_of_mounts_in_one_line(empty_sandbox: Sandbox) -> None:
    # Read as a list, "database/" was nine mounts: "nothing is mounted at 'd/'".
    with (
        SecretsClient(empty_sandbox.address, empty_sandbox.token) as client,
        pytest.raises(InputError, match=r"mounts=\['database/'\], not a lone string"),
    ):
        client.leases.lease_radar(mounts="database/")


def test_the_radar_refuses_a_folder_where_its_store_belongs_in_one_line(
    empty_sandbox: Sandbox, tmp_path: Path
) -> None:
    # The store is the caller's to open (the client does not reach up to the history
    # store): a folder is named back with the call that opens it, and nothing is written.
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        for folder in (str(tmp_path), tmp_path):
            with pytest.raises(InputError) as refused:
                client.leases.lease_radar(folder)  # type: ignore[arg-type]
            message = str(refused.value)
            assert "\n" not in message
            assert f"lease_radar(Snapshots({str(tmp_path)!r}))" in message
    assert list(tmp_path.iterdir()) == []
