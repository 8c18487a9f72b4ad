"""Platform views across organizations, organization-level grants and the team-access
findings, against a real sandbox over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

from toolkit import InputError, NotFound, PlatformClient
from toolkit._coverage import coverage_of
from toolkit._spec.team_access import AGENT_STATUSES
from toolkit.sandbox import Sandbox


@pytest.fixture(scope="module")
def reader(demo_sandbox: Sandbox) -> Iterator[PlatformClient]:
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as client:
        yield client


def _members(prefix: str, n: int) -> list[str]:
    return [f"{prefix}-{k}" for k in range(n)]


@pytest.fixture
def audited(empty_sandbox: Sandbox) -> Iterator[PlatformClient]:
    """Two organizations, one with every team-access problem, one with none of them.

    north: an owners team of 7; "everyone" (12 members) with plan on app-1 and read on
    app-2; "ops" admin on 5 workspaces; "red" (secret) write on app-1 and read on app-2;
    "deployers" custom runs apply; "previewers" custom runs plan; "workspace-managers"
    with manage-workspaces; "policy-editors" with manage-policy-overrides.
    south: an owners team of 2; "devs" (3 members) read on a few workspaces; "leads"
    admin on 4 workspaces.
    """
    p = empty_sandbox.platform
    p.add_organization("north")
    north = {f"app-{k}": p.add_workspace("north", f"app-{k}") for k in range(1, 7)}
    p.add_team("north", "owners", members=_members("n-owner", 7), owners=True)
    everyone = p.add_team("north", "everyone", members=_members("n-all", 12))
    ops = p.add_team("north", "ops", members=_members("n-ops", 2))
    red = p.add_team("north", "red", members=_members("n-red", 1), secret=True)
    deployers = p.add_team("north", "deployers", members=_members("n-dep", 1))
    previewers = p.add_team("north", "previewers", members=_members("n-pre", 1))
    p.add_team(
        "north",
        "workspace-managers",
        members=_members("n-wm", 2),
        organization_access=["manage-workspaces"],
    )
    p.add_team(
        "north",
        "policy-editors",
        members=_members("n-pe", 1),
        organization_access=["read-workspaces", "manage-policy-overrides"],
    )
    p.add_team_access(north["app-1"], everyone, "plan")
    p.add_team_access(north["app-2"], everyone, "read")
    for k in range(1, 6):
        p.add_team_access(north[f"app-{k}"], ops, "admin")
    p.add_team_access(north["app-1"], red, "write")
    p.add_team_access(north["app-2"], red, "read")
    p.add_team_access(north["app-3"], deployers, "custom", runs="apply")
    p.add_team_access(north["app-4"], previewers, "custom", runs="plan")

    p.add_organization("south")
    south = {f"svc-{k}": p.add_workspace("south", f"svc-{k}") for k in range(1, 6)}
    p.add_team("south", "owners", members=_members("s-owner", 2), owners=True)
    devs = p.add_team("south", "devs", members=_members("s-dev", 3))
    leads = p.add_team("south", "leads", members=_members("s-lead", 2))
    p.add_team_access(south["svc-1"], devs, "read")
    p.add_team_access(south["svc-2"], devs, "read")
    for k in range(1, 5):
        p.add_team_access(south[f"svc-{k}"], leads, "admin")
    with PlatformClient(empty_sandbox.address, empty_sandbox.token) as client:
        yield client


def _reasons(findings: pd.DataFrame, obj: str) -> list[tuple[str, str]]:
    rows = findings[findings["object"] == obj]
    return [(str(s), str(r)) for s, r in zip(rows["severity"], rows["reason"], strict=True)]


# -- agents by status across organizations ----------------------------------------------


def test_agents_by_status_of_every_organization_matches_each_organizations_own(reader):
    every = reader.organizations.across(reader.agent_pools.agents_by_status)
    assert list(every.columns) == [
        "organization", "pool_id", "pool_name", *AGENT_STATUSES, "total", "problem"
    ]  # fmt: skip
    assert every["problem"].isna().all()
    assert set(every["organization"]) == {"acme", "globex"}  # initech has no pool
    for org in ("acme", "globex"):
        own = reader.agent_pools.agents_by_status(org)
        mine = every[every["organization"] == org].drop(columns=["organization", "problem"])
        pd.testing.assert_frame_equal(mine.set_index("pool_id"), own, check_names=False)


def test_agents_by_status_across_organizations_shows_only_what_the_token_sees(demo_sandbox):
    with PlatformClient(demo_sandbox.address, "demo-org-acme") as acme:
        seen = acme.organizations.across(acme.agent_pools.agents_by_status)
    assert set(seen["organization"]) == {"acme"}


def test_an_organization_the_caller_names_that_this_token_cannot_see_is_an_error(demo_sandbox):
    # The service answers 404 alike for a missing organization and one not visible: a
    # name the caller gave is checked first, and a wrong one is an error naming it.
    with PlatformClient(demo_sandbox.address, "demo-org-acme") as acme:
        with pytest.raises(NotFound, match="organization 'globex' not found, or not visible"):
            acme.organizations.across(acme.agent_pools.agents_by_status, ["acme", "globex"])
        with pytest.raises(NotFound, match="organization 'acmex'"):
            acme.organizations.across(acme.agent_pools.agents_by_status, ["acmex"])


def test_a_listed_organization_that_cannot_be_read_is_a_problem_row_and_a_gap(demo_sandbox):
    # Discovered by listing, then not readable (gone since, here by the call's own 404):
    # a row saying so and a gap, and the others go on.
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as client:

        def counts(organization):
            gone = organization == "globex"
            return client.agent_pools.agents_by_status("globex-gone" if gone else organization)

        seen = client.organizations.across(counts)
    problems = seen[seen["problem"].notna()]
    assert list(problems["organization"]) == ["globex"]
    assert len(seen[seen["organization"] == "acme"]) > 0
    (record,) = coverage_of(seen)
    assert [g.path for g in record.gaps] == ["organizations/globex"]


def test_agents_by_status_across_organizations_counts_agents_past_the_first_page(sandbox):
    pool = sandbox.platform.add_pool("initech", "initech-runners")
    for k in range(130):
        sandbox.platform.add_agent(
            pool, name=f"r-{k}", status="busy" if k % 2 else "idle", ip_address="10.0.0.1"
        )
    with PlatformClient(sandbox.address, sandbox.token) as client:
        counts = client.organizations.across(
            client.agent_pools.agents_by_status, ["initech", "acme"]
        )
    row = counts.set_index("pool_id").loc[pool]
    assert (row["organization"], int(row["busy"]), int(row["idle"])) == ("initech", 65, 65)
    assert int(row["total"]) == 130
    assert set(counts["organization"]) == {"initech", "acme"}


def test_across_organizations_refuses_what_is_not_a_name(reader):
    with pytest.raises(InputError, match="organizations must be names"):
        reader.organizations.across(reader.agent_pools.agents_by_status, [""])


def test_across_no_organization_is_an_empty_frame_with_its_columns(reader):
    empty = reader.organizations.across(reader.agent_pools.agents_by_status, [])
    assert list(empty.columns) == ["organization", "problem"] and empty.empty


# -- grants and the permissions matrix ---------------------------------------------------


def test_grants_include_the_owners_team_and_organization_level_access_on_every_workspace(
    audited,
):
    grants = audited.team_access.grants_frame()
    assert set(grants["organization"]) == {"north", "south"}
    owners = grants[(grants["source"] == "owners") & (grants["organization"] == "north")]
    assert sorted(owners["workspace_name"]) == [f"app-{k}" for k in range(1, 7)]
    assert set(owners["access"]) == {"admin"} and owners["record_id"].isna().all()
    managers = grants[grants["team_name"] == "workspace-managers"]
    assert set(managers["source"]) == {"organization"} and set(managers["level"]) == {"admin"}
    assert len(managers) == 6
    # read-workspaces is read everywhere; manage-policy-overrides alone reaches no workspace
    editors = grants[grants["team_name"] == "policy-editors"]
    assert set(editors["level"]) == {"read"} and len(editors) == 6
    # a team with only records has only records
    assert set(grants.loc[grants["team_name"] == "ops", "source"]) == {"workspace"}


def test_a_custom_record_is_placed_among_the_levels_by_what_it_may_do(audited):
    grants = audited.team_access.grants_frame("north")
    level = dict(zip(grants["team_name"], grants["level"], strict=False))
    assert level["deployers"] == "write" and level["previewers"] == "plan"


def _matrices(client: PlatformClient, **options: Any) -> pd.DataFrame:
    """The permissions matrix of every organization, by the house's one combinator."""
    return client.organizations.across(
        lambda org: client.team_access.permissions_matrix(org, **options)
    )


