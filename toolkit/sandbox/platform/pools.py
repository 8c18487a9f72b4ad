"""Agent pools (spec 4.1): an organization's groups of agents, and the workspaces using them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from .errors import InUse, LimitReached, RecordNotFound, RuleViolation, existing

if TYPE_CHECKING:
    from .._clock import Clock
    from .ids import IdSource
    from .organizations import Caller, Organization, OrganizationStore

__all__ = ["AgentPool", "POOL_SORTS", "PoolQuery", "PoolSettings", "PoolSort", "PoolStore"]

POOL_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
PoolSort = Literal["name", "-name", "created-at", "-created-at"]
POOL_SORTS: tuple[PoolSort, ...] = ("name", "-name", "created-at", "-created-at")


@dataclass
class AgentPool:
    id: str
    name: str
    organization: str
    created_at: datetime
    organization_scoped: bool = True
    allowed_workspace_ids: list[str] = field(default_factory=list)
    # workspaces configured to use the pool
    workspace_ids: dict[str, None] = field(default_factory=dict)
    # ids of the pool's agents, in registration order (the records: ``AgentStore``)
    agents: dict[str, None] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class PoolSettings:
    """Which workspaces may use a pool, as a create or update sets it: every workspace of
    the organization (``organization_scoped``: true unless given, as the spec says) or
    those of ``allowed_workspace_ids`` (None: none on a create, unchanged on an update)."""

    organization_scoped: bool = True
    allowed_workspace_ids: Sequence[str] | None = None


@dataclass(frozen=True)
class PoolQuery:
    """What a list of an organization's pools asks for: ``q`` matches a substring of the
    name, case-insensitively; ``sort`` is ``name`` or ``created-at``, ``-`` reversing;
    ``allowed_workspace`` (a workspace name) keeps the organization-scoped pools and those
    that list the workspace as allowed."""

    q: str | None = None
    sort: PoolSort | None = None
    allowed_workspace: str | None = None


class PoolStore:
    """Every agent pool, with the one-pool-per-organization limit (``limit``)."""

    def __init__(
        self, *, clock: Clock, ids: IdSource, orgs: OrganizationStore, limit: int = 1
    ) -> None:
        if limit < 1:
            # The operator's configuration: the command line refuses --pool-limit
            # below 1 before a store is built.
            raise ValueError("pool_limit must be at least 1")  # not a client's refusal
        self.clock = clock
        self.ids = ids
        self.orgs = orgs
        self.limit = limit
        self.pools: dict[str, AgentPool] = {}

    def __repr__(self) -> str:
        return f"<PoolStore pools={len(self.pools)} limit={self.limit}>"

    def in_organization(self, pool_id: str, organization: str) -> AgentPool:
        """A pool of ``organization`` by id, for the Python API (RecordNotFound otherwise)."""
        pool = self.pools.get(pool_id)
        if pool is None or pool.organization != organization:
            raise RecordNotFound(f"no agent pool {pool_id!r} in organization {organization!r}")
        return pool

    def assign_workspace(self, workspace_id: str, pool_id: str | None) -> None:
        """Make a workspace run on a pool of its organization (None: stop using one)."""
        ws = existing(self.orgs.workspaces, workspace_id, "workspace")
        if pool_id is not None:
            self.in_organization(pool_id, ws.organization)
        if ws.agent_pool_id is not None:
            self.pools[ws.agent_pool_id].workspace_ids.pop(ws.id, None)
        ws.agent_pool_id = pool_id
        if pool_id is not None:
            self.pools[pool_id].workspace_ids[ws.id] = None

    # -- endpoints -------------------------------------------------------------------
    def list_pools(
        self, caller: Caller, organization: str, query: PoolQuery = PoolQuery()
    ) -> tuple[list[AgentPool], int]:
        """``GET /organizations/:name/agent-pools``: (matching pools in order, total in the org)."""
        q, sort, allowed_workspace = query.q, query.sort, query.allowed_workspace
        if sort is not None and sort not in POOL_SORTS:
            # The HTTP side answers an unknown sort with 400 (http/pools.py) before it
            # calls here; this guards the Python API's type.
            raise ValueError(  # not a client's refusal
                f"sort {sort!r} is not one of {', '.join(POOL_SORTS)}"
            )
        org = self.orgs.visible(caller, organization)
        pools = [self.pools[p] for p in org.pools]
        total = len(pools)
        if q:
            needle = q.lower()
            pools = [p for p in pools if needle in p.name.lower()]
        if allowed_workspace is not None:
            workspaces = self.orgs.workspaces
            ids = {w for w in org.workspaces if workspaces[w].name == allowed_workspace}
            pools = [
                p
                for p in pools
                if p.organization_scoped or ids.intersection(p.allowed_workspace_ids)
            ]
        if sort:
            key = sort.lstrip("-")
            pools.sort(
                key=(lambda p: p.name.lower()) if key == "name" else (lambda p: p.created_at),
                reverse=sort.startswith("-"),
            )
        return pools, total

    def get(self, caller: Caller, pool_id: str, *, owner: bool = False) -> AgentPool:
        """``GET /agent-pools/:id``; ``owner`` requires the right to change it."""
        pool = self.pools.get(pool_id)
        role = self.orgs.role(caller, pool.organization) if pool else None
        if pool is None or role is None or (owner and role != "owner"):
            raise RecordNotFound()
        return pool

    def create(
        self, caller: Caller, organization: str, name: str, settings: PoolSettings
    ) -> AgentPool:
        """``POST /organizations/:name/agent-pools`` (owners)."""
        org = self.orgs.visible(caller, organization, owner=True)
        scoped, allowed = settings.organization_scoped, settings.allowed_workspace_ids
        return self.add(org, name, scoped, allowed, unique=True)

    def add(
        self,
        org: Organization,
        name: str,
        organization_scoped: bool,
        allowed_workspace_ids: Sequence[str] | None,
        *,
        unique: bool,
    ) -> AgentPool:
        """A new pool, with every rule checked before anything changes."""
        if len(org.pools) >= self.limit:
            raise LimitReached(
                f"organization {org.name} already has {len(org.pools)} agent pool(s); "
                f"the limit is {self.limit} per organization"
            )
        name = self._checked_name(org, name, None)
        allowed = self._allowed_workspaces(org, allowed_workspace_ids) or []
        pool = AgentPool(
            self.ids.new("apool-", org.name, name, unique=unique),
            name,
            org.name,
            self.clock.now(),
            organization_scoped,
            allowed,
        )
        self.pools[pool.id] = pool
        org.pools[pool.id] = None
        return pool

    def update(
        self, caller: Caller, pool_id: str, name: str | None, settings: PoolSettings
    ) -> AgentPool:
        """``PATCH /agent-pools/:id``: the name kept when None; see :class:`PoolSettings`."""
        pool = self.get(caller, pool_id, owner=True)
        org = self.orgs.organizations[pool.organization]
        name = self._checked_name(org, name, pool) if name is not None else pool.name
        allowed = self._allowed_workspaces(org, settings.allowed_workspace_ids)
        pool.name, pool.organization_scoped = name, settings.organization_scoped
        if allowed is not None:
            pool.allowed_workspace_ids = allowed
        return pool

    def delete(self, caller: Caller, pool_id: str) -> AgentPool:
        """``DELETE /agent-pools/:id``: refused while workspaces still use the pool.

        Returns the removed pool: its agents go with it (``AgentStore.delete_pool``).
        """
        pool = self.get(caller, pool_id, owner=True)
        if pool.workspace_ids:
            names = ", ".join(self.orgs.workspaces[w].name for w in pool.workspace_ids)
            raise InUse(
                f"agent pool {pool.name} is used by workspaces ({names}); "
                "move them to another execution mode or pool first"
            )
        del self.pools[pool.id]
        self.orgs.organizations[pool.organization].pools.pop(pool.id, None)
        return pool

    # -- rules -----------------------------------------------------------------------
    def _checked_name(self, org: Organization, name: str, current: AgentPool | None) -> str:
        if not POOL_NAME.match(name):
            raise RuleViolation(
                f"name {name!r} may contain only letters, numbers, '-' and '_'", "name"
            )
        for other in org.pools:
            pool = self.pools[other]
            if pool is not current and pool.name.lower() == name.lower():
                raise RuleViolation(f"name {name!r} has already been taken", "name")
        return name

    def _allowed_workspaces(
        self, org: Organization, workspace_ids: Sequence[str] | None
    ) -> list[str] | None:
        if workspace_ids is None:
            return None
        ids: list[str] = []
        for i, ws_id in enumerate(workspace_ids):
            ws = self.orgs.workspaces.get(ws_id)
            if ws is None or ws.organization != org.name:
                raise RuleViolation(
                    f"workspace {ws_id!r} does not exist in organization {org.name}",
                    "allowed_workspaces",
                    i,
                )
            if ws.id not in ids:
                ids.append(ws.id)
        return ids
