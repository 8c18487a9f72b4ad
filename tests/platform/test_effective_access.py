"""Effective access on the platform: organization-level permissions and team access
combine, the higher wins, and the grant that decides is named.

The hand-worked table follows the spec's text (000 part 2, team access rule 3 and its
gap): organization-level team permissions also grant workspace access; its example has
manage-workspaces giving admin over a read-only team-workspace grant; the owners team
is admin everywhere; ``plan`` counts as write for security.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

from toolkit import NotFound, PlatformClient
from toolkit._frames import build_frame
from toolkit._spec.team_access import IMPLIED_PERMISSIONS
from toolkit.platform.team_access import (
    GRANTS,
    effective_access,
    effective_access_findings,
    effective_access_matrix,
)
from toolkit.platform.team_access_rules import grants_matrix
from toolkit.sandbox import Sandbox


def _grant(
    team: str | None, source: str, access: str, level: str, ws: str | None = "w1", **perms: object
):
    implied = IMPLIED_PERMISSIONS.get(access, {})
    return {
        "organization": "o",
        "workspace_id": f"ws-{ws}",
        "workspace_name": ws,
        "team_id": f"team-{team}",
        "team_name": team,
        "source": source,
        "access": access,
        "level": level,
        **{k.replace("-", "_"): v for k, v in implied.items()},
        **perms,
        "record_id": f"tws-{team}-{ws}" if source == "workspace" else None,
    }


GRANT_ROWS = [
    # The spec's example: manage-workspaces (admin) over a read-only record.
    _grant("ops", "workspace", "read", "read"),
    _grant("ops", "organization", "admin", "admin"),
    # The owners team: admin on every workspace.
    _grant("owners", "owners", "admin", "admin"),
    # A write record above read-workspaces: the record decides.
    _grant("devs", "workspace", "write", "write"),
    _grant("devs", "organization", "read", "read"),
    # A custom record that plans: plan, write-equivalent.
    _grant("ci", "workspace", "custom", "plan", runs="plan", variables="none"),
    # read-workspaces alone.
    _grant("auditors", "organization", "read", "read"),
]

# (team, level, source, decided by, overridden, write-equivalent), worked by hand.
EXPECTED = [
    ("auditors", "read", "organization", "organization-level read-workspaces", "", False),
    ("ci", "plan", "workspace", "team access tws-ci-w1: custom", "", True),
    ("devs", "write", "workspace", "team access tws-devs-w1: write", "organization read", True),
    (
        "ops",
        "admin",
        "organization",
        "organization-level manage-workspaces",
        "workspace read",
        True,
    ),
    ("owners", "admin", "owners", "the owners team", "", True),
]


def test_the_higher_grant_wins_and_is_named_as_the_hand_worked_table_says() -> None:
    frame = effective_access(build_frame(GRANT_ROWS, GRANTS))
    assert len(frame) == len(EXPECTED)
    for row, (team, level, source, decided, overridden, write) in zip(
        frame.to_dict("records"), EXPECTED, strict=True
    ):
        assert (row["holder"], row["level"], row["source"]) == (team, level, source)
        assert row["decided_by"].startswith(decided), row["decided_by"]
        assert (row["overridden"], bool(row["write_equivalent"])) == (overridden, write)


def test_a_user_gets_the_highest_access_of_their_teams() -> None:
    members = {"team-ops": ["una"], "team-devs": ["una", "vic"], "team-ci": ["vic"]}
    frame = effective_access(build_frame(GRANT_ROWS, GRANTS), members)
    users = frame[frame["holder_kind"] == "user"].set_index("holder")
    assert users.loc["una", "level"] == "admin"
    assert users.loc["una", "decided_by"].startswith("team ops: organization-level")
    assert users.loc["vic", "level"] == "write"
    assert users.loc["vic", "decided_by"].startswith("team devs: team access")


def test_admin_through_the_organization_and_plan_are_findings() -> None:
    effective = effective_access(build_frame(GRANT_ROWS, GRANTS))
    found = effective_access_findings(effective)
    rows = set(zip(found["severity"], found["object"], strict=True))
    assert ("high", "o/w1: ops") in rows
    assert ("medium", "o/teams/ops") in rows
    assert ("low", "o/w1: ci") in rows
    # The owners team and a record that decides by itself raise nothing.
    assert not any(obj.endswith(("owners", "devs", "auditors")) for _, obj in rows)


def test_the_matrix_shows_each_teams_effective_level() -> None:
    matrix = effective_access_matrix(effective_access(build_frame(GRANT_ROWS, GRANTS)))
    assert matrix.loc[("o", "w1")].to_dict() == {
        "auditors": "read",
        "ci": "plan",
        "devs": "write",
        "ops": "admin",
        "owners": "admin",
    }


def test_no_grants_is_an_empty_frame_with_the_columns() -> None:
    frame = effective_access(build_frame([], GRANTS))
    assert frame.empty and "decided_by" in frame.columns
    assert effective_access_matrix(frame).empty


@pytest.fixture
def platform(empty_sandbox: Sandbox) -> Iterator[PlatformClient]:
    """Organization ``o``: owners, ``ops`` (manage-workspaces over a read record) and
    ``ci`` (custom, plan), whose member holds ``o-member-token``; the owner's client."""
    service = empty_sandbox.platform
    service.add_organization("o", token="o-org-token")
    ws = service.add_workspace("o", "w1")
    service.add_team("o", "owners", owners=True, members=["o-owner-token"])
    ops = service.add_team("o", "ops", organization_access=["manage-workspaces"])
    service.add_team_access(ws, ops, "read")
    ci = service.add_team("o", "ci", members=["o-member-token"])
    service.add_team_access(ws, ci, "custom", runs="plan")
    with PlatformClient(empty_sandbox.address, "o-owner-token") as client:
        yield client


