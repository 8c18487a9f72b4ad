"""State and rules of the platform sandbox (spec 000), in plain Python, with no HTTP in it.

:class:`PlatformService` is the one object the sandbox holds: the clock, the
lock and one store per area, each in its own module:

- :mod:`.organizations`: organizations, workspaces, teams, policy sets, and
  who the caller is (``OrganizationStore``);
- :mod:`.pools`: agent pools (``PoolStore``);
- :mod:`.agents`: agents and their reports (``AgentStore``);
- :mod:`.parameters`: policy set parameters (``ParameterStore``);
- :mod:`.team_access`: team-workspace records (``TeamAccessStore``).

The stores' methods that take a :class:`Caller` are what the HTTP endpoints
do, with typed arguments. The service is the one door into them: the HTTP side
(``http/``), the tests and scripts all call its methods (one an endpoint,
named as the endpoint's resource and verb), never a store, and the endpoint
holds :attr:`PlatformService.lock` for a whole request. It also offers what
the HTTP API cannot do: the ``add_*`` / ``set_*`` methods that seed
organizations, teams and agents. Every method checks all of its input before
changing anything and refuses with a :class:`~.errors.PlatformError` (the HTTP
side renders it as a JSON:API error document).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..._spec.team_access import (
    ACCESS_LEVELS,
    AGENT_STATUSES,
    CUSTOM_DEFAULTS,
    IMPLIED_PERMISSIONS,
)
from .agents import Agent, AgentStore
from .errors import PlatformError, RecordNotFound
from .ids import IdSource
from .organizations import Caller, Organization, OrganizationStore, PolicySet, Role, Team, Workspace
from .parameters import CATEGORY, Parameter, ParameterStore
from .pools import AgentPool, PoolSort, PoolStore
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

    def now(self) -> datetime:
        return self.clock.now()

    # -- identity --------------------------------------------------------------------
    def authenticate(self, token: str | None) -> Caller:
        """The caller a bearer token names; :class:`~.errors.UnknownCaller` otherwise."""
        with self.lock:
            return self.org_store.authenticate(token)

    def role(self, caller: Caller, organization: str) -> Role | None:
        """``owner``, ``member`` or None: the caller's standing in an organization."""
        return self.org_store.role(caller, organization)

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
        self,
        organization: str,
        name: str,
        *,
        agent_pool_id: str | None = None,
        created_at: datetime | None = None,
    ) -> str:
        """Create a workspace (running on ``agent_pool_id``, if given); returns its id (``ws-``)."""
        with self.lock:
            if agent_pool_id is not None:
                self.pool_store.in_organization(agent_pool_id, organization)
            ws_id = self.org_store.add_workspace(organization, name, created_at=created_at)
            if agent_pool_id is not None:
                self.pool_store.assign_workspace(ws_id, agent_pool_id)
            return ws_id

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
            ps = self.org_store.policy_sets.get(policy_set_id)
            if ps is None:
                raise RecordNotFound(f"no policy set {policy_set_id!r}")
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
            pool = self.pool_store.pools.get(pool_id)
            if pool is None:
                raise RecordNotFound(f"no agent pool {pool_id!r}")
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
            agent = self.agent_store.agents.get(agent_id)
            if agent is None:
                raise RecordNotFound(f"no agent {agent_id!r}")
            self.agent_store.report(agent, status=status, last_ping_at=last_ping_at)

    def add_team_access(
        self, workspace_id: str, team_id: str, access: str, **custom: str | bool
    ) -> str:
        """Give a team access to a workspace, with the HTTP API's rules; returns the ``tws-`` id.

        Custom permissions are keyword arguments in snake_case (``state_versions="read"``).
        """
        with self.lock:
            ws, team = (
                self.org_store.workspaces.get(workspace_id),
                self.org_store.teams.get(team_id),
            )
            if ws is None or team is None:
                missing = f"workspace {workspace_id!r}" if ws is None else f"team {team_id!r}"
                raise RecordNotFound(f"no {missing}")
            settings = PermissionSettings(**custom)
            return self.access_store.add(ws, team, access, settings, unique=False).id

    # -- account details -------------------------------------------------------------
    def account(self, caller: Caller) -> dict[str, Any]:
        """``GET /account/details``: the user (or service account) the token stands for."""
        with self.lock:
            return self.org_store.account(caller)

    # -- organizations, workspaces, teams, policy sets (read endpoints) --------------
    def organizations(self, caller: Caller) -> list[Organization]:
        """``GET /organizations``: the organizations the caller belongs to."""
        with self.lock:
            return self.org_store.list_organizations(caller)

    def organization(self, caller: Caller, name: str, *, owner: bool = False) -> Organization:
        """``GET /organizations/:name``; ``owner`` requires the right to change it."""
        with self.lock:
            return self.org_store.visible(caller, name, owner=owner)

    def workspace(self, caller: Caller, workspace_id: str) -> Workspace:
        """``GET /workspaces/:id``."""
        with self.lock:
            return self.org_store.workspace(caller, workspace_id)

    def workspaces_by_id(self, workspace_ids: Iterable[str]) -> list[Workspace]:
        """The workspaces of these ids, in their order (ids the state itself handed out,
        such as a pool's ``workspace_ids``: an answer's ``included`` member)."""
        with self.lock:
            return [self.org_store.workspaces[w] for w in workspace_ids]

    def team(self, caller: Caller, team_id: str) -> Team:
        """``GET /teams/:id``."""
        with self.lock:
            return self.org_store.team(caller, team_id)

    def policy_set(self, caller: Caller, policy_set_id: str, *, owner: bool = False) -> PolicySet:
        """``GET /policy-sets/:id``; ``owner`` requires the right to change it."""
        with self.lock:
            return self.org_store.policy_set(caller, policy_set_id, owner=owner)

    def workspaces(
        self, caller: Caller, organization: str, search: str | None = None
    ) -> list[Workspace]:
        """``GET /organizations/:name/workspaces``, ``search[name]`` a substring of the name."""
        with self.lock:
            return self.org_store.list_workspaces(caller, organization, search)

    def teams(self, caller: Caller, organization: str) -> list[Team]:
        """``GET /organizations/:name/teams``: secret teams only for owners and their members."""
        with self.lock:
            return self.org_store.list_teams(caller, organization)

    def policy_sets(self, caller: Caller, organization: str) -> list[PolicySet]:
        """``GET /organizations/:name/policy-sets``."""
        with self.lock:
            return self.org_store.list_policy_sets(caller, organization)

    # -- agent pools and agents (spec 4.1) -------------------------------------------
    def pools(
        self,
        caller: Caller,
        organization: str,
        *,
        q: str | None = None,
        sort: PoolSort | None = None,
        allowed_workspace: str | None = None,
    ) -> tuple[list[AgentPool], int]:
        """``GET /organizations/:name/agent-pools``: (matching pools in order, total in the org)."""
        with self.lock:
            return self.pool_store.list_pools(
                caller, organization, q=q, sort=sort, allowed_workspace=allowed_workspace
            )

    def pool(self, caller: Caller, pool_id: str, *, owner: bool = False) -> AgentPool:
        """``GET /agent-pools/:id``; ``owner`` requires the right to change it."""
        with self.lock:
            return self.pool_store.get(caller, pool_id, owner=owner)

    def create_pool(
        self,
        caller: Caller,
        organization: str,
        *,
        name: str,
        organization_scoped: bool = True,
        allowed_workspace_ids: Sequence[str] | None = None,
    ) -> AgentPool:
        """``POST /organizations/:name/agent-pools`` (owners)."""
        with self.lock:
            return self.pool_store.create(
                caller,
                organization,
                name=name,
                organization_scoped=organization_scoped,
                allowed_workspace_ids=allowed_workspace_ids,
            )

    def update_pool(
        self,
        caller: Caller,
        pool_id: str,
        *,
        name: str | None = None,
        organization_scoped: bool = True,
        allowed_workspace_ids: Sequence[str] | None = None,
    ) -> AgentPool:
        """``PATCH /agent-pools/:id`` (owners): the name kept when None, the allowed
        workspaces replaced unless None."""
        with self.lock:
            return self.pool_store.update(
                caller,
                pool_id,
                name=name,
                organization_scoped=organization_scoped,
                allowed_workspace_ids=allowed_workspace_ids,
            )

    def delete_pool(self, caller: Caller, pool_id: str) -> None:
        """``DELETE /agent-pools/:id`` with its agents; refused while workspaces use the pool."""
        with self.lock:
            self.agent_store.forget_pool(self.pool_store.delete(caller, pool_id))

    def agents(
        self, caller: Caller, pool_id: str, *, last_ping_since: datetime | None = None
    ) -> tuple[Agent, ...]:
        """``GET /agent-pools/:id/agents``, optionally those that pinged at or after a time."""
        with self.lock:
            return self.agent_store.list_agents(caller, pool_id, last_ping_since=last_ping_since)

    def agent(self, caller: Caller, agent_id: str, *, owner: bool = False) -> Agent:
        """``GET /agents/:id``; ``owner`` requires the right to change it."""
        with self.lock:
            return self.agent_store.get(caller, agent_id, owner=owner)

    def agent_status(self, agent: Agent) -> str:
        """An agent's status now, by the sandbox clock."""
        return self.agent_store.status(agent)

    def delete_agent(self, caller: Caller, agent_id: str) -> None:
        """``DELETE /agents/:id``: refused while the agent is idle or busy."""
        with self.lock:
            self.agent_store.delete(caller, agent_id)

    def register_agent(
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
        with self.lock:
            pool = self.pool_store.get(caller, pool_id, owner=True)
            return self.agent_store.register(
                pool,
                name=name,
                status=status,
                ip_address=ip_address,
                last_ping_at=last_ping_at,
                unique=True,
            )

    def report_agent(
        self, agent: Agent, *, status: str | None, last_ping_at: datetime | None
    ) -> None:
        """An agent's report: its status (kept when None) and a ping (default now)."""
        with self.lock:
            self.agent_store.report(agent, status=status, last_ping_at=last_ping_at)

    # -- policy set parameters (spec 4.2) --------------------------------------------
    def parameters(self, caller: Caller, policy_set_id: str) -> list[Parameter]:
        """``GET /policy-sets/:id/parameters``."""
        with self.lock:
            return self.parameter_store.list_parameters(caller, policy_set_id)

    def parameter(
        self, caller: Caller, policy_set_id: str, parameter_id: str, *, owner: bool = False
    ) -> Parameter:
        """``GET /policy-sets/:id/parameters/:parameter_id``; ``owner``: the right to change it."""
        with self.lock:
            return self.parameter_store.get(caller, policy_set_id, parameter_id, owner=owner)

    def create_parameter(
        self,
        caller: Caller,
        policy_set_id: str,
        *,
        key: str,
        value: str = "",
        category: str = CATEGORY,
        sensitive: bool = False,
    ) -> Parameter:
        """``POST /policy-sets/:id/parameters`` (owners)."""
        with self.lock:
            return self.parameter_store.create(
                caller, policy_set_id, key=key, value=value, category=category, sensitive=sensitive
            )

    def update_parameter(
        self,
        caller: Caller,
        policy_set_id: str,
        parameter_id: str,
        *,
        key: str | None = None,
        value: str | None = None,
        category: str | None = None,
        sensitive: bool | None = None,
    ) -> Parameter:
        """``PATCH /policy-sets/:id/parameters/:parameter_id``: what is None stays unchanged."""
        with self.lock:
            return self.parameter_store.update(
                caller,
                policy_set_id,
                parameter_id,
                key=key,
                value=value,
                category=category,
                sensitive=sensitive,
            )

    def delete_parameter(self, caller: Caller, policy_set_id: str, parameter_id: str) -> None:
        """``DELETE /policy-sets/:id/parameters/:parameter_id`` (owners)."""
        with self.lock:
            self.parameter_store.delete(caller, policy_set_id, parameter_id)

    # -- team access (spec 4.3) ------------------------------------------------------
    def team_accesses(self, caller: Caller, workspace_id: str) -> list[TeamWorkspace]:
        """``GET /team-workspaces?filter[workspace][id]=``."""
        with self.lock:
            return self.access_store.list_records(caller, workspace_id)

    def team_access(self, caller: Caller, access_id: str, *, manage: bool = False) -> TeamWorkspace:
        """``GET /team-workspaces/:id``; ``manage`` requires the right to change it."""
        with self.lock:
            return self.access_store.get(caller, access_id, manage=manage)

    def create_team_access(
        self,
        caller: Caller,
        workspace_id: str,
        team_id: str,
        access: str,
        permissions: PermissionSettings = PermissionSettings(),
    ) -> TeamWorkspace:
        """``POST /team-workspaces`` (owners and the workspace's admins)."""
        with self.lock:
            return self.access_store.create(caller, workspace_id, team_id, access, permissions)

    def update_team_access(
        self,
        caller: Caller,
        access_id: str,
        access: str | None = None,
        permissions: PermissionSettings = PermissionSettings(),
    ) -> TeamWorkspace:
        """``PATCH /team-workspaces/:id`` (owners and the workspace's admins)."""
        with self.lock:
            return self.access_store.update(caller, access_id, access, permissions)

    def delete_team_access(self, caller: Caller, access_id: str) -> None:
        """``DELETE /team-workspaces/:id`` (owners and the workspace's admins)."""
        with self.lock:
            self.access_store.delete(caller, access_id)
