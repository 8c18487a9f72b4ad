"""Agent capacity: per pool, agents working, idle, holding capacity while unknown, to
remove, and when the pool runs out at the current rate of errors."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from toolkit import InputError, PlatformClient
from toolkit.platform.agent_pools import agent_capacity
from toolkit.sandbox import Sandbox


def test_capacity_per_pool_counts_what_holds_capacity_and_projects_the_run_out(
    empty_sandbox: Sandbox,
) -> None:
    platform = empty_sandbox.platform
    platform.add_organization("cap")
    platform.pool_limit = 2
    busy_pool = platform.add_pool("cap", "busy-pool")
    quiet_pool = platform.add_pool("cap", "quiet-pool")
    now = empty_sandbox.clock.now()
    layout = [
        ("busy", 0), ("busy", 0), ("idle", 0), ("idle", 0),
        ("unknown", 30), ("unknown", 60 * 5),  # one still held, one silent past 2 h
        ("errored", 60), ("errored", 60 * 3), ("exited", 10),
    ]  # fmt: skip
    for k, (status, minutes) in enumerate(layout):
        platform.add_agent(
            busy_pool,
            name=f"a{k}",
            status=status,
            ip_address="10.0.0.1",
            last_ping_at=now - timedelta(minutes=minutes),
        )
    platform.add_agent(quiet_pool, name="q", status="idle", ip_address="10.0.0.2", last_ping_at=now)

    client = PlatformClient(empty_sandbox.address, empty_sandbox.token)
    capacity = client.agent_pools.agent_capacity("cap", window=timedelta(hours=4))
    row = capacity.loc[busy_pool]
    assert (row["working"], row["idle"], row["holding_unknown"], row["to_remove"]) == (2, 2, 1, 4)
    assert row["errors_per_hour"] == 0.5  # two errored within four hours
    # Four usable at 0.5 an hour; judged by the server's Date (whole seconds).
    assert abs(row["runs_out_at"] - pd.Timestamp(now + timedelta(hours=8))) < timedelta(seconds=5)
    assert row["status"] == "runs out within a day"
    quiet = capacity.loc[quiet_pool]
    assert quiet["status"] == "steady" and pd.isna(quiet["runs_out_at"])


def test_capacity_of_no_agents_is_exhausted_and_a_bad_window_is_refused() -> None:
    pools = pd.DataFrame({"name": ["empty"]}, index=pd.Index(["apool-1"], name="id"))
    agents = pd.DataFrame(
        {"status": [], "last_ping_at": pd.Series([], dtype="datetime64[ns, UTC]"), "pool_id": []}
    )
    now = pd.Timestamp("2026-06-01T12:00Z").to_pydatetime()
    assert agent_capacity(agents, pools, now=now).loc["apool-1", "status"] == "exhausted"
    with pytest.raises(InputError, match="window"):
        agent_capacity(agents, pools, now=now, window=timedelta(0))
