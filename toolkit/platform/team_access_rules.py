"""The rules over team-access frames (spec 000 section 4.3): what a grant amounts to, which
grant wins, the matrix, the effective access and the findings. Plain functions over
frames and dicts; :mod:`.team_access` reads the server and calls them.

Split out of the team-access area (issue 25: a module does one job): the area reads,
these judge, and each can be tested on a hand-made frame.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import pandas as pd

from .._coverage import carries_coverage
from .._errors import InputError
from .._frames import Schema, build_frame
from .._records import integer
from .._spec.team_access import (
    ACCESS_LEVELS,
    CUSTOM_DEFAULTS,
    IMPLIED_PERMISSIONS,
    LEVEL_ORDER,
    ORGANIZATION_WORKSPACE_LEVELS,
    PERMISSION_ATTRIBUTES,
)
from ..findings import Finding, findings_frame

__all__ = [
    "EFFECTIVE_ACCESS",
    "GRANTS",
    "GRANT_SOURCES",
    "LEVEL_COLOURS",
    "effective_access",
    "effective_access_findings",
    "effective_access_matrix",
    "effective_level",
    "implied_permissions",
    "security_level",
    "style_matrix",
    "team_access_findings",
]

# Every grant of workspace access, across organizations: team-workspace records, the
# owners team (admin everywhere) and organization-level permissions. A range index:
# only the records have an id (``record_id``).
GRANTS = Schema.of(
    """organization workspace_id workspace_name team_id team_name team_visibility team_size:int
    source access level runs variables state_versions policy_mocks workspace_locking:bool
    run_tasks:bool record_id""",
)
# Where a grant comes from (the ``source`` column).
GRANT_SOURCES = ("workspace", "owners", "organization")

# Colours of the styled matrix, one per level; readable on light and dark themes.
LEVEL_COLOURS = {
    "read": "#4e79a7",
    "plan": "#59a14f",
    "write": "#f28e2b",
    "admin": "#e15759",
    "custom": "#b07aa1",
}


def implied_permissions(access: str) -> dict[str, Any]:
    """The permissions a non-custom level implies (custom: the custom defaults)."""
    if access not in ACCESS_LEVELS:
        raise InputError(f"access must be one of {ACCESS_LEVELS}, not {access!r}")
    return dict(IMPLIED_PERMISSIONS.get(access, CUSTOM_DEFAULTS))


def effective_level(access: str, permissions: Mapping[str, Any] | None = None) -> str:
    """The non-custom level a grant amounts to (one of ``LEVEL_ORDER``).

    A non-custom level is itself. A custom record is ``write`` when it may apply
    runs, write variables or state, lock the workspace or manage run tasks;
    ``plan`` when it may plan runs; else ``read``. It is never ``admin``: only
    that level may manage the workspace's team access. ``permissions`` uses the
    API's or the frames' spelling (``state-versions`` or ``state_versions``).
    """
    if access != "custom":
        if access not in LEVEL_ORDER:
            raise InputError(f"access must be one of {ACCESS_LEVELS}, not {access!r}")
        return access
    perms = {k.replace("_", "-"): v for k, v in (permissions or {}).items()}
    if (
        perms.get("runs") == "apply"
        or perms.get("variables") == "write"
        or perms.get("state-versions") == "write"
        or perms.get("workspace-locking") is True
        or perms.get("run-tasks") is True
    ):
        return "write"
    return "plan" if perms.get("runs") == "plan" else "read"


def security_level(level: str) -> int:
    """How much a level (of ``LEVEL_ORDER``) may do, for a security review: 0 read,
    2 plan and write, 3 admin.

    ``plan`` ranks with ``write``: a plan runs the configuration's code on the
    workspace's agents or runners, with its variables (credentials among them)
    in reach, so whoever may plan may act as the workspace does.
    """
    if level not in LEVEL_ORDER:
        raise InputError(f"level must be one of {LEVEL_ORDER}, not {level!r}")
    return {"read": 0, "plan": 2, "write": 2, "admin": 3}[level]


def is_owners(team: Mapping[str, Any]) -> bool:
    # The owners team is the one named "owners": the service forbids renaming it.
    return team.get("name") == "owners"


def granted_permissions(team: Mapping[str, Any]) -> list[str]:
    """The organization-level permissions a team holds, in the API's spelling."""
    access = team.get("organization_access")
    if not isinstance(access, Mapping):
        return []
    return [str(k) for k, v in access.items() if v is True]


