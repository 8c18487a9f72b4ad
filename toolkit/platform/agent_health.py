"""How healthy a pool's agents are, judged from frames already read (no server):
the agents silent too long (:func:`stale`) and what each pool holds and loses
(:func:`agent_capacity`). :class:`toolkit.platform.agent_pools.AgentPools` reads
the agents and calls these with the server's clock.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from .._coverage import carries_coverage
from .._errors import InputError
from .._frames import Schema, build_frame

__all__ = ["AGENT_CAPACITY", "UNKNOWN_HOLD", "agent_capacity", "stale"]

# How long an agent in ``unknown`` keeps counting against the pool's capacity.
UNKNOWN_HOLD = timedelta(hours=2)


@carries_coverage("agent_pools.stale")
def stale(agents: pd.DataFrame, now: datetime, older_than: timedelta) -> pd.DataFrame:
    """The agents whose ``last_ping_at`` is before ``now - older_than``, oldest first."""
    cutoff = pd.Timestamp(now) - pd.Timedelta(older_than)
    selected = agents[agents["last_ping_at"] < cutoff].copy()
    selected["silent_for"] = pd.Timestamp(now) - selected["last_ping_at"]
    return selected.sort_values("last_ping_at")


# -- capacity --------------------------------------------------------------------------------
AGENT_CAPACITY = Schema.of(
    """pool_id pool_name agents:int working:int idle:int holding_unknown:int to_remove:int
    errors_per_hour:float runs_out_at:datetime status""",
    index="pool_id",
)


@carries_coverage("agent_pools.agent_capacity")
def agent_capacity(
    agents: pd.DataFrame,
    pools: pd.DataFrame,
    *,
    now: datetime,
    hold: timedelta = UNKNOWN_HOLD,
    window: timedelta = timedelta(hours=24),
) -> pd.DataFrame:
    """Per pool of ``pools`` (:meth:`AgentPools.pools_frame`), from ``agents``
    (:meth:`AgentPools.all_agents`), at ``now``:

    - ``working`` (busy) and ``idle`` agents;
    - ``holding_unknown``: agents in ``unknown`` whose last ping is within ``hold``
      (two hours): they count against capacity without working;
    - ``to_remove``: exited and errored agents, and unknown ones silent past ``hold``;
    - ``errors_per_hour``: agents that went ``errored`` within ``window`` (by their
      last ping), an hour; ``runs_out_at``: when the working and idle agents are all
      gone at that rate (empty when none erred). ``status``: ``exhausted`` (none
      working or idle), ``runs out within a day``, ``eroding``, or ``steady``.
    """
    if hold.total_seconds() < 0 or window.total_seconds() <= 0:
        raise InputError("hold must not be negative and window must be positive")
    rows = []
    grouped: dict[Any, pd.DataFrame] = (
        {k: g for k, g in agents.groupby("pool_id", sort=False)} if len(agents) else {}
    )
    for pool_id, pool in pools.iterrows():
        group = grouped.get(pool_id)
        if group is None:
            group = agents.iloc[0:0]
        status = group["status"].astype("object")
        ping = group["last_ping_at"]
        silent = ping.isna() | (ping < now - hold)
        unknown = status == "unknown"
        usable = int(status.isin(["busy", "idle"]).sum())
        erred = int(((status == "errored") & ping.notna() & (ping >= now - window)).sum())
        rate = erred / (window.total_seconds() / 3600)
        runs_out = now + timedelta(hours=usable / rate) if rate > 0 else None
        if usable == 0:
            verdict = "exhausted"
        elif runs_out is not None and runs_out - now <= timedelta(days=1):
            verdict = "runs out within a day"
        elif runs_out is not None:
            verdict = "eroding"
        else:
            verdict = "steady"
        rows.append(
            {
                "pool_id": pool_id,
                "pool_name": pool.get("name"),
                "agents": len(group),
                "working": int((status == "busy").sum()),
                "idle": int((status == "idle").sum()),
                "holding_unknown": int((unknown & ~silent).sum()),
                "to_remove": int((status.isin(["exited", "errored"]) | (unknown & silent)).sum()),
                "errors_per_hour": rate,
                "runs_out_at": runs_out,
                "status": verdict,
            }
        )
    return build_frame(rows, AGENT_CAPACITY)
