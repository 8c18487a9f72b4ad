"""Agents (spec 4.1, part 3): the members of a pool, their reports and their removal."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..._spec.team_access import AGENT_STATUSES, REMOVABLE_AGENT_STATUSES
from .errors import NotRemovable, RecordNotFound, RuleViolation

if TYPE_CHECKING:
    from .._clock import Clock
    from .ids import IdSource
    from .organizations import Caller
    from .pools import AgentPool, PoolStore

__all__ = ["AGENT_STATUSES", "Agent", "AgentStore", "UNKNOWN_AGENT_TIMEOUT"]

# An agent that has not pinged for this long while `unknown` reports `errored`.
UNKNOWN_AGENT_TIMEOUT = timedelta(hours=2)


@dataclass
class Agent:
    id: str
    pool_id: str
    name: str | None
    reported_status: str
    ip_address: str
    last_ping_at: datetime

    def status_at(self, now: datetime) -> str:
        """The status as the service reports it at ``now`` (``unknown`` ages into ``errored``)."""
        if self.reported_status == "unknown" and now - self.last_ping_at >= UNKNOWN_AGENT_TIMEOUT:
            return "errored"
        return self.reported_status

    def status_settled_until(self, now: datetime) -> datetime | None:
        """When :meth:`status_at` next changes after ``now`` by the clock alone
        (None: not until the agent reports again)."""
        if self.reported_status == "unknown" and now - self.last_ping_at < UNKNOWN_AGENT_TIMEOUT:
            return self.last_ping_at + UNKNOWN_AGENT_TIMEOUT
        return None


class AgentStore:
    """Every agent, by id; a pool lists the ids of its own (``AgentPool.agents``)."""

    def __init__(self, *, clock: Clock, ids: IdSource, pools: PoolStore) -> None:
        self.clock = clock
        self.ids = ids
        self.pool_store = pools
        self.agents: dict[str, Agent] = {}
        # Each pool's agents as a tuple, until its membership or an agent's
        # report changes: a page of a big pool then costs what a page of a
        # small one does (rendered pages are kept per tuple). Not stored.
        self._rosters: dict[str, tuple[Agent, ...]] = {}

    # Stored state (``--state``): the records, not the rosters built from them.
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_rosters"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._rosters = {}

    def __repr__(self) -> str:
        return f"<AgentStore agents={len(self.agents)}>"

    # -- endpoints -------------------------------------------------------------------
    def list_agents(
        self, caller: Caller, pool_id: str, *, last_ping_since: datetime | None = None
    ) -> tuple[Agent, ...]:
        """``GET /agent-pools/:id/agents``, optionally those that pinged at or after a time."""
        pool = self.pool_store.get(caller, pool_id)
        agents = self._rosters.get(pool.id)
        if agents is None:
            agents = self._rosters[pool.id] = tuple(self.agents[a] for a in pool.agents)
        if last_ping_since is not None:
            agents = tuple(a for a in agents if a.last_ping_at >= last_ping_since)
        return agents

    def get(self, caller: Caller, agent_id: str, *, owner: bool = False) -> Agent:
        """``GET /agents/:id``; ``owner`` requires the right to change it."""
        agent = self.agents.get(agent_id)
        if agent is None:
            raise RecordNotFound()
        self.pool_store.get(caller, agent.pool_id, owner=owner)
        return agent

    def status(self, agent: Agent) -> str:
        """An agent's status now, by the sandbox clock."""
        return agent.status_at(self.clock.now())

    def delete(self, caller: Caller, agent_id: str) -> None:
        """``DELETE /agents/:id``: refused unless the agent is unknown, errored or exited."""
        agent = self.get(caller, agent_id, owner=True)
        status = self.status(agent)
        if status not in REMOVABLE_AGENT_STATUSES:
            raise NotRemovable(
                f"agent {agent.id} is {status}; only unknown, errored or exited agents "
                "can be deleted"
            )
        del self.agents[agent.id]
        del self.pool_store.pools[agent.pool_id].agents[agent.id]
        self._rosters.pop(agent.pool_id, None)

    def delete_pool(self, caller: Caller, pool_id: str) -> None:
        """``DELETE /agent-pools/:id`` with its agents; refused while workspaces use the pool."""
        pool = self.pool_store.delete(caller, pool_id)
        for agent_id in pool.agents:
            self.agents.pop(agent_id, None)
        self._rosters.pop(pool.id, None)

    def create(
        self,
        caller: Caller,
        pool_id: str,
        *,
        name: str | None,
        status: str,
        ip_address: str,
        last_ping_at: datetime | None = None,
    ) -> Agent:
        """``POST /_sandbox/agent-pools/:id/agents`` (sandbox only, owners): a new agent,
        its name unique in the pool."""
        pool = self.pool_store.get(caller, pool_id, owner=True)
        return self.register(
            pool,
            name=name,
            status=status,
            ip_address=ip_address,
            last_ping_at=last_ping_at,
            unique=True,
        )

    # -- registration and reports ----------------------------------------------------
    def register(
        self,
        pool: AgentPool,
        *,
        name: str | None,
        status: str,
        ip_address: str,
        last_ping_at: datetime | None,
        unique: bool,
    ) -> Agent:
        """A new agent in ``pool``, every value checked before anything changes."""
        _check_status(status)
        if not ip_address:
            raise RuleViolation("ip-address must be a non-empty string", "ip_address")
        agent = Agent(
            self.ids.new("agent-", pool.id, name or "", unique=unique or name is None),
            pool.id,
            name,
            status,
            ip_address,
            last_ping_at or self.clock.now(),
        )
        self.agents[agent.id] = agent
        pool.agents[agent.id] = None
        self._rosters.pop(pool.id, None)
        return agent

    def report(self, agent: Agent, *, status: str | None, last_ping_at: datetime | None) -> None:
        """An agent's report: its status (kept when None) and a ping (default now)."""
        if status is not None:
            _check_status(status)
            agent.reported_status = status
        agent.last_ping_at = last_ping_at or self.clock.now()
        self._rosters.pop(agent.pool_id, None)  # what its pool's pages show changed


def _check_status(status: str) -> None:
    if status not in AGENT_STATUSES:
        raise RuleViolation(
            f"status {status!r} is not one of {', '.join(AGENT_STATUSES)}", "status"
        )