def test_the_matrix_across_organizations_has_an_organization_level_and_the_higher_grant(
    audited,
):
    matrix = _matrices(audited, organization_level=True)
    # organization, workspace, a column per team, problem; no "team" label over them all
    assert list(matrix.columns[:2]) == ["organization", "workspace"]
    assert matrix.columns[-1] == "problem" and matrix.columns.name is None
    assert matrix["problem"].isna().all()
    cells = matrix.set_index(["organization", "workspace"])
    assert cells.loc[("north", "app-6"), "owners"] == "admin"
    assert cells.loc[("south", "svc-5"), "owners"] == "admin"
    assert pd.isna(cells.loc[("south", "svc-5"), "leads"])
    assert set(matrix.drop(columns="workspace").dtypes) == {pd.StringDtype()}
    # records only: owners and organization-level grants left out, each as its own matrix
    records = _matrices(audited)
    assert "owners" not in records.columns and "workspace-managers" not in records.columns
    for org in ("north", "south"):
        own = audited.team_access.permissions_matrix(org)
        mine = records[records["organization"] == org].set_index("workspace")
        mine = mine.drop(columns=["organization", "problem"]).dropna(axis=1, how="all")
        pd.testing.assert_frame_equal(mine, own.loc[:, mine.columns], check_names=False)


