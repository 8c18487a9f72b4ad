"""The platform sandbox's route table, relative to ``/api/v2`` (``app`` mounts it).

Paths under ``/_sandbox`` are the sandbox's own, not the platform's: they add
agents and move their status, which the real API leaves to the agents.
"""

from __future__ import annotations

from starlette.routing import Route

from . import handlers as h
from .models import PlatformService

__all__ = ["routes"]

_TABLE: list[tuple[str, h.Handler, list[str]]] = [
    ("/account/details", h.account_details, ["GET"]),
    ("/organizations", h.list_organizations, ["GET"]),
    ("/organizations/{name}", h.show_organization, ["GET"]),
    ("/organizations/{name}/workspaces", h.list_workspaces, ["GET"]),
    ("/organizations/{name}/teams", h.list_teams, ["GET"]),
    ("/organizations/{name}/policy-sets", h.list_policy_sets, ["GET"]),
    ("/organizations/{name}/agent-pools", h.list_pools, ["GET"]),
    ("/organizations/{name}/agent-pools", h.create_pool, ["POST"]),
    ("/workspaces/{id}", h.show_workspace, ["GET"]),
    ("/teams/{id}", h.show_team, ["GET"]),
    ("/policy-sets/{id}", h.show_policy_set, ["GET"]),
    ("/agent-pools/{id}", h.show_pool, ["GET"]),
    ("/agent-pools/{id}", h.update_pool, ["PATCH"]),
    ("/agent-pools/{id}", h.delete_pool, ["DELETE"]),
    ("/agent-pools/{id}/agents", h.list_agents, ["GET"]),
    ("/agent-pools/{id}/authentication-tokens", h.list_pool_tokens, ["GET"]),
    ("/agents/{id}", h.show_agent, ["GET"]),
    ("/agents/{id}", h.delete_agent, ["DELETE"]),
    ("/policy-sets/{id}/parameters", h.list_parameters, ["GET"]),
    ("/policy-sets/{id}/parameters", h.create_parameter, ["POST"]),
    ("/policy-sets/{id}/parameters/{parameter_id}", h.show_parameter, ["GET"]),
    ("/policy-sets/{id}/parameters/{parameter_id}", h.update_parameter, ["PATCH"]),
    ("/policy-sets/{id}/parameters/{parameter_id}", h.delete_parameter, ["DELETE"]),
    ("/team-workspaces", h.list_team_access, ["GET"]),
    ("/team-workspaces", h.create_team_access, ["POST"]),
    ("/team-workspaces/{id}", h.show_team_access, ["GET"]),
    ("/team-workspaces/{id}", h.update_team_access, ["PATCH"]),
    ("/team-workspaces/{id}", h.delete_team_access, ["DELETE"]),
    # sandbox only
    ("/_sandbox/agent-pools/{id}/agents", h.sandbox_add_agent, ["POST"]),
    ("/_sandbox/agents/{id}", h.sandbox_update_agent, ["PATCH"]),
]


def routes(service: PlatformService) -> list[Route]:
    """Every platform route, bound to ``service``."""
    table = [Route("/ping", h.ping, methods=["GET"])]
    # One Route per path, dispatching on the method, so a wrong method is a 405.
    by_path: dict[str, dict[str, h.Handler]] = {}
    for path, handler, methods in _TABLE:
        for method in methods:
            by_path.setdefault(path, {})[method] = handler
    for path, handlers in by_path.items():
        table.append(Route(path, h.endpoint(service, handlers), methods=sorted(handlers)))
    return table
