"""Organizations, their workspaces, teams and policy sets, and who the caller is.

Who may do what (spec part 2 rule 4, part 5):

- the sandbox's admin token, an organization's token and the tokens of its
  owners team are owners of the organization: they see and may change all;
- a token on any other team of the organization is a member: it reads the
  organization's workspaces, visible teams, policy sets, parameters, agent
  pools and agents (team access: see :mod:`.team_access`);
- anything else is invisible (:class:`~.errors.RecordNotFound`), and a member's
  attempt to change something is answered as if the record did not exist.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from ..._spec.team_access import ORGANIZATION_PERMISSIONS
from .errors import RecordNotFound, RuleViolation, UnknownCaller, existing

if TYPE_CHECKING:
    from .._clock import Clock
    from .ids import IdSource

__all__ = [
    "Caller",
    "Organization",
    "OrganizationStore",
    "POLICY_KINDS",
    "PolicySet",
    "Role",
    "Team",
    "Workspace",
]

Role = Literal["owner", "member"]
POLICY_KINDS = ("sentinel", "opa")


@dataclass
class Organization:
    name: str
    email: str
    created_at: datetime
    token: str | None = field(default=None, repr=False)
    # ids of the organization's records, in creation order
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


@dataclass
class Team:
    id: str
    name: str
    organization: str
    visibility: str
    is_owners: bool
    members: set[str] = field(default_factory=set, repr=False)
    # Organization-level permissions (spec part 2 rule 3), by their names in the API.
    # The owners team holds them all whatever is stored here.
    organization_access: frozenset[str] = frozenset()

    def organization_permissions(self) -> dict[str, bool]:
        """Each organization-level permission, in the table's order, as the team holds it."""
        return {
            name: self.is_owners or name in self.organization_access
            for name in ORGANIZATION_PERMISSIONS
        }

    def holds(self, permission: str) -> bool:
        """Whether the team holds an organization-level permission (owners hold all)."""
        return self.is_owners or permission in self.organization_access


@dataclass
class PolicySet:
    id: str
    name: str
    organization: str
    kind: str
    description: str
    created_at: datetime


@dataclass(frozen=True)
class Caller:
    """Who is calling: the token (never shown) and whether it is the sandbox's admin token."""

    token: str = field(repr=False)
    is_admin: bool = False