def test_the_matrix_across_organizations_filters_each_organization_through_the_call(audited):
    admins = _matrices(audited, min_level="admin", teams=["ops", "leads"])
    assert list(admins.columns) == ["organization", "workspace", "ops", "leads", "problem"]
    assert set(admins["organization"]) == {"north", "south"}
    assert len(admins) == 5 + 4 and admins[["ops", "leads"]].notna().sum().sum() == 9


def test_an_organization_gone_from_the_matrix_across_organizations_is_one_row_saying_so(
    audited,
):
    # Listed, then gone when called (here by the call's own 404): one row naming it, a gap,
    # and the other organization's rows go on.
    matrix = audited.organizations.across(
        lambda org: audited.team_access.permissions_matrix(
            "south-gone" if org == "south" else org, organization_level=True
        )
    )
    (gone,) = matrix[matrix["problem"].notna()].to_dict("records")
    assert gone["organization"] == "south" and "south-gone" in gone["problem"]
    assert pd.isna(gone["workspace"])
    assert len(matrix[matrix["organization"] == "north"]) == 6
    (record,) = coverage_of(matrix)
    assert [g.path for g in record.gaps] == ["organizations/south"]


def test_an_organization_grant_above_a_record_shows_in_the_cell(empty_sandbox):
    p = empty_sandbox.platform
    p.add_organization("solo")
    ws = p.add_workspace("solo", "only")
    team = p.add_team("solo", "managers", organization_access=["manage-workspaces"])
    p.add_team_access(ws, team, "read")
    with PlatformClient(empty_sandbox.address, empty_sandbox.token) as client:
        matrix = client.team_access.permissions_matrix("solo", organization_level=True)
        assert matrix.loc["only", "managers"] == "admin"
        assert client.team_access.permissions_matrix("solo").loc["only", "managers"] == "read"


def test_the_matrix_filters_teams_and_workspaces_by_name_or_pattern(audited):
    matrix = audited.team_access.permissions_matrix(
        "north", teams=["ev*", "red"], workspaces="app-[12]"
    )
    assert list(matrix.index) == ["app-1", "app-2"]
    assert list(matrix.columns) == ["everyone", "red"]
    assert matrix.loc["app-1", "everyone"] == "plan"


def test_min_level_counts_plan_as_write_and_drops_what_is_left_empty(audited):
    matrix = audited.team_access.permissions_matrix("north", min_level="write")
    assert matrix.loc["app-1", "everyone"] == "plan"  # plan is write-equivalent
    assert pd.isna(matrix.loc["app-2", "everyone"])  # read is below
    assert "app-6" not in matrix.index  # no grant at write or above on app-6
    admins = audited.team_access.permissions_matrix("north", min_level="admin")
    assert list(admins.columns) == ["ops"]
    with pytest.raises(InputError, match="level must be one of"):
        audited.team_access.permissions_matrix("north", min_level="owner")


# -- findings: each on data that has the problem and data that lacks it -----------------