def organization_grant(team: Mapping[str, Any]) -> str | None:
    """The level a team holds on every workspace of its organization, or None."""
    if is_owners(team):
        return "admin"
    held = set(granted_permissions(team))
    for permission, level in sorted(
        ORGANIZATION_WORKSPACE_LEVELS.items(), key=lambda kv: -LEVEL_ORDER.index(kv[1])
    ):
        if permission in held:
            return level
    return None


def grant_row(
    workspaces: Mapping[str, tuple[str, str]],
    ws_id: str,
    team_id: Any,
    team: Mapping[str, Any],
    source: str,
    access: str,
    perms: Mapping[str, Any],
) -> dict[str, Any]:
    organization, ws_name = workspaces[ws_id]
    return {
        "organization": organization,
        "workspace_id": ws_id,
        "workspace_name": ws_name,
        "team_id": team_id,
        "team_name": team.get("name"),
        "team_visibility": team.get("visibility"),
        "team_size": team.get("users_count"),
        "source": source,
        "access": access,
        "level": effective_level(access, perms) if access in ACCESS_LEVELS else None,
        **{a.replace("-", "_"): perms.get(a) for a in PERMISSION_ATTRIBUTES},
    }


def _matches(name: Any, patterns: str | Iterable[str] | None) -> bool:
    if patterns is None:
        return True
    wanted = [patterns] if isinstance(patterns, str) else list(patterns)
    return isinstance(name, str) and any(fnmatchcase(name, p) for p in wanted)


def _in_order(values: Iterable[Any]) -> list[Any]:
    """``values`` (names) sorted, a missing name (a server's record without one)
    last rather than a ``TypeError``."""
    return sorted(values, key=lambda name: (name is None, "" if name is None else str(name)))


@carries_coverage("team_access_rules.grants_matrix")
def grants_matrix(
    grants: pd.DataFrame,
    teams: str | Iterable[str] | None,
    workspaces: str | Iterable[str] | None,
    min_level: str | None,
    every: Iterable[str | None],
) -> pd.DataFrame:
    """Workspaces (rows, index ``workspace``) by team names; a cell is the highest
    grant's access (custom stays custom unless another grant is higher). Filters as
    ``permissions_matrix``; without ``min_level`` each workspace name of ``every``
    that matches has a row, granted or not. A name missing from a server's record
    sorts last. Several organizations: ``organizations.across`` over one each."""
    floor = security_level(min_level) if min_level is not None else None
    rows = grants[
        grants["team_name"].map(lambda n: _matches(n, teams)).astype(bool)
        & grants["workspace_name"].map(lambda n: _matches(n, workspaces)).astype(bool)
    ]
    if floor is not None:
        rows = rows[rows["level"].map(lambda lv: security_level(lv) >= floor).astype(bool)]
    cells: dict[Any, dict[Any, tuple[int, str]]] = {}
    for row in rows.to_dict("records"):
        rank = _rank(row["level"])
        current = cells.setdefault(row["workspace_name"], {}).get(row["team_name"])
        if current is None or rank > current[0]:
            cells[row["workspace_name"]][row["team_name"]] = (rank, row["access"])
    keys = _in_order(cells)
    if floor is None:
        keys = _in_order({w for w in every if _matches(w, workspaces)} | set(keys))
    columns = _in_order({t for c in cells.values() for t in c})
    data = {t: [cells.get(k, {}).get(t, (0, None))[1] for k in keys] for t in columns}
    matrix = pd.DataFrame(
        data, index=pd.Index(keys, name="workspace"), columns=columns, dtype="string"
    )
    matrix.columns.name = "team"
    return matrix


