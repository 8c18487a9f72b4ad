"""State and rules of the platform sandbox (spec 000), in plain Python.

:class:`PlatformService` holds organizations, workspaces, teams, policy sets
and their parameters, agent pools and agents, and team-workspace records. Its
methods that take a :class:`Caller` are what the HTTP endpoints do, with the
visibility rules of spec parts 2 and 5; the ``add_*`` / ``set_*`` methods are
the Python API for what the HTTP API cannot do (seeding organizations, teams,
agents). Every method validates all of its input before changing anything and
refuses with :class:`~.errors.PlatformError`.

Who may do what (spec part 2 rule 4, part 5):

- the sandbox's admin token, an organization's token and the tokens of its
  owners team are owners of the organization: they see and may change all;
- a token on any other team of the organization is a member: it reads the
  organization's workspaces, visible teams, policy sets, parameters, agent
  pools and agents, and sees team access only for its own teams;
- anything else is invisible (404), and a member's attempt to change
  something is answered as if the record did not exist (404).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from ..._time import parse_time
from ...platform.permissions import (
    ACCESS_LEVELS,
    AGENT_STATUSES,
    CUSTOM_DEFAULTS,
    IMPLIED_PERMISSIONS,
    PERMISSION_ATTRIBUTES,
    PERMISSION_VALUES,
    REMOVABLE_AGENT_STATUSES,
)
from .errors import PlatformError, invalid, not_found, unauthorized

if TYPE_CHECKING:
    from .._clock import Clock

__all__ = [
    "ACCESS_LEVELS",
    "AGENT_STATUSES",
    "Agent",
    "AgentPool",
    "Caller",
    "IMPLIED_PERMISSIONS",
    "Organization",
    "Parameter",
    "PlatformError",
    "PlatformService",
    "PolicySet",
    "Team",
    "TeamAccess",
    "Workspace",
]

Role = Literal["owner", "member"]

# An agent that has not pinged for this long while `unknown` reports `errored`.
UNKNOWN_AGENT_TIMEOUT = timedelta(hours=2)

POOL_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
POLICY_KINDS = ("sentinel", "opa")
# Parameters are passed to the Sentinel runtime only (spec part 1).
PARAMETER_KIND = "sentinel"
TEAM_VISIBILITIES = ("secret", "organization")

_LABELS = {
    "runs": "Runs",
    "variables": "Variables",
    "state-versions": "State versions",
    "policy-mocks": "Policy mocks",
    "workspace-locking": "Workspace locking",
    "run-tasks": "Run tasks",
}

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _attr(name: str) -> str:
    return f"/data/attributes/{name}"


# -- records ---------------------------------------------------------------------------


@dataclass
class Organization:
    name: str
    email: str
    created_at: datetime
    token: str | None = field(default=None, repr=False)
    workspaces: dict[str, None] = field(default_factory=dict, repr=False)
    teams: dict[str, None] = field(default_factory=dict, repr=False)
    pools: dict[str, None] = field(default_factory=dict, repr=False)
    policy_sets: dict[str, None] = field(default_factory=dict, repr=False)


@dataclass
class Workspace:
    id: str
    name: str
    organization: str
    created_at: datetime
    agent_pool_id: str | None = None
    # team-access record ids on this workspace, in creation order
    accesses: dict[str, None] = field(default_factory=dict, repr=False)


@dataclass
class Team:
    id: str
    name: str
    organization: str
    visibility: str
    is_owners: bool
    members: set[str] = field(default_factory=set, repr=False)


@dataclass
class PolicySet:
    id: str
    name: str
    organization: str
    kind: str
    description: str
    created_at: datetime
    parameters: dict[str, Parameter] = field(default_factory=dict, repr=False)


@dataclass
class Parameter:
    id: str
    policy_set_id: str
    key: str
    value: str = field(repr=False)
    sensitive: bool = False
    category: str = "policy-set"


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
    agents: dict[str, Agent] = field(default_factory=dict, repr=False)


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


@dataclass
class TeamAccess:
    id: str
    team_id: str
    workspace_id: str
    access: str
    custom: dict[str, str | bool] = field(default_factory=lambda: dict(CUSTOM_DEFAULTS))

    @property
    def permissions(self) -> dict[str, str | bool]:
        """The six permissions: the stored ones for ``custom``, else those the level implies."""
        if self.access == "custom":
            return dict(self.custom)
        return dict(IMPLIED_PERMISSIONS[self.access])


@dataclass(frozen=True)
class Caller:
    """Who is calling: the token (never shown) and whether it is the sandbox's admin token."""

    token: str = field(repr=False)
    is_admin: bool = False


# -- the service -----------------------------------------------------------------------