def test_findings_cover_several_organizations_or_one(empty_sandbox, audited):
    p = empty_sandbox.platform
    p.add_organization("east")
    site = p.add_workspace("east", "site")
    p.add_team_access(site, p.add_team("east", "previewers", members=["e-p"]), "plan")
    every = audited.team_access.findings()
    assert list(every.columns) == ["severity", "area", "object", "reason"]
    assert set(every["area"]) == {"team access"}
    assert {o.split("/")[0] for o in every["object"]} == {"north", "east"}
    east = audited.team_access.findings(["east", "south"])
    assert list(east["object"]) == ["east/site: previewers"]
    assert audited.team_access.findings("south").empty


def test_a_large_owners_team_is_a_finding_and_a_small_one_is_not(audited):
    found = audited.team_access.findings()
    assert _reasons(found, "north/teams/owners") == [
        (
            "medium",
            "the owners team has 7 members (more than 5): each is admin of every "
            "workspace and may change all team access",
        )
    ]
    assert _reasons(found, "south/teams/owners") == []
    assert _reasons(audited.team_access.findings(max_owners=7), "north/teams/owners") == []


def test_manage_workspaces_outside_the_owners_team_is_high(audited):
    found = audited.team_access.findings()
    (reason,) = _reasons(found, "north/teams/workspace-managers")
    assert reason[0] == "high" and "manage-workspaces" in reason[1]
    assert _reasons(found, "south/teams/devs") == []


def test_managing_organization_permissions_are_named_and_read_workspaces_alone_is_not(audited):
    found = audited.team_access.findings()
    assert _reasons(found, "north/teams/policy-editors") == [
        ("medium", "organization-level permissions manage-policy-overrides held by 1 members")
    ]


def test_admin_on_many_workspaces_is_a_finding_below_the_threshold_it_is_not(audited):
    found = audited.team_access.findings()
    assert _reasons(found, "north/teams/ops")[0][0] == "medium"
    assert "admin on 5 workspaces" in _reasons(found, "north/teams/ops")[0][1]
    assert _reasons(found, "south/teams/leads") == []  # admin on 4
    assert _reasons(audited.team_access.findings(admin_workspaces=6), "north/teams/ops") == []


def test_plan_to_a_large_team_is_high_and_read_to_it_is_not(audited):
    found = audited.team_access.findings()
    reasons = _reasons(found, "north/app-1: everyone")
    assert ("high", reasons[0][1]) == reasons[0]
    assert "plan (plan is write-equivalent) granted to a team of 12 members" in reasons[0][1]
    assert _reasons(found, "north/app-2: everyone") == []
    assert [
        s for s, _ in _reasons(audited.team_access.findings(large_team=13), "north/app-1: everyone")
    ] == ["low"]


def test_write_to_a_secret_team_is_a_finding_and_read_is_not(audited):
    found = audited.team_access.findings()
    assert _reasons(found, "north/app-1: red") == [
        (
            "medium",
            "write granted to a secret team: the organization's members cannot see who holds it",
        )
    ]
    assert _reasons(found, "north/app-2: red") == []


def test_custom_access_with_runs_apply_is_a_finding_and_runs_plan_is_only_plan(audited):
    found = audited.team_access.findings()
    assert _reasons(found, "north/app-3: deployers") == [
        (
            "medium",
            "custom access with runs: apply: it applies changes, write power under a custom label",
        )
    ]
    (plan,) = _reasons(found, "north/app-4: previewers")
    assert plan[0] == "low" and "treat it as write" in plan[1]


def test_plan_is_flagged_as_write_equivalent_and_read_is_not(audited):
    found = audited.team_access.findings()
    low = found[found["severity"] == "low"]
    assert set(low["object"]) == {"north/app-1: everyone", "north/app-4: previewers"}
    assert all("reads its variables" in r for r in low["reason"])
    assert not any(o.startswith("south/svc-") for o in found["object"])


def test_an_organization_without_problems_has_no_findings(empty_sandbox):
    p = empty_sandbox.platform
    p.add_organization("tidy")
    ws = p.add_workspace("tidy", "site")
    p.add_team("tidy", "owners", members=["t-owner"], owners=True)
    p.add_team_access(ws, p.add_team("tidy", "viewers", members=["t-v"]), "read")
    p.add_team_access(ws, p.add_team("tidy", "builders", members=["t-b"]), "write")
    with PlatformClient(empty_sandbox.address, empty_sandbox.token) as client:
        found = client.team_access.findings()
    assert found.empty and list(found.columns) == ["severity", "area", "object", "reason"]