@carries_coverage("team_access_rules.team_access_findings")
def team_access_findings(
    grants: pd.DataFrame,
    teams: Iterable[Mapping[str, Any]] = (),
    *,
    large_team: int = 10,
    admin_workspaces: int = 5,
    max_owners: int = 5,
) -> pd.DataFrame:
    """Findings (:mod:`toolkit.findings`, area ``team access``) of a :data:`GRANTS`
    frame and the teams (flat dicts with ``organization``, ``name``,
    ``users_count``, ``organization_access``).

    Objects are ``ORG/WORKSPACE: TEAM`` for a grant and ``ORG/teams/TEAM`` for a team.

    - **high**: a team other than owners holds ``manage-workspaces`` (admin on
      every workspace, present and future);
    - **high**: a write-equivalent grant (``plan``, ``write``, ``admin``, or a
      custom record that plans or writes) to a team of ``large_team`` members or more;
    - **medium**: the owners team has more than ``max_owners`` members;
    - **medium**: a team other than owners holds other organization-level
      permissions that manage something (policies, overrides, agent pools,
      teams, membership, secret teams);
    - **medium**: a team is admin of ``admin_workspaces`` workspaces or more
      through its records;
    - **medium**: a write-equivalent grant to a secret team (the organization's
      members cannot see who holds it);
    - **medium**: a custom record with ``runs: apply`` (write power under a
      ``custom`` label);
    - **low**: every ``plan`` grant (or custom ``runs: plan``): plan is
      write-equivalent (:func:`security_level`).
    """
    found: list[Finding] = []
    area = "team access"
    for team in teams:
        org, name = team.get("organization"), team.get("name")
        obj = f"{org}/teams/{name}"
        size = integer(team.get("users_count"), "users_count")
        if is_owners(team):
            if size > max_owners:
                found.append(
                    Finding(
                        "medium",
                        area,
                        obj,
                        f"the owners team has {size} members (more than {max_owners}): each is "
                        "admin of every workspace and may change all team access",
                    )
                )
            continue
        held = granted_permissions(team)
        if "manage-workspaces" in held:
            found.append(
                Finding(
                    "high",
                    area,
                    obj,
                    f"organization-level manage-workspaces: its {size} members are admin of "
                    "every workspace, present and future, whatever the workspaces' records say",
                )
            )
        managing = [p for p in held if p not in ORGANIZATION_WORKSPACE_LEVELS]
        if managing:
            found.append(
                Finding(
                    "medium",
                    area,
                    obj,
                    f"organization-level permissions {', '.join(sorted(managing))} "
                    f"held by {size} members",
                )
            )
    records = grants[grants["source"] == "workspace"]
    admins = records[records["level"] == "admin"].groupby(["organization", "team_name"]).size()
    for key, count in admins.items():
        org, name = key  # type: ignore[misc]  # a two-level groupby key
        if count >= admin_workspaces:
            found.append(
                Finding(
                    "medium",
                    area,
                    f"{org}/teams/{name}",
                    f"admin on {count} workspaces (threshold {admin_workspaces}): each lets its "
                    "members change that workspace's team access",
                )
            )
    for row in records.to_dict("records"):
        level = row["level"]
        if level is None or security_level(level) < 2:
            continue
        obj = f"{row['organization']}/{row['workspace_name']}: {row['team_name'] or row['team_id']}"
        what = (
            f"{row['access']} (plan is write-equivalent)" if level == "plan" else str(row["access"])
        )
        size = row["team_size"]
        if not pd.isna(size) and int(size) >= large_team:
            found.append(
                Finding(
                    "high",
                    area,
                    obj,
                    f"{what} granted to a team of {int(size)} members "
                    f"(large: {large_team} or more); every one may act as the workspace",
                )
            )
        if row["team_visibility"] == "secret":
            found.append(
                Finding(
                    "medium",
                    area,
                    obj,
                    f"{what} granted to a secret team: the organization's members cannot see "
                    "who holds it",
                )
            )
        if row["access"] == "custom" and row["runs"] == "apply":
            found.append(
                Finding(
                    "medium",
                    area,
                    obj,
                    "custom access with runs: apply: it applies changes, write power under a "
                    "custom label",
                )
            )
        if level == "plan":
            found.append(
                Finding(
                    "low",
                    area,
                    obj,
                    f"{row['access']} access that plans runs: a plan runs the configuration's "
                    "code on the workspace's agents and reads its variables; treat it as write",
                )
            )
    return findings_frame(found)


def style_matrix(matrix: pd.DataFrame) -> Any:
    """Colour each cell of a permissions matrix by its access level."""

    def colour(value: Any) -> str:
        if isinstance(value, str) and value in LEVEL_COLOURS:
            return f"background-color: {LEVEL_COLOURS[value]}; color: white; font-weight: bold"
        return ""

    return matrix.style.map(colour).format(na_rep="·")