class PlatformService:
    """All platform state, its rules and its visibility model; thread-safe through :attr:`lock`."""

    def __init__(self, *, clock: Clock, admin_token: str, pool_limit: int = 1) -> None:
        if pool_limit < 1:
            raise ValueError("pool_limit must be at least 1")
        self.clock = clock
        self.pool_limit = pool_limit
        self.lock = threading.RLock()
        self._admin_token = admin_token
        self._organizations: dict[str, Organization] = {}
        self._org_tokens: dict[str, str] = {}  # token -> organization name
        self._workspaces: dict[str, Workspace] = {}
        self._teams: dict[str, Team] = {}
        self._teams_by_token: dict[str, set[str]] = {}
        self._policy_sets: dict[str, PolicySet] = {}
        self._pools: dict[str, AgentPool] = {}
        self._agents: dict[str, Agent] = {}
        # Each pool's agents as a tuple, until its membership or an agent's
        # report changes (see ``agents``; rendered pages are kept per tuple).
        self._rosters: dict[str, tuple[Agent, ...]] = {}
        self._accesses: dict[str, TeamAccess] = {}
        self._access_pairs: set[tuple[str, str]] = set()  # (team id, workspace id)
        self._ids: set[str] = set()
        self._sequence = 0

    # Stored state (``--state``): everything but the lock.
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("lock", "_rosters")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()
        self._rosters = {}

    def __repr__(self) -> str:
        return (
            f"<PlatformService organizations={len(self._organizations)} "
            f"pools={len(self._pools)} agents={len(self._agents)}>"
        )

    # -- ids -------------------------------------------------------------------------
    def _new_id(self, prefix: str, *parts: str, unique: bool = False) -> str:
        """A stable id derived from ``parts``; ``unique`` adds a sequence for API creations."""
        if unique:
            self._sequence += 1
            parts = (*parts, str(self._sequence))
        salt = 0
        while True:
            seed = "\x1f".join((prefix, *parts, str(salt) if salt else "")).encode()
            number = int.from_bytes(hashlib.sha256(seed).digest()[:12], "big")
            chars = []
            for _ in range(16):
                number, digit = divmod(number, 62)
                chars.append(_ALPHABET[digit])
            candidate = prefix + "".join(chars)
            if candidate not in self._ids:
                self._ids.add(candidate)
                return candidate
            salt += 1

    # -- identity --------------------------------------------------------------------
    def authenticate(self, token: str | None) -> Caller:
        """The caller a bearer token names; 401 for a missing or unknown token."""
        if not token:
            raise unauthorized("the request has no bearer token in its Authorization header")
        with self.lock:
            if token == self._admin_token:
                return Caller(token, is_admin=True)
            if token in self._org_tokens or self._teams_by_token.get(token):
                return Caller(token)
        raise unauthorized("the bearer token is not valid")

    def role(self, caller: Caller, organization: str) -> Role | None:
        """``owner``, ``member`` or None: the caller's standing in an organization."""
        if caller.is_admin or self._org_tokens.get(caller.token) == organization:
            return "owner"
        role: Role | None = None
        for team_id in self._teams_by_token.get(caller.token, ()):
            team = self._teams[team_id]
            if team.organization == organization:
                if team.is_owners:
                    return "owner"
                role = "member"
        return role

    def _visible_org(self, caller: Caller, name: str, *, owner: bool = False) -> Organization:
        org = self._organizations.get(name)
        role = self.role(caller, name) if org else None
        if org is None or role is None or (owner and role != "owner"):
            raise not_found()
        return org

    def _team_visible(self, caller: Caller, team: Team) -> bool:
        role = self.role(caller, team.organization)
        if role == "owner":
            return True
        if role is None:
            return False
        return team.visibility == "organization" or caller.token in team.members

    def describe_tokens(self) -> list[tuple[str, str]]:
        """Every accepted token with what it stands for (the command line prints these)."""
        with self.lock:
            out = [(self._admin_token, "owner of every organization")]
            for token, org in self._org_tokens.items():
                out.append((token, f"organization token of {org}"))
            for token in sorted(self._teams_by_token):
                teams = sorted(
                    (self._teams[t] for t in self._teams_by_token[token]),
                    key=lambda t: (t.organization, t.name),
                )
                owner_of = [t.organization for t in teams if t.is_owners]
                member_of = [f"{t.organization}/{t.name}" for t in teams if not t.is_owners]
                parts = [f"owner of {', '.join(owner_of)}"] if owner_of else []
                if member_of:
                    parts.append(f"member of {', '.join(member_of)}")
                out.append((token, "; ".join(parts)))
            return out

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
            if not name or name in self._organizations:
                raise ValueError(f"organization {name!r} exists or is empty")
            if token is not None and (token in self._org_tokens or token == self._admin_token):
                raise ValueError("that organization token is already in use")
            self._organizations[name] = Organization(
                name, email or f"admin@{name}.example", created_at or self.clock.now(), token
            )
            if token is not None:
                self._org_tokens[token] = name
            return name

    def add_workspace(
        self,
        organization: str,
        name: str,
        *,
        agent_pool_id: str | None = None,
        created_at: datetime | None = None,
    ) -> str:
        """Create a workspace; returns its id (``ws-``)."""
        with self.lock:
            org = self._organization(organization)
            if any(self._workspaces[w].name == name for w in org.workspaces):
                raise ValueError(f"workspace {name!r} already exists in {organization}")
            if agent_pool_id is not None:
                self._pool_in(agent_pool_id, organization)
            ws = Workspace(
                self._new_id("ws-", organization, name),
                name,
                organization,
                created_at or self.clock.now(),
            )
            self._workspaces[ws.id] = ws
            org.workspaces[ws.id] = None
            if agent_pool_id is not None:
                self.assign_workspace_pool(ws.id, agent_pool_id)
            return ws.id

    def assign_workspace_pool(self, workspace_id: str, pool_id: str | None) -> None:
        """Make a workspace run on an agent pool of its organization (None: stop using one)."""
        with self.lock:
            ws = self._workspaces.get(workspace_id)
            if ws is None:
                raise KeyError(workspace_id)
            if pool_id is not None:
                self._pool_in(pool_id, ws.organization)
            if ws.agent_pool_id is not None:
                self._pools[ws.agent_pool_id].workspace_ids.pop(ws.id, None)
            ws.agent_pool_id = pool_id
            if pool_id is not None:
                self._pools[pool_id].workspace_ids[ws.id] = None

    def add_team(
        self,
        organization: str,
        name: str,
        *,
        members: Iterable[str] = (),
        secret: bool = False,
        owners: bool = False,
    ) -> str:
        """Create a team whose members are the given tokens; returns its id (``team-``).

        ``owners`` makes it the organization's owners team: its members' tokens act as owners.
        """
        with self.lock:
            org = self._organization(organization)
            if any(self._teams[t].name == name for t in org.teams):
                raise ValueError(f"team {name!r} already exists in {organization}")
            tokens = set(members)
            if self._admin_token in tokens or tokens & set(self._org_tokens):
                raise ValueError("a team member token may not be an admin or organization token")
            team = Team(
                self._new_id("team-", organization, name),
                name,
                organization,
                "secret" if secret else "organization",
                owners,
                tokens,
            )
            self._teams[team.id] = team
            org.teams[team.id] = None
            for token in tokens:
                self._teams_by_token.setdefault(token, set()).add(team.id)
            return team.id

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
            org = self._organization(organization)
            if kind not in POLICY_KINDS:
                raise ValueError(f"kind must be one of {', '.join(POLICY_KINDS)}")
            ps = PolicySet(
                self._new_id("polset-", organization, name),
                name,
                organization,
                kind,
                description,
                created_at or self.clock.now(),
            )
            self._policy_sets[ps.id] = ps
            org.policy_sets[ps.id] = None
            return ps.id

    def add_parameter(
        self, policy_set_id: str, key: str, value: str = "", *, sensitive: bool = False
    ) -> str:
        """Add a parameter to a policy set, with the HTTP API's rules; returns its id (``var-``)."""
        with self.lock:
            ps = self._policy_sets.get(policy_set_id)
            if ps is None:
                raise KeyError(policy_set_id)
            attrs = {"key": key, "value": value, "category": "policy-set", "sensitive": sensitive}
            return self._create_parameter(ps, attrs).id

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
            org = self._organization(organization)
            allowed = [{"type": "workspaces", "id": w} for w in allowed_workspace_ids]
            attrs = {"name": name, "organization-scoped": organization_scoped}
            pool = self._create_pool(org, attrs, allowed, unique=False)
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
            pool = self._pools.get(pool_id)
            if pool is None:
                raise KeyError(pool_id)
            attrs: dict[str, Any] = {"name": name, "status": status, "ip-address": ip_address}
            return self._create_agent(pool, attrs, last_ping_at, unique=False).id

    def set_agent_status(
        self, agent_id: str, status: str, last_ping_at: datetime | None = None
    ) -> None:
        """Record an agent's report: its status and a ping at ``last_ping_at`` (default now)."""
        with self.lock:
            agent = self._agents.get(agent_id)
            if agent is None:
                raise KeyError(agent_id)
            self._report_agent(agent, {"status": status}, last_ping_at)

    def add_team_access(
        self, workspace_id: str, team_id: str, access: str, **custom: str | bool
    ) -> str:
        """Give a team access to a workspace, with the HTTP API's rules; returns the ``tws-`` id.

        Custom permissions are keyword arguments in snake_case (``state_versions="read"``).
        """
        with self.lock:
            ws, team = self._workspaces.get(workspace_id), self._teams.get(team_id)
            if ws is None or team is None:
                raise KeyError(workspace_id if ws is None else team_id)
            attrs: dict[str, Any] = {"access": access}
            attrs.update({k.replace("_", "-"): v for k, v in custom.items()})
            return self._create_access(ws, team, attrs, unique=False).id

    # -- lookups ---------------------------------------------------------------------
    def _organization(self, name: str) -> Organization:
        org = self._organizations.get(name)
        if org is None:
            raise KeyError(name)
        return org

    def _pool_in(self, pool_id: str, organization: str) -> AgentPool:
        pool = self._pools.get(pool_id)
        if pool is None or pool.organization != organization:
            raise KeyError(pool_id)
        return pool

    def now(self) -> datetime:
        return self.clock.now()

    def workspace_record(self, workspace_id: str) -> Workspace:
        """A workspace by id, for rendering (no visibility check)."""
        return self._workspaces[workspace_id]

    # -- organizations, workspaces, teams, policy sets (read endpoints) --------------
    def organizations(self, caller: Caller) -> list[Organization]:
        """``GET /organizations``: the organizations the caller belongs to."""
        with self.lock:
            return [o for o in self._organizations.values() if self.role(caller, o.name)]

    def organization(self, caller: Caller, name: str) -> Organization:
        """``GET /organizations/:name``."""
        with self.lock:
            return self._visible_org(caller, name)

    def workspaces(
        self, caller: Caller, organization: str, search: str | None = None
    ) -> list[Workspace]:
        """``GET /organizations/:name/workspaces``, ``search[name]`` a substring of the name."""
        with self.lock:
            org = self._visible_org(caller, organization)
            out = [self._workspaces[w] for w in org.workspaces]
            if search:
                needle = search.lower()
                out = [w for w in out if needle in w.name.lower()]
            return out

    def workspace(self, caller: Caller, workspace_id: str) -> Workspace:
        """``GET /workspaces/:id``."""
        with self.lock:
            ws = self._workspaces.get(workspace_id)
            if ws is None or not self.role(caller, ws.organization):
                raise not_found()
            return ws

    def teams(self, caller: Caller, organization: str) -> list[Team]:
        """``GET /organizations/:name/teams``: secret teams only for owners and their members."""
        with self.lock:
            org = self._visible_org(caller, organization)
            return [self._teams[t] for t in org.teams if self._team_visible(caller, self._teams[t])]

    def team(self, caller: Caller, team_id: str) -> Team:
        """``GET /teams/:id``."""
        with self.lock:
            team = self._teams.get(team_id)
            if team is None or not self._team_visible(caller, team):
                raise not_found()
            return team

    def policy_sets(self, caller: Caller, organization: str) -> list[PolicySet]:
        """``GET /organizations/:name/policy-sets``."""
        with self.lock:
            org = self._visible_org(caller, organization)
            return [self._policy_sets[p] for p in org.policy_sets]

    def policy_set(self, caller: Caller, policy_set_id: str, *, owner: bool = False) -> PolicySet:
        """``GET /policy-sets/:id``; ``owner`` requires the right to change it."""
        with self.lock:
            ps = self._policy_sets.get(policy_set_id)
            role = self.role(caller, ps.organization) if ps else None
            if ps is None or role is None or (owner and role != "owner"):
                raise not_found()
            return ps

    # -- agent pools (spec 4.1) ------------------------------------------------------
    def pools(
        self,
        caller: Caller,
        organization: str,
        *,
        q: str | None = None,
        sort: str | None = None,
        allowed_workspace: str | None = None,
    ) -> tuple[list[AgentPool], int]:
        """``GET /organizations/:name/agent-pools``: (matching pools in order, total in the org).

        ``q`` matches a substring of the name, case-insensitively; ``sort`` is ``name`` or
        ``created-at``, ``-`` reversing; ``allowed_workspace`` (a workspace name) keeps the
        organization-scoped pools and those that list the workspace as allowed.
        """
        if sort not in (None, "", "name", "-name", "created-at", "-created-at"):
            raise PlatformError.one(
                400,
                "invalid sort parameter",
                f"sort {sort!r} is not one of name, -name, created-at, -created-at",
                parameter="sort",
            )
        with self.lock:
            org = self._visible_org(caller, organization)
            pools = [self._pools[p] for p in org.pools]
            total = len(pools)
            if q:
                needle = q.lower()
                pools = [p for p in pools if needle in p.name.lower()]
            if allowed_workspace is not None:
                ids = {w for w in org.workspaces if self._workspaces[w].name == allowed_workspace}
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

    def pool(self, caller: Caller, pool_id: str, *, owner: bool = False) -> AgentPool:
        """``GET /agent-pools/:id``; ``owner`` requires the right to change it."""
        with self.lock:
            pool = self._pools.get(pool_id)
            role = self.role(caller, pool.organization) if pool else None
            if pool is None or role is None or (owner and role != "owner"):
                raise not_found()
            return pool

    def owned_organization(self, caller: Caller, name: str) -> Organization:
        """The organization, when ``caller`` owns it; 404 otherwise (checked before the body)."""
        with self.lock:
            return self._visible_org(caller, name, owner=True)

    def create_pool(
        self,
        caller: Caller,
        organization: str,
        attributes: Mapping[str, Any],
        allowed_workspaces: Any = None,
    ) -> AgentPool:
        """``POST /organizations/:name/agent-pools``.

        ``attributes`` are the document's attributes; ``allowed_workspaces`` the
        ``relationships.allowed-workspaces.data`` array (None when absent).
        """
        with self.lock:
            org = self._visible_org(caller, organization, owner=True)
            return self._create_pool(org, attributes, allowed_workspaces, unique=True)

    def _create_pool(
        self,
        org: Organization,
        attributes: Mapping[str, Any],
        allowed_workspaces: Any,
        *,
        unique: bool,
    ) -> AgentPool:
        if len(org.pools) >= self.pool_limit:
            raise PlatformError.one(
                422,
                "agent pool limit reached",
                f"organization {org.name} already has {len(org.pools)} agent pool(s); "
                f"the limit is {self.pool_limit} per organization",
            )
        if "name" not in attributes:
            raise invalid("name is required", _attr("name"))
        name = self._pool_name(org, attributes["name"], None)
        scoped = self._pool_scoped(attributes)
        allowed = self._allowed_workspaces(org, allowed_workspaces) or []
        pool = AgentPool(
            self._new_id("apool-", org.name, name, unique=unique),
            name,
            org.name,
            self.clock.now(),
            scoped,
            allowed,
        )
        self._pools[pool.id] = pool
        org.pools[pool.id] = None
        return pool

    def update_pool(
        self,
        caller: Caller,
        pool_id: str,
        attributes: Mapping[str, Any],
        allowed_workspaces: Any = None,
    ) -> AgentPool:
        """``PATCH /agent-pools/:id``: name kept when omitted, ``organization-scoped`` true when omitted.

        ``allowed_workspaces`` replaces the list when given and leaves it when None.
        """
        with self.lock:
            pool = self.pool(caller, pool_id, owner=True)
            org = self._organizations[pool.organization]
            name = (
                self._pool_name(org, attributes["name"], pool)
                if "name" in attributes
                else pool.name
            )
            scoped = self._pool_scoped(attributes)
            allowed = self._allowed_workspaces(org, allowed_workspaces)
            pool.name, pool.organization_scoped = name, scoped
            if allowed is not None:
                pool.allowed_workspace_ids = allowed
            return pool

    def delete_pool(self, caller: Caller, pool_id: str) -> None:
        """``DELETE /agent-pools/:id``: refused (422) while workspaces still use the pool."""
        with self.lock:
            pool = self.pool(caller, pool_id, owner=True)
            if pool.workspace_ids:
                names = ", ".join(self._workspaces[w].name for w in pool.workspace_ids)
                raise PlatformError.one(
                    422,
                    "agent pool in use",
                    f"agent pool {pool.name} is used by workspaces ({names}); "
                    "move them to another execution mode or pool first",
                )
            for agent_id in pool.agents:
                self._agents.pop(agent_id, None)
            self._rosters.pop(pool.id, None)
            del self._pools[pool.id]
            self._organizations[pool.organization].pools.pop(pool.id, None)

    def _pool_name(self, org: Organization, name: Any, current: AgentPool | None) -> str:
        if not isinstance(name, str):
            raise invalid("name must be a string", _attr("name"))
        if not POOL_NAME.match(name):
            raise invalid(
                f"name {name!r} may contain only letters, numbers, '-' and '_'", _attr("name")
            )
        for other in org.pools:
            pool = self._pools[other]
            if pool is not current and pool.name.lower() == name.lower():
                raise invalid(f"name {name!r} has already been taken", _attr("name"))
        return name

    @staticmethod
    def _pool_scoped(attributes: Mapping[str, Any]) -> bool:
        scoped = attributes.get("organization-scoped", True)
        if scoped is None:
            return True
        if not isinstance(scoped, bool):
            raise invalid("organization-scoped must be a boolean", _attr("organization-scoped"))
        return scoped

    def _allowed_workspaces(self, org: Organization, entries: Any) -> list[str] | None:
        if entries is None:
            return None
        base = "/data/relationships/allowed-workspaces/data"
        if not isinstance(entries, list):
            raise invalid("allowed-workspaces data must be an array", base)
        ids: list[str] = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise invalid("each allowed workspace must be an object", f"{base}/{i}")
            if entry.get("type") != "workspaces":
                raise invalid(
                    f"type {entry.get('type')!r} is not allowed here; use 'workspaces'",
                    f"{base}/{i}/type",
                )
            ws_id = entry.get("id")
            ws = self._workspaces.get(ws_id) if isinstance(ws_id, str) else None
            if ws is None or ws.organization != org.name:
                raise invalid(
                    f"workspace {ws_id!r} does not exist in organization {org.name}",
                    f"{base}/{i}/id",
                )
            if ws.id not in ids:
                ids.append(ws.id)
        return ids

    # -- agents (spec 4.1, part 3) ---------------------------------------------------
    def agents(
        self, caller: Caller, pool_id: str, *, last_ping_since: datetime | None = None
    ) -> tuple[Agent, ...]:
        """``GET /agent-pools/:id/agents``, optionally those that pinged at or after a time."""
        with self.lock:
            pool = self.pool(caller, pool_id)
            # The pool's agents in order, kept until the pool's membership or an
            # agent's report changes: a page of a big pool then costs what a
            # page of a small one does.
            agents = self._rosters.get(pool.id)
            if agents is None:
                agents = self._rosters[pool.id] = tuple(pool.agents.values())
            if last_ping_since is not None:
                agents = tuple(a for a in agents if a.last_ping_at >= last_ping_since)
            return agents

    def agent(self, caller: Caller, agent_id: str, *, owner: bool = False) -> Agent:
        """``GET /agents/:id``."""
        with self.lock:
            agent = self._agents.get(agent_id)
            if agent is None:
                raise not_found()
            self.pool(caller, agent.pool_id, owner=owner)
            return agent

    def agent_status(self, agent: Agent) -> str:
        """An agent's status now, by the sandbox clock."""
        return agent.status_at(self.clock.now())

    def delete_agent(self, caller: Caller, agent_id: str) -> None:
        """``DELETE /agents/:id``: 412 unless the agent is unknown, errored or exited."""
        with self.lock:
            agent = self.agent(caller, agent_id, owner=True)
            status = self.agent_status(agent)
            if status not in REMOVABLE_AGENT_STATUSES:
                raise PlatformError.one(
                    412,
                    "precondition failed",
                    f"agent {agent.id} is {status}; only unknown, errored or exited agents "
                    "can be deleted",
                )
            del self._agents[agent.id]
            del self._pools[agent.pool_id].agents[agent.id]
            self._rosters.pop(agent.pool_id, None)

    def sandbox_add_agent(
        self, caller: Caller, pool_id: str, attributes: Mapping[str, Any]
    ) -> Agent:
        """``POST /_sandbox/agent-pools/:id/agents`` (owners only): register an agent."""
        with self.lock:
            pool = self.pool(caller, pool_id, owner=True)
            since = self._ping_time(attributes)
            return self._create_agent(pool, attributes, since, unique=True)

    def sandbox_update_agent(
        self, caller: Caller, agent_id: str, attributes: Mapping[str, Any]
    ) -> Agent:
        """``PATCH /_sandbox/agents/:id`` (owners only): a report of status and ping time."""
        with self.lock:
            agent = self.agent(caller, agent_id, owner=True)
            self._report_agent(agent, attributes, self._ping_time(attributes))
            return agent

    @staticmethod
    def _ping_time(attributes: Mapping[str, Any]) -> datetime | None:
        raw = attributes.get("last-ping-at")
        if raw is None:
            return None
        try:
            if not isinstance(raw, str):
                raise ValueError
            return parse_time(raw)
        except ValueError:
            raise invalid(
                f"last-ping-at {raw!r} is not an ISO 8601 timestamp", _attr("last-ping-at")
            ) from None

    @staticmethod
    def _agent_status_value(attributes: Mapping[str, Any], default: str | None) -> str:
        status = attributes.get("status", default)
        if status not in AGENT_STATUSES:
            raise invalid(
                f"status {status!r} is not one of {', '.join(AGENT_STATUSES)}", _attr("status")
            )
        return str(status)

    def _create_agent(
        self,
        pool: AgentPool,
        attributes: Mapping[str, Any],
        last_ping_at: datetime | None,
        *,
        unique: bool,
    ) -> Agent:
        status = self._agent_status_value(attributes, "idle")
        name = attributes.get("name")
        if name is not None and not isinstance(name, str):
            raise invalid("name must be a string or null", _attr("name"))
        ip = attributes.get("ip-address", "127.0.0.1")
        if not isinstance(ip, str) or not ip:
            raise invalid("ip-address must be a non-empty string", _attr("ip-address"))
        agent = Agent(
            self._new_id("agent-", pool.id, name or "", unique=unique or name is None),
            pool.id,
            name,
            status,
            ip,
            last_ping_at or self.clock.now(),
        )
        self._agents[agent.id] = agent
        pool.agents[agent.id] = agent
        self._rosters.pop(pool.id, None)
        return agent

    def _report_agent(
        self, agent: Agent, attributes: Mapping[str, Any], last_ping_at: datetime | None
    ) -> None:
        status = self._agent_status_value(attributes, agent.reported_status)
        agent.reported_status = status
        agent.last_ping_at = last_ping_at or self.clock.now()
        self._rosters.pop(agent.pool_id, None)  # what its pool's pages show changed

    # -- policy set parameters (spec 4.2) --------------------------------------------
    def parameters(self, caller: Caller, policy_set_id: str) -> list[Parameter]:
        """``GET /policy-sets/:id/parameters``."""
        with self.lock:
            return list(self.policy_set(caller, policy_set_id).parameters.values())

    def parameter(
        self, caller: Caller, policy_set_id: str, parameter_id: str, *, owner: bool = False
    ) -> Parameter:
        """``GET /policy-sets/:id/parameters/:parameter_id``."""
        with self.lock:
            ps = self.policy_set(caller, policy_set_id, owner=owner)
            param = ps.parameters.get(parameter_id)
            if param is None:
                raise not_found()
            return param

    def create_parameter(
        self, caller: Caller, policy_set_id: str, attributes: Mapping[str, Any]
    ) -> Parameter:
        """``POST /policy-sets/:id/parameters`` (owners)."""
        with self.lock:
            ps = self.policy_set(caller, policy_set_id, owner=True)
            return self._create_parameter(ps, attributes)

    def _create_parameter(self, ps: PolicySet, attributes: Mapping[str, Any]) -> Parameter:
        if ps.kind != PARAMETER_KIND:
            raise invalid(
                f"policy set {ps.name} is of kind {ps.kind!r}; parameters exist only for "
                f"{PARAMETER_KIND} policy sets",
                "/data",
            )
        if "key" not in attributes:
            raise invalid("key is required", _attr("key"))
        if "category" not in attributes:
            raise invalid("category is required and must be 'policy-set'", _attr("category"))
        key, value, sensitive = self._parameter_fields(ps, attributes, None)
        assert key is not None  # required above
        param = Parameter(
            self._new_id("var-", ps.id, key),
            ps.id,
            key,
            value if value is not None else "",
            bool(sensitive),
        )
        ps.parameters[param.id] = param
        return param

    def update_parameter(
        self,
        caller: Caller,
        policy_set_id: str,
        parameter_id: str,
        attributes: Mapping[str, Any],
    ) -> Parameter:
        """``PATCH /policy-sets/:id/parameters/:parameter_id``: omitted properties unchanged."""
        with self.lock:
            param = self.parameter(caller, policy_set_id, parameter_id, owner=True)
            ps = self._policy_sets[policy_set_id]
            key, value, sensitive = self._parameter_fields(ps, attributes, param)
            if key is not None:
                param.key = key
            if value is not None:
                param.value = value
            if sensitive is not None:
                param.sensitive = sensitive
            return param

    def delete_parameter(self, caller: Caller, policy_set_id: str, parameter_id: str) -> None:
        """``DELETE /policy-sets/:id/parameters/:parameter_id`` (owners)."""
        with self.lock:
            self.parameter(caller, policy_set_id, parameter_id, owner=True)
            del self._policy_sets[policy_set_id].parameters[parameter_id]

    @staticmethod
    def _parameter_fields(
        ps: PolicySet, attributes: Mapping[str, Any], current: Parameter | None
    ) -> tuple[str | None, str | None, bool | None]:
        """Validated (key, value, sensitive); None where the attribute was not sent."""
        key = attributes.get("key")
        if "key" in attributes:
            if not isinstance(key, str) or not key.strip():
                raise invalid("key must be a non-empty string", _attr("key"))
            for other in ps.parameters.values():
                if other is not current and other.key == key:
                    raise invalid(f"key {key!r} has already been taken", _attr("key"))
        if "category" in attributes and attributes["category"] != "policy-set":
            raise invalid(
                f"category {attributes['category']!r} is not allowed; it must be 'policy-set'",
                _attr("category"),
            )
        value = attributes.get("value")
        if value is not None and not isinstance(value, str):
            raise invalid("value must be a string", _attr("value"))
        sensitive = attributes.get("sensitive")
        if sensitive is not None:
            if not isinstance(sensitive, bool):
                raise invalid("sensitive must be a boolean", _attr("sensitive"))
            if current is not None and current.sensitive and not sensitive:
                raise invalid(
                    "a sensitive parameter cannot be made non-sensitive", _attr("sensitive")
                )
        return key, value, sensitive

    # -- team access (spec 4.3) ------------------------------------------------------
    def team_accesses(self, caller: Caller, workspace_id: str) -> list[TeamAccess]:
        """``GET /team-workspaces?filter[workspace][id]=``: members see their own teams' records."""
        with self.lock:
            ws = self.workspace(caller, workspace_id)
            records = [self._accesses[a] for a in ws.accesses]
            if self.role(caller, ws.organization) == "owner":
                return records
            mine = self._teams_by_token.get(caller.token, set())
            return [r for r in records if r.team_id in mine]

    def team_access(self, caller: Caller, access_id: str, *, owner: bool = False) -> TeamAccess:
        """``GET /team-workspaces/:id``."""
        with self.lock:
            record = self._accesses.get(access_id)
            if record is None:
                raise not_found()
            org = self._workspaces[record.workspace_id].organization
            role = self.role(caller, org)
            if role == "owner":
                return record
            if owner or role is None or caller.token not in self._teams[record.team_id].members:
                raise not_found()
            return record

    def create_team_access(
        self,
        caller: Caller,
        workspace_id: str,
        team_id: str,
        attributes: Mapping[str, Any],
    ) -> TeamAccess:
        """``POST /team-workspaces`` (owners): one record per team and workspace."""
        with self.lock:
            self._check_access_attributes(attributes, None)
            ws = self._workspaces.get(workspace_id)
            if ws is None or self.role(caller, ws.organization) != "owner":
                raise not_found()
            team = self._teams.get(team_id)
            if team is None or team.organization != ws.organization:
                raise not_found()
            return self._create_access(ws, team, attributes, unique=True)

    def _create_access(
        self, ws: Workspace, team: Team, attributes: Mapping[str, Any], *, unique: bool
    ) -> TeamAccess:
        access, custom = self._check_access_attributes(attributes, None)
        if (team.id, ws.id) in self._access_pairs:
            raise invalid(
                f"team {team.name} already has access to workspace {ws.name}",
                "/data/relationships/team/data/id",
            )
        record = TeamAccess(
            self._new_id("tws-", team.id, ws.id, unique=unique), team.id, ws.id, access, custom
        )
        self._accesses[record.id] = record
        self._access_pairs.add((team.id, ws.id))
        ws.accesses[record.id] = None
        return record

    def update_team_access(
        self, caller: Caller, access_id: str, attributes: Mapping[str, Any]
    ) -> TeamAccess:
        """``PATCH /team-workspaces/:id`` (owners)."""
        with self.lock:
            record = self.team_access(caller, access_id, owner=True)
            record.access, record.custom = self._check_access_attributes(attributes, record)
            return record

    def delete_team_access(self, caller: Caller, access_id: str) -> None:
        """``DELETE /team-workspaces/:id`` (owners)."""
        with self.lock:
            record = self.team_access(caller, access_id, owner=True)
            del self._accesses[record.id]
            self._access_pairs.discard((record.team_id, record.workspace_id))
            self._workspaces[record.workspace_id].accesses.pop(record.id, None)

    @staticmethod
    def _check_access_attributes(
        attributes: Mapping[str, Any], current: TeamAccess | None
    ) -> tuple[str, dict[str, str | bool]]:
        """The (access, custom permissions) a create or update leads to, or a 422."""
        if "access" in attributes:
            access = attributes["access"]
            if access not in ACCESS_LEVELS:
                raise invalid(
                    f"access {access!r} is not one of {', '.join(ACCESS_LEVELS)}", _attr("access")
                )
        elif current is None:
            raise invalid(f"access is required; one of {', '.join(ACCESS_LEVELS)}", _attr("access"))
        else:
            access = current.access
        given = {name: attributes[name] for name in PERMISSION_ATTRIBUTES if name in attributes}
        for name, value in given.items():
            if access != "custom":
                raise invalid(
                    f"{_LABELS[name]} is read-only when access level is '{access}'; "
                    "use the 'custom' access level to set this attribute.",
                    _attr(name),
                )
            allowed = PERMISSION_VALUES[name]
            if allowed == (False, True):
                if not isinstance(value, bool):
                    raise invalid(f"{name} must be a boolean", _attr(name))
            elif not isinstance(value, str) or value not in allowed:
                raise invalid(
                    f"{name} {value!r} is not one of {', '.join(map(str, allowed))}",
                    _attr(name),
                )
        if access != "custom":
            return access, dict(CUSTOM_DEFAULTS)
        # Switching to custom starts from the create defaults; staying custom keeps the rest.
        base = current.custom if current is not None and current.access == "custom" else {}
        return access, {**CUSTOM_DEFAULTS, **base, **given}
