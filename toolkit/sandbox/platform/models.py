"""State and rules of the platform sandbox (spec 000), in plain Python, with no HTTP in it.

:class:`PlatformService` is the one object the sandbox holds: the clock, the
lock and one store per area, each in its own module:

- :mod:`.organizations`: organizations, workspaces, teams, policy sets, and
  who the caller is (``org_store``);
- :mod:`.pools`: agent pools (``pool_store``);
- :mod:`.agents`: agents and their reports (``agent_store``);
- :mod:`.parameters`: policy set parameters (``parameter_store``);
- :mod:`.team_access`: team-workspace records (``access_store``).

The stores' methods that take a :class:`Caller` are what the HTTP endpoints
do, with typed arguments (one an endpoint, named for its verb). The HTTP side
(``http/``) calls them on the store, as the secrets half's handlers call
theirs: the endpoint holds :attr:`PlatformService.lock` around a whole
request, so the service adds no method that would only take the lock again
and pass the call on (docs/decisions.md, "One door into the sandbox's
state"). What the service itself offers is the Python API for callers outside
a request (the demo, scripts, tests): the ``add_*`` / ``set_*`` methods that
seed organizations, teams and agents, each taking the lock. Every method
checks all of its input before changing anything and refuses with a
:class:`~.errors.PlatformError` (the HTTP side renders it as a JSON:API error
document).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..._spec.team_access import (
    ACCESS_LEVELS,
    AGENT_STATUSES,
    CUSTOM_DEFAULTS,
    IMPLIED_PERMISSIONS,
)
from .agents import Agent, AgentStore
from .errors import PlatformError, existing
from .ids import IdSource
from .organizations import Caller, Organization, OrganizationStore, PolicySet, Team, Workspace
from .parameters import CATEGORY, Parameter, ParameterStore
from .pools import AgentPool, PoolStore
from .team_access import PermissionSettings, TeamAccessStore, TeamWorkspace

if TYPE_CHECKING:
    from .._clock import Clock

__all__ = [
    "ACCESS_LEVELS",
    "AGENT_STATUSES",
    "Agent",
    "AgentPool",
    "CUSTOM_DEFAULTS",
    "Caller",
    "IMPLIED_PERMISSIONS",
    "Organization",
    "Parameter",
    "PermissionSettings",
    "PlatformError",
    "PlatformService",
    "PolicySet",
    "Team",
    "TeamWorkspace",
    "Workspace",
]


class PlatformService:
    """All platform state, its rules and its visibility model; thread-safe through :attr:`lock`."""

    def __init__(self, *, clock: Clock, admin_token: str, pool_limit: int = 1) -> None:
        self.clock = clock
        self.lock = threading.RLock()
        self.ids = IdSource()
        self.org_store = OrganizationStore(clock=clock, ids=self.ids, admin_token=admin_token)
        self.pool_store = PoolStore(
            clock=clock, ids=self.ids, orgs=self.org_store, limit=pool_limit
        )
        self.agent_store = AgentStore(clock=clock, ids=self.ids, pools=self.pool_store)
        self.parameter_store = ParameterStore(ids=self.ids, orgs=self.org_store)
        self.access_store = TeamAccessStore(ids=self.ids, orgs=self.org_store)

    # Stored state (``--state``): everything but the lock.
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()

    def __repr__(self) -> str:
        return (
            f"<PlatformService organizations={len(self.org_store.organizations)} "
            f"pools={len(self.pool_store.pools)} agents={len(self.agent_store.agents)}>"
        )

    @property
    def pool_limit(self) -> int:
        """How many agent pools an organization may hold."""
        return self.pool_store.limit

    @pool_limit.setter
    def pool_limit(self, limit: int) -> None:
        with self.lock:
            self.pool_store.limit = limit

    def has_organization(self, name: str) -> bool:
        """Whether an organization of this name exists (seeding asks before adding one)."""
        with self.lock:
            return name in self.org_store.organizations

    # -- identity --------------------------------------------------------------------
    def describe_tokens(self) -> list[tuple[str, str]]:
        """Every accepted token with what it stands for (the command line prints these)."""
        with self.lock:
            return self.org_store.describe_tokens()

    # -- Python API: seeding ---------------------------------------------------------
    def add_organization(
        self,
        name: str,
        *,
        email: str | None = None,
        token: str | None = None,
        created_at: datetime | None = None,
    ) -> str:
        """Create an organization (with its organization token, if given); returns its name."""
        with self.lock:
            return self.org_store.add_organization(
                name, email=email, token=token, created_at=created_at
            )

    def add_workspace(
        self, organization: str, name: str, *, created_at: datetime | None = None
    ) -> str:
        """Create a workspace; returns its id (``ws-``). It runs remotely until
        :meth:`assign_workspace_pool` puts it on an agent pool."""
        with self.lock:
            return self.org_store.add_workspace(organization, name, created_at=created_at)

    def assign_workspace_pool(self, workspace_id: str, pool_id: str | None) -> None:
        """Make a workspace run on an agent pool of its organization (None: stop using one)."""
        with self.lock:
            self.pool_store.assign_workspace(workspace_id, pool_id)

    def add_team(
        self,
        organization: str,
        name: str,
        *,
        members: Iterable[str] = (),
        secret: bool = False,
        owners: bool = False,
        organization_access: Iterable[str] = (),
    ) -> str:
        """Create a team whose members are the given tokens; returns its id (``team-``).

        ``owners`` makes it the organization's owners team (one an organization): its
        members' tokens act as owners. ``organization_access`` names the team's
        organization-level permissions in the API's spelling (``"manage-workspaces"``:
        admin on every workspace; see ``ORGANIZATION_PERMISSIONS``).
        """
        with self.lock:
            return self.org_store.add_team(
                organization,
                name,
                members=members,
                secret=secret,
                owners=owners,
                organization_access=organization_access,
            )

    def add_policy_set(
        self,
        organization: str,
        name: str,
        *,
        kind: str = "sentinel",
        description: str = "",
        created_at: datetime | None = None,
    ) -> str:
        """Create a policy set (``sentinel`` or ``opa``); returns its id (``polset-``)."""
        with self.lock:
            return self.org_store.add_policy_set(
                organization, name, kind=kind, description=description, created_at=created_at
            )

    def add_parameter(
        self, policy_set_id: str, key: str, value: str = "", *, sensitive: bool = False
    ) -> str:
        """Add a parameter to a policy set, with the HTTP API's rules; returns its id (``var-``)."""
        with self.lock:
            ps = existing(self.org_store.policy_sets, policy_set_id, "policy set")
            return self.parameter_store.add(
                ps, key, value, category=CATEGORY, sensitive=sensitive
            ).id

    def add_pool(
        self,
        organization: str,
        name: str,
        *,
        organization_scoped: bool = True,
        allowed_workspace_ids: Iterable[str] = (),
        created_at: datetime | None = None,
    ) -> str:
        """Create an agent pool, with the HTTP API's rules; returns its id (``apool-``)."""
        with self.lock:
            org = self.org_store.named(organization)
            pool = self.pool_store.add(
                org, name, organization_scoped, list(allowed_workspace_ids), unique=False
            )
            if created_at is not None:
                pool.created_at = created_at
            return pool.id

    def add_agent(
        self,
        pool_id: str,
        *,
        name: str | None,
        status: str,
        ip_address: str,
        last_ping_at: datetime | None = None,
    ) -> str:
        """Register an agent in a pool (the HTTP API cannot); returns its id (``agent-``)."""
        with self.lock:
            pool = existing(self.pool_store.pools, pool_id, "agent pool")
            return self.agent_store.register(
                pool,
                name=name,
                status=status,
                ip_address=ip_address,
                last_ping_at=last_ping_at,
                unique=False,
            ).id

    def set_agent_status(
        self, agent_id: str, status: str, last_ping_at: datetime | None = None
    ) -> None:
        """Record an agent's report: its status and a ping at ``last_ping_at`` (default now)."""
        with self.lock:
            agent = existing(self.agent_store.agents, agent_id, "agent")
            self.agent_store.report(agent, status=status, last_ping_at=last_ping_at)

    def add_team_access(
        self, workspace_id: str, team_id: str, access: str, **custom: str | bool
    ) -> str:
        """Give a team access to a workspace, with the HTTP API's rules; returns the ``tws-`` id.

        Custom permissions are keyword arguments in snake_case (``state_versions="read"``).
        """
        with self.lock:
            ws = existing(self.org_store.workspaces, workspace_id, "workspace")
            team = existing(self.org_store.teams, team_id, "team")
            settings = PermissionSettings(**custom)
            return self.access_store.add(ws, team, access, settings, unique=False).id
