"""Team access levels, the permissions each implies, agent statuses (spec 000 parts 2-4; README "Platform").

The one table of these facts: the client's views and the sandbox both read it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ACCESS_LEVELS",
    "CUSTOM_DEFAULTS",
    "IMPLIED_PERMISSIONS",
    "PERMISSION_ATTRIBUTES",
    "PERMISSION_VALUES",
    "AGENT_STATUSES",
    "REMOVABLE_AGENT_STATUSES",
    "LEVEL_ORDER",
    "ORGANIZATION_PERMISSIONS",
    "ORGANIZATION_WORKSPACE_LEVELS",
]

ACCESS_LEVELS: tuple[str, ...] = ("read", "plan", "write", "admin", "custom")

# The attributes that only the custom level may set, in the API's spelling.
PERMISSION_ATTRIBUTES: tuple[str, ...] = (
    "runs",
    "variables",
    "state-versions",
    "policy-mocks",
    "workspace-locking",
    "run-tasks",
)

# Allowed values of each permission attribute (booleans for the last two).
PERMISSION_VALUES: dict[str, tuple[Any, ...]] = {
    "runs": ("read", "plan", "apply"),
    "variables": ("none", "read", "write"),
    "state-versions": ("none", "read-outputs", "read", "write"),
    "policy-mocks": ("none", "read"),
    "workspace-locking": (False, True),
    "run-tasks": (False, True),
}

CUSTOM_DEFAULTS: dict[str, Any] = {
    "runs": "read",
    "variables": "none",
    "state-versions": "none",
    "policy-mocks": "none",
    "workspace-locking": False,
    "run-tasks": False,
}


def _level(runs: str, variables: str, state: str, mocks: str, lock: bool, tasks: bool) -> dict:
    return dict(
        zip(PERMISSION_ATTRIBUTES, (runs, variables, state, mocks, lock, tasks), strict=True)
    )


IMPLIED_PERMISSIONS: dict[str, dict[str, Any]] = {
    "read": _level("read", "read", "read", "none", False, False),
    "plan": _level("plan", "read", "read", "none", False, False),
    "write": _level("apply", "write", "write", "read", True, False),
    "admin": _level("apply", "write", "write", "read", True, True),
}

AGENT_STATUSES: tuple[str, ...] = ("idle", "busy", "exited", "errored", "unknown")
# Statuses whose agents may be deleted (spec 000 part 3); idle and busy answer 412.
REMOVABLE_AGENT_STATUSES: tuple[str, ...] = ("exited", "errored", "unknown")

# The non-custom levels from least to most; a custom record is placed among them
# by the permissions it holds (``toolkit.platform.team_access.effective_level``).
LEVEL_ORDER: tuple[str, ...] = ("read", "plan", "write", "admin")

# Organization-level permissions of a team (its ``organization-access`` attribute),
# in the API's spelling. The owners team holds all of them.
ORGANIZATION_PERMISSIONS: tuple[str, ...] = (
    "read-workspaces",
    "manage-workspaces",
    "manage-policies",
    "manage-policy-overrides",
    "manage-agent-pools",
    "manage-teams",
    "manage-membership",
    "access-secret-teams",
)

# The workspace access an organization-level permission gives on every workspace
# of the organization (present and future), whatever its team-workspace records say.
ORGANIZATION_WORKSPACE_LEVELS: dict[str, str] = {
    "manage-workspaces": "admin",
    "read-workspaces": "read",
}