# -- effective access: which grant wins ----------------------------------------------------

# One row per (organization, workspace, holder): the grant that decides and what lost.
EFFECTIVE_ACCESS = Schema.of(
    """organization workspace_name holder_kind holder level access source decided_by overridden
    write_equivalent:bool workspace_id team_id record_id""",
)
# On equal levels the organization-level grant is named as deciding: it cannot be taken
# away workspace by workspace, so removing the record would change nothing.
_SOURCE_PREFERENCE = {"owners": 0, "organization": 1, "workspace": 2}
_ORGANIZATION_PERMISSION_OF = {level: p for p, level in ORGANIZATION_WORKSPACE_LEVELS.items()}


def _describe(grant: Mapping[str, Any]) -> str:
    if grant["source"] == "owners":
        return "the owners team: admin on every workspace"
    if grant["source"] == "organization":
        permission = _ORGANIZATION_PERMISSION_OF.get(str(grant["level"]), "?")
        return f"organization-level {permission}: {grant['level']} on every workspace"
    label = str(grant["access"])
    if label == "custom":
        set_here = [
            f"{a} {grant[a.replace('-', '_')]}"
            for a in PERMISSION_ATTRIBUTES
            if grant.get(a.replace("-", "_")) not in (None, CUSTOM_DEFAULTS[a])
        ]
        label += f" ({', '.join(set_here) or 'defaults'})"
    return f"team access {grant['record_id']}: {label}"


def _rank(level: Any) -> int:
    """A level's place in ``LEVEL_ORDER``; an access this client does not know (a newer
    service's, or none) ranks below every known one rather than failing the view."""
    return LEVEL_ORDER.index(level) if level in LEVEL_ORDER else -1