class OrganizationStore:
    """The organizations and the records every area hangs off, with the tokens that act in them."""

    def __init__(self, *, clock: Clock, ids: IdSource, admin_token: str) -> None:
        self.clock = clock
        self.ids = ids
        self.admin_token = admin_token
        self.organizations: dict[str, Organization] = {}
        self.org_tokens: dict[str, str] = {}  # token -> organization name
        self.workspaces: dict[str, Workspace] = {}
        self.teams: dict[str, Team] = {}
        self.teams_by_token: dict[str, set[str]] = {}
        self.policy_sets: dict[str, PolicySet] = {}

    def __repr__(self) -> str:
        return f"<OrganizationStore organizations={len(self.organizations)}>"

    # -- identity --------------------------------------------------------------------
    def authenticate(self, token: str | None) -> Caller:
        """The caller a bearer token names; :class:`Unauthorized` for a missing or unknown one."""
        if not token:
            raise UnknownCaller("the request has no bearer token in its Authorization header")
        if token == self.admin_token:
            return Caller(token, is_admin=True)
        if token in self.org_tokens or self.teams_by_token.get(token):
            return Caller(token)
        raise UnknownCaller("the bearer token is not valid")

    def role(self, caller: Caller, organization: str) -> Role | None:
        """``owner``, ``member`` or None: the caller's standing in an organization."""
        if caller.is_admin or self.org_tokens.get(caller.token) == organization:
            return "owner"
        role: Role | None = None
        for team_id in self.teams_by_token.get(caller.token, ()):
            team = self.teams[team_id]
            if team.organization == organization:
                if team.is_owners:
                    return "owner"
                role = "member"
        return role

    def caller_holds(self, caller: Caller, organization: str, permission: str) -> bool:
        """Whether one of the caller's teams in the organization holds an organization-level
        permission (owners hold every one)."""
        if self.role(caller, organization) == "owner":
            return True
        return any(
            self.teams[t].organization == organization and self.teams[t].holds(permission)
            for t in self.teams_by_token.get(caller.token, ())
        )

    def caller_teams(self, caller: Caller) -> set[str]:
        """The ids of the teams the caller's token is a member of."""
        return self.teams_by_token.get(caller.token, set())

    def visible(self, caller: Caller, name: str, *, owner: bool = False) -> Organization:
        """The organization, if the caller belongs to it (and owns it, with ``owner``)."""
        org = self.organizations.get(name)
        role = self.role(caller, name) if org else None
        if org is None or role is None or (owner and role != "owner"):
            raise RecordNotFound()
        return org

    def team_visible(self, caller: Caller, team: Team) -> bool:
        """Owners see every team; members the organization's and the secret ones they are on."""
        role = self.role(caller, team.organization)
        if role == "owner":
            return True
        if role is None:
            return False
        return team.visibility == "organization" or caller.token in team.members

    def account(self, caller: Caller) -> dict[str, Any]:
        """What ``GET /account/details`` says of the caller, as the real service does:
        a user token names its user; an organization token is a service account of
        its organization (``api-org-<name>``, ``is-service-account``). The sandbox keeps
        no user names: a member's user is named from a digest of its token (never the
        token), and the admin token is the ``admin`` site administrator."""
        if caller.is_admin:
            return _account("user-sandbox-admin", "admin", service=False, site_admin=True)
        org = self.org_tokens.get(caller.token)
        digest = hashlib.sha256(caller.token.encode()).hexdigest()
        if org is not None:
            name = f"api-org-{org}-{digest[:8]}"
            return _account(f"user-org-{digest[:8]}", name, service=True, site_admin=False)
        return _account(
            f"user-{digest[:12]}", f"user-{digest[:8]}", service=False, site_admin=False
        )

    def describe_tokens(self) -> list[tuple[str, str]]:
        """Every accepted token with what it stands for (the command line prints these)."""
        out = [(self.admin_token, "owner of every organization")]
        for token, org in self.org_tokens.items():
            out.append((token, f"organization token of {org}"))
        for token in sorted(self.teams_by_token):
            teams = sorted(
                (self.teams[t] for t in self.teams_by_token[token]),
                key=lambda t: (t.organization, t.name),
            )
            owner_of = [t.organization for t in teams if t.is_owners]
            member_of = [f"{t.organization}/{t.name}" for t in teams if not t.is_owners]
            parts = [f"owner of {', '.join(owner_of)}"] if owner_of else []
            if member_of:
                parts.append(f"member of {', '.join(member_of)}")
            out.append((token, "; ".join(parts)))
        return out

    # -- seeding (the Python API) ----------------------------------------------------
    def named(self, name: str) -> Organization:
        """An organization by name, for the Python API (RecordNotFound when missing)."""
        return existing(
            self.organizations, name, "organization", "add it with add_organization first"
        )

    def add_organization(
        self, name: str, *, email: str | None, token: str | None, created_at: datetime | None
    ) -> str:
        if not name or name in self.organizations:
            raise RuleViolation(f"organization {name!r} exists or is empty", "name")
        if token is not None and (token in self.org_tokens or token == self.admin_token):
            raise RuleViolation("that organization token is already in use", "token")
        self.organizations[name] = Organization(
            name, email or f"admin@{name}.example", created_at or self.clock.now(), token
        )
        if token is not None:
            self.org_tokens[token] = name
        return name

    def add_workspace(self, organization: str, name: str, *, created_at: datetime | None) -> str:
        org = self.named(organization)
        if any(self.workspaces[w].name == name for w in org.workspaces):
            raise RuleViolation(f"workspace {name!r} already exists in {organization}", "name")
        ws = Workspace(
            self.ids.new("ws-", organization, name),
            name,
            organization,
            created_at or self.clock.now(),
        )
        self.workspaces[ws.id] = ws
        org.workspaces[ws.id] = None
        return ws.id

    def add_team(
        self,
        organization: str,
        name: str,
        *,
        members: Iterable[str],
        secret: bool,
        owners: bool,
        organization_access: Iterable[str] = (),
    ) -> str:
        org = self.named(organization)
        if any(self.teams[t].name == name for t in org.teams):
            raise RuleViolation(f"team {name!r} already exists in {organization}", "name")
        granted = frozenset(organization_access)
        unknown = granted - set(ORGANIZATION_PERMISSIONS)
        if unknown:
            raise RuleViolation(
                f"unknown organization permission {sorted(unknown)}; "
                f"allowed: {', '.join(ORGANIZATION_PERMISSIONS)}",
                "organization_access",
            )
        if owners and any(self.teams[t].is_owners for t in org.teams):
            raise RuleViolation(f"{organization} already has an owners team", "owners")
        tokens = set(members)
        if self.admin_token in tokens or tokens & set(self.org_tokens):
            raise RuleViolation(
                "a team member token may not be an admin or organization token", "members"
            )
        team = Team(
            self.ids.new("team-", organization, name),
            name,
            organization,
            "secret" if secret else "organization",
            owners,
            tokens,
            granted,
        )
        self.teams[team.id] = team
        org.teams[team.id] = None
        for token in tokens:
            self.teams_by_token.setdefault(token, set()).add(team.id)
        return team.id

    def add_policy_set(
        self,
        organization: str,
        name: str,
        *,
        kind: str,
        description: str,
        created_at: datetime | None,
    ) -> str:
        org = self.named(organization)
        if kind not in POLICY_KINDS:
            raise RuleViolation(f"kind must be one of {', '.join(POLICY_KINDS)}", "kind")
        ps = PolicySet(
            self.ids.new("polset-", organization, name),
            name,
            organization,
            kind,
            description,
            created_at or self.clock.now(),
        )
        self.policy_sets[ps.id] = ps
        org.policy_sets[ps.id] = None
        return ps.id

    # -- the read endpoints ----------------------------------------------------------
    def list_organizations(self, caller: Caller) -> list[Organization]:
        """``GET /organizations``: the organizations the caller belongs to."""
        return [o for o in self.organizations.values() if self.role(caller, o.name)]

    def list_workspaces(
        self, caller: Caller, organization: str, search: str | None = None
    ) -> list[Workspace]:
        """``GET /organizations/:name/workspaces``, ``search`` a substring of the name."""
        org = self.visible(caller, organization)
        out = [self.workspaces[w] for w in org.workspaces]
        if search:
            needle = search.lower()
            out = [w for w in out if needle in w.name.lower()]
        return out

    def workspace(self, caller: Caller, workspace_id: str) -> Workspace:
        """``GET /workspaces/:id``."""
        ws = self.workspaces.get(workspace_id)
        if ws is None or not self.role(caller, ws.organization):
            raise RecordNotFound()
        return ws

    def workspaces_by_id(self, workspace_ids: Iterable[str]) -> list[Workspace]:
        """The workspaces of these ids, in their order (ids the state itself handed out,
        such as a pool's ``workspace_ids``: an answer's ``included`` member)."""
        return [self.workspaces[w] for w in workspace_ids]

    def list_teams(self, caller: Caller, organization: str) -> list[Team]:
        """``GET /organizations/:name/teams``: secret teams only for owners and their members."""
        org = self.visible(caller, organization)
        return [self.teams[t] for t in org.teams if self.team_visible(caller, self.teams[t])]

    def team(self, caller: Caller, team_id: str) -> Team:
        """``GET /teams/:id``."""
        team = self.teams.get(team_id)
        if team is None or not self.team_visible(caller, team):
            raise RecordNotFound()
        return team

    def list_policy_sets(self, caller: Caller, organization: str) -> list[PolicySet]:
        """``GET /organizations/:name/policy-sets``."""
        org = self.visible(caller, organization)
        return [self.policy_sets[p] for p in org.policy_sets]

    def policy_set(self, caller: Caller, policy_set_id: str, *, owner: bool = False) -> PolicySet:
        """``GET /policy-sets/:id``; ``owner`` requires the right to change it."""
        ps = self.policy_sets.get(policy_set_id)
        role = self.role(caller, ps.organization) if ps else None
        if ps is None or role is None or (owner and role != "owner"):
            raise RecordNotFound()
        return ps


def _account(user_id: str, username: str, *, service: bool, site_admin: bool) -> dict[str, Any]:
    return {
        "id": user_id,
        "username": username,
        "service": service,
        "site_admin": site_admin,
        "email": f"{username}@sandbox.example",
    }