def test_effective_access_on_the_sandbox_names_manage_workspaces_over_a_read_record(
    platform: PlatformClient,
) -> None:
    frame = platform.team_access.effective_access("o").set_index("holder")
    assert frame.loc["ops", "level"] == "admin"
    assert frame.loc["ops", "source"] == "organization"
    assert frame.loc["ops", "overridden"] == "workspace read"
    assert frame.loc["ci", "level"] == "plan"
    # The sandbox's teams name no users: said, not shown as nobody.
    record = frame.attrs["coverage"]
    assert not record["complete"]
    assert "no users relationship" in record["gaps"][0]["reason"]


def test_effective_access_goes_across_organizations_as_the_other_views_do(
    platform: PlatformClient,
) -> None:
    # A name the caller gives that does not exist is an error naming it (issue 23), not a
    # problem row; an organization that refuses, or one listed and gone, is a row.
    with pytest.raises(NotFound, match="organization 'nope' not found"):
        platform.team_access.effective_access(["o", "nope"])
    frame = platform.team_access.effective_access(["o"])
    assert list(frame.columns[:1]) == ["organization"] and frame.columns[-1] == "problem"
    assert set(frame["organization"]) == {"o"} and frame["problem"].isna().all()
    matrix = platform.team_access.effective_access_matrix()
    assert matrix.loc[("o", "w1"), "ops"] == "admin"
    assert set(matrix.index.get_level_values("organization")) == {"o"}
    assert matrix.attrs["coverage"]["view"] == "team_access.effective_access_matrix"


def test_a_members_partial_view_of_the_grants_is_a_gap_not_a_whole_answer(
    platform: PlatformClient, empty_sandbox: Sandbox
) -> None:
    with PlatformClient(empty_sandbox.address, "o-member-token") as member:
        frame = member.team_access.effective_access("o", users=False)
    assert "ci" in set(frame["holder"])  # its own team's grant, and only part of the rest
    reasons = [g["reason"] for g in frame.attrs["coverage"]["gaps"]]
    assert any("not visible to this token" in r for r in reasons), reasons


def test_the_findings_and_the_matrix_read_an_across_frame_with_a_problem_row(
    platform: PlatformClient,
) -> None:
    read = platform.team_access.effective_access(["o"], users=False)
    gone = pd.DataFrame({"organization": ["gone"], "problem": ["organization gone: not found"]})
    frame = pd.concat([read, gone], ignore_index=True)
    findings = effective_access_findings(frame)
    assert "o/w1: ops" in set(findings["object"])
    assert effective_access_matrix(frame).loc[("o", "w1"), "ops"] == "admin"


def test_a_grant_whose_team_or_workspace_has_no_name_sorts_last_in_the_matrix():
    # A server's record may lack a name (a team the token cannot see, a spoiled answer):
    # sorting None among names raised TypeError in grants_matrix, once found by the
    # answer fuzz; a missing name now sorts last.
    rows = [
        _grant("ops", "workspace", "admin", "admin", ws="web"),
        _grant(None, "workspace", "read", "read", ws="web"),
        _grant("devs", "workspace", "write", "write", ws=None),
        _grant("devs", "workspace", "plan", "plan", ws="api"),
    ]
    matrix = grants_matrix(build_frame(rows, GRANTS), None, None, None, ["web", "api", None])
    assert matrix.index.name == "workspace" and matrix.columns.name == "team"
    assert list(matrix.columns[:2]) == ["devs", "ops"] and pd.isna(matrix.columns[2])
    assert list(matrix.index[:2]) == ["api", "web"] and pd.isna(matrix.index[2])
    assert matrix.loc["web", "ops"] == "admin" and matrix.loc["api", "devs"] == "plan"
    assert matrix.iloc[0, 2] is pd.NA and matrix.iloc[1, 2] == "read"
    assert matrix.iloc[2, 0] == "write"
    assert set(matrix.dtypes) == {pd.StringDtype()}