def _winner(grants: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return max(
        grants,
        key=lambda g: (
            _rank(g["level"]),
            -_SOURCE_PREFERENCE.get(str(g["source"]), 9),
        ),
    )


@carries_coverage("team_access_rules.effective_access")
def effective_access(
    grants: pd.DataFrame, members: Mapping[str, Sequence[str]] | None = None
) -> pd.DataFrame:
    """The effective access of each team (and, given ``members``, each user) on each
    workspace, from a :data:`GRANTS` frame: the higher grant wins.

    Levels rank read < plan < write < admin, a custom record placed by
    :func:`effective_level`; on equal levels an organization-level grant (owners
    first) is the one named. ``decided_by`` names the grant, ``overridden`` the
    others that lost; ``write_equivalent`` is true from ``plan`` up
    (:func:`security_level`). ``members`` maps a team id to its users' names: a
    user's row is the highest of their teams' rows, ``holder_kind`` ``user``.
    """
    by_key: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    records: list[Mapping[str, Any]] = [
        {str(k): v for k, v in r.items()} for r in grants.to_dict("records")
    ]
    for grant in records:
        if grant["level"] is None or pd.isna(grant["level"]):
            continue
        key = (str(grant["organization"]), str(grant["workspace_id"]), str(grant["team_id"]))
        by_key.setdefault(key, []).append(grant)
    rows: list[dict[str, Any]] = []
    team_rows: dict[str, list[tuple[Mapping[str, Any], list[Mapping[str, Any]]]]] = {}
    for (_, _, team_id), found in sorted(by_key.items()):
        win = _winner(found)
        rows.append(_effective_row("team", str(win["team_name"] or team_id), win, found))
        team_rows.setdefault(team_id, []).append((win, found))
    for team_id, users in (members or {}).items():
        for user in users:
            for win, found in team_rows.get(team_id, []):
                rows.append(_effective_row("user", user, win, found))
    frame = pd.DataFrame(rows)
    if members:
        # A user in several teams: the highest of their teams' rows decides.
        user_rows = frame[frame["holder_kind"] == "user"] if len(frame) else frame
        best = (
            user_rows.assign(
                _rank=user_rows["level"].map(LEVEL_ORDER.index),
                _pref=user_rows["source"].map(_SOURCE_PREFERENCE),
            )
            .sort_values(["_rank", "_pref"], ascending=[False, True], kind="stable")
            .drop_duplicates(["organization", "workspace_id", "holder"])
            .drop(columns=["_rank", "_pref"])
        )
        frame = pd.concat([frame[frame["holder_kind"] == "team"], best], ignore_index=True)
    flat: list[dict[str, Any]] = (
        [{str(k): v for k, v in r.items()} for r in frame.to_dict("records")] if len(frame) else []
    )
    built = build_frame(flat, EFFECTIVE_ACCESS)
    return built.sort_values(
        ["organization", "workspace_name", "holder_kind", "holder"],
        kind="stable",
        ignore_index=True,
    )


def _effective_row(
    kind: str, holder: str, win: Mapping[str, Any], found: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    lost = [g for g in found if g is not win]
    return {
        "organization": win["organization"],
        "workspace_name": win["workspace_name"],
        "holder_kind": kind,
        "holder": holder,
        "level": win["level"],
        "access": win["access"],
        "source": win["source"],
        "decided_by": (f"team {win['team_name']}: " if kind == "user" else "") + _describe(win),
        "overridden": "; ".join(f"{g['source']} {g['access']}" for g in lost),
        "write_equivalent": security_level(str(win["level"])) >= 2,
        "workspace_id": win["workspace_id"],
        "team_id": win["team_id"],
        "record_id": win.get("record_id") if win["source"] == "workspace" else None,
    }


@carries_coverage("team_access_rules.effective_access_matrix")
def effective_access_matrix(effective: pd.DataFrame, holder_kind: str = "team") -> pd.DataFrame:
    """Workspaces (rows, by ``(organization, workspace)``) by holders: the effective level."""
    if "holder_kind" not in effective:  # no organization could be read: no rows
        effective = pd.DataFrame(
            columns=["organization", "workspace_name", "holder_kind", "holder", "level"]
        )
    rows = effective[effective["holder_kind"] == holder_kind]
    keys = _in_order(
        {(o, w) for o, w in zip(rows["organization"], rows["workspace_name"], strict=True)}
    )
    holders = _in_order(set(rows["holder"]))
    cells = {
        (o, w, h): lv
        for o, w, h, lv in zip(
            rows["organization"], rows["workspace_name"], rows["holder"], rows["level"], strict=True
        )
    }
    index = (
        pd.MultiIndex.from_tuples(keys, names=["organization", "workspace"])
        if keys
        else pd.MultiIndex.from_arrays([[], []], names=["organization", "workspace"])
    )
    matrix = pd.DataFrame(
        {h: [cells.get((o, w, h)) for o, w in keys] for h in holders},
        index=index,
        columns=holders,
        dtype="string",
    )
    matrix.columns.name = holder_kind
    return matrix


@carries_coverage("team_access_rules.effective_access_findings")
def effective_access_findings(effective: pd.DataFrame) -> pd.DataFrame:
    """Findings (area ``effective access``) of an :func:`effective_access` frame (teams):

    - **high**: admin through the organization (``manage-workspaces``) over a lower
      team-access record of the same team: the record says less than the team may do;
    - **medium**: a team other than owners that is admin through the organization,
      once per team, with the number of workspaces;
    - **low**: ``plan`` decides a workspace for a team: plan is write-equivalent.
    """
    found: list[Finding] = []
    area = "effective access"
    teams = effective[effective["holder_kind"] == "team"]
    through_org: dict[tuple[str, str], int] = {}
    for row in teams.to_dict("records"):
        obj = f"{row['organization']}/{row['workspace_name']}: {row['holder']}"
        if row["source"] == "organization" and row["level"] == "admin":
            key = (str(row["organization"]), str(row["holder"]))
            through_org[key] = through_org.get(key, 0) + 1
            if row["overridden"] and not pd.isna(row["overridden"]):
                found.append(
                    Finding(
                        "high",
                        area,
                        obj,
                        "admin through organization-level manage-workspaces, over its own "
                        f"record ({row['overridden']}): the record understates what it may do",
                    )
                )
        if row["level"] == "plan":
            found.append(
                Finding(
                    "low",
                    area,
                    obj,
                    f"{row['access']} decides here and plans runs: write-equivalent (a plan "
                    "runs the configuration's code with the workspace's variables)",
                )
            )
    for (org, team), count in sorted(through_org.items()):
        found.append(
            Finding(
                "medium",
                area,
                f"{org}/teams/{team}",
                f"admin on {count} workspaces through the organization (manage-workspaces), "
                "present and future",
            )
        )
    return findings_frame(found)
