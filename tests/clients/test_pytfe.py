"""pytfe, the platform's official Python client, unmodified, against the sandbox.

What pytfe reads back is checked against the spec and the sandbox's state.
Where pytfe cannot hold a value the spec allows, the test pins down exactly
what it shows instead (docs/differences.md, "Official clients").
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from pytfe import TFEClient, TFEConfig
from pytfe.errors import NotFound, RateLimited, TFEError
from pytfe.models import (
    AgentListOptions,
    AgentPoolCreateOptions,
    AgentPoolListOptions,
    AgentPoolReadOptions,
    AgentPoolUpdateOptions,
    AgentStatus,
    PolicySetParameterCreateOptions,
    PolicySetParameterListOptions,
    PolicySetParameterUpdateOptions,
    TeamWorkspaceAccessAddOptions,
    TeamWorkspaceAccessType,
    TeamWorkspaceAccessUpdateOptions,
    TeamWorkspaceRunsPermission,
    TeamWorkspaceSentinelMocksPermission,
    TeamWorkspaceStateVersionsPermission,
    TeamWorkspaceVariablesPermission,
)

from toolkit.sandbox import Sandbox

# pytfe hands httpx a CA bundle path, which httpx has deprecated: not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:`verify=<str>` is deprecated:DeprecationWarning")


def _client(sandbox: Sandbox) -> TFEClient:
    # No retries: a sandbox error must surface at once, not after back-off.
    return TFEClient(TFEConfig(address=sandbox.address, token=sandbox.token, max_retries=0))


@pytest.fixture
def tfe(sandbox: Sandbox) -> Iterator[TFEClient]:
    """pytfe with the owner token on a fresh demo sandbox (one pool per organization)."""
    with _client(sandbox) as client:
        yield client


@pytest.fixture
def roomy() -> Iterator[Sandbox]:
    """A demo sandbox that lets an organization hold several pools, for sorting and search."""
    with Sandbox(pool_limit=6) as sandbox:
        yield sandbox


def _ids(sandbox: Sandbox, path: str) -> dict[str, str]:
    """Names to ids of a collection, read over plain HTTP (pytfe has no call for them)."""
    response = httpx.get(
        f"{sandbox.address}/api/v2/{path}",
        headers={"Authorization": f"Bearer {sandbox.token}"},
        timeout=10,
    )
    response.raise_for_status()
    return {item["attributes"]["name"]: item["id"] for item in response.json()["data"]}


# -- agent pools ---------------------------------------------------------------


def test_pools_list_with_search_sort_and_the_allowed_workspace_filter(roomy: Sandbox) -> None:
    with _client(roomy) as tfe:
        workspaces = _ids(roomy, "organizations/acme/workspaces")
        for name, scoped, allowed in (
            ("builders-b", True, []),
            ("builders-a", False, [workspaces["web-frontend"]]),
            ("deployers", True, []),
            ("testers", False, [workspaces["networking"]]),
        ):
            tfe.agent_pools.create(
                "acme",
                AgentPoolCreateOptions(
                    name=name, organization_scoped=scoped, allowed_workspace_ids=allowed
                ),
            )

        by_name = [p.name for p in tfe.agent_pools.list("acme", AgentPoolListOptions(sort="name"))]
        assert by_name == ["acme-private", "builders-a", "builders-b", "deployers", "testers"]
        newest = [
            p.name for p in tfe.agent_pools.list("acme", AgentPoolListOptions(sort="-created-at"))
        ]
        assert newest == ["testers", "deployers", "builders-a", "builders-b", "acme-private"]
        found = tfe.agent_pools.list("acme", AgentPoolListOptions(query="BUILD", sort="-name"))
        assert [p.name for p in found] == ["builders-b", "builders-a"]

        # Organization-scoped pools, plus those that list the workspace (builders-a).
        allowed = tfe.agent_pools.list(
            "acme", AgentPoolListOptions(allowed_workspace_name="web-frontend", sort="name")
        )
        assert [p.name for p in allowed] == [
            "acme-private",
            "builders-a",
            "builders-b",
            "deployers",
        ]

        with pytest.raises(TFEError) as refused:
            list(tfe.agent_pools.list("acme", AgentPoolListOptions(sort="size")))
        assert refused.value.status == 400


def test_pool_list_and_read_with_included_workspaces(tfe: TFEClient, sandbox: Sandbox) -> None:
    workspaces = _ids(sandbox, "organizations/acme/workspaces")
    attached = {workspaces["web-backend"], workspaces["billing-api"]}
    (listed,) = tfe.agent_pools.list("acme", AgentPoolListOptions(include=["workspaces"]))
    assert (listed.name, listed.organization_scoped, listed.agent_count) == (
        "acme-private",
        True,
        7,
    )
    assert {w.id for w in listed.workspaces} == attached
    # pytfe's list reads ids from the relationships only: the names the sandbox
    # sends in "included" stay unread (see docs/differences.md).
    assert {w.name for w in listed.workspaces} == {None}

    read = tfe.agent_pools.read(listed.id, AgentPoolReadOptions(include=["workspaces"]))
    assert {(w.id, w.name) for w in read.workspaces} == {
        (workspaces["web-backend"], "web-backend"),
        (workspaces["billing-api"], "billing-api"),
    }
    assert read.created_at == sandbox.clock.start - timedelta(days=90)


def test_pool_create_update_and_delete(tfe: TFEClient, sandbox: Sandbox) -> None:
    workspaces = _ids(sandbox, "organizations/initech/workspaces")
    created = tfe.agent_pools.create(
        "initech",
        AgentPoolCreateOptions(
            name="initech-runners",
            organization_scoped=False,
            allowed_workspace_ids=[workspaces["payroll"]],
        ),
    )
    assert created.id.startswith("apool-")
    assert (created.name, created.organization_scoped, created.workspaces) == (
        "initech-runners",
        False,
        [],
    )
    assert [w.id for w in created.allowed_workspaces] == [workspaces["payroll"]]
    assert abs(created.created_at - sandbox.clock.now()) < timedelta(seconds=5)

    # Only one pool per organization (spec 4.1 and part 8).
    with pytest.raises(TFEError) as second:
        tfe.agent_pools.create("initech", AgentPoolCreateOptions(name="another"))
    assert second.value.status == 422

    # A PATCH without organization-scoped sets it back to its default, true (spec 4.1).
    renamed = tfe.agent_pools.update(created.id, AgentPoolUpdateOptions(name="initech-pool"))
    assert (renamed.name, renamed.organization_scoped) == ("initech-pool", True)
    assert tfe.agent_pools.read(created.id).name == "initech-pool"

    tfe.agent_pools.delete(created.id)
    with pytest.raises(NotFound):
        tfe.agent_pools.read(created.id)
    assert list(tfe.agent_pools.list("initech")) == []


# -- agents ----------------------------------------------------------------------


def test_agents_list_read_and_delete_with_412_for_a_working_agent(
    tfe: TFEClient, sandbox: Sandbox
) -> None:
    pool_id = _ids(sandbox, "organizations/acme/agent-pools")["acme-private"]
    agents = {a.name: a for a in tfe.agents.list(pool_id)}
    assert sorted(agents) == [f"runner-0{i}" for i in range(1, 8)]
    idle = agents["runner-01"]
    assert (idle.status, idle.ip_address) == (AgentStatus.IDLE, "10.0.1.11")
    assert idle.last_ping_at == sandbox.clock.start - timedelta(seconds=30)
    assert tfe.agents.read(idle.id).id == idle.id

    with pytest.raises(TFEError) as busy:
        tfe.agents.delete(agents["runner-02"].id)
    assert busy.value.status == 412
    assert tfe.agents.read(agents["runner-02"].id).status == AgentStatus.BUSY
    with pytest.raises(TFEError) as working:
        tfe.agents.delete(idle.id)
    assert working.value.status == 412

    tfe.agents.delete(agents["runner-04"].id)  # exited
    with pytest.raises(NotFound):
        tfe.agents.read(agents["runner-04"].id)
    assert len(list(tfe.agents.list(pool_id))) == 6


def test_pytfe_reads_the_exited_and_errored_statuses_as_unknown(
    tfe: TFEClient, sandbox: Sandbox
) -> None:
    pool_id = _ids(sandbox, "organizations/acme/agent-pools")["acme-private"]
    response = httpx.get(
        f"{sandbox.address}/api/v2/agent-pools/{pool_id}/agents",
        headers={"Authorization": f"Bearer {sandbox.token}"},
    )
    on_the_wire = {
        a["attributes"]["name"]: a["attributes"]["status"] for a in response.json()["data"]
    }
    # The sandbox answers the spec's five statuses (runner-07 has been silent for
    # five hours, so unknown has become errored)...
    assert on_the_wire == {
        "runner-01": "idle",
        "runner-02": "busy",
        "runner-03": "busy",
        "runner-04": "exited",
        "runner-05": "errored",
        "runner-06": "unknown",
        "runner-07": "errored",
    }
    # ...and pytfe, whose AgentStatus knows only idle, busy and unknown, shows the
    # other two as unknown, in list and in read alike.
    seen = {a.name: a.status for a in tfe.agents.list(pool_id)}
    assert seen == {
        "runner-01": AgentStatus.IDLE,
        "runner-02": AgentStatus.BUSY,
        "runner-03": AgentStatus.BUSY,
        "runner-04": AgentStatus.UNKNOWN,
        "runner-05": AgentStatus.UNKNOWN,
        "runner-06": AgentStatus.UNKNOWN,
        "runner-07": AgentStatus.UNKNOWN,
    }
    assert {s.value for s in AgentStatus} == {"idle", "busy", "unknown"}


def test_agents_of_a_large_pool_come_whole_across_many_pages(
    tfe: TFEClient, sandbox: Sandbox
) -> None:
    pool = tfe.agent_pools.create("initech", AgentPoolCreateOptions(name="initech-fleet"))
    statuses = ("idle", "busy", "exited", "errored", "unknown")
    added = [
        sandbox.platform.add_agent(
            pool.id,
            name=f"fleet-{i:03d}",
            status=statuses[i % 5],
            ip_address=f"10.9.{i // 250}.{i % 250 + 1}",
        )
        for i in range(320)
    ]
    (listed,) = tfe.agent_pools.list("initech")
    assert listed.agent_count == 320

    # pytfe's own page size (100): four pages; the spec's default (20): sixteen.
    for options in (None, AgentListOptions(page_size=20), AgentListOptions(page_size=7)):
        agents = list(tfe.agents.list(pool.id, options))
        assert [a.id for a in agents] == added
        assert [a.name for a in agents] == [f"fleet-{i:03d}" for i in range(320)]

    # The last page of the spec's default size, as pytfe would start from it.
    tail = list(tfe.agents.list(pool.id, AgentListOptions(page_number=16, page_size=20)))
    assert [a.name for a in tail] == [f"fleet-{i:03d}" for i in range(300, 320)]


# -- policy-set parameters -------------------------------------------------------


def test_policy_set_parameters_create_update_sensitive_and_delete(
    tfe: TFEClient, sandbox: Sandbox
) -> None:
    policy_set = _ids(sandbox, "organizations/acme/policy-sets")["security-baseline"]
    listed = {p.key: p for p in tfe.policy_set_parameters.list(policy_set)}
    assert {k: (p.value, p.sensitive) for k, p in listed.items()} == {
        "allowed_regions": ("us-east-1,eu-west-1", False),
        "max_instance_size": ("m5.xlarge", False),
        "slack_webhook": (None, True),  # hidden once sensitive
    }
    assert all(p.category.value == "policy-set" for p in listed.values())
    assert all(p.policy_set.id == policy_set for p in listed.values())

    created = tfe.policy_set_parameters.create(
        policy_set, PolicySetParameterCreateOptions(key="cost_center")
    )
    assert created.id.startswith("var-")
    assert (created.key, created.value, created.sensitive) == ("cost_center", "", False)

    unchanged = tfe.policy_set_parameters.update(
        policy_set, created.id, PolicySetParameterUpdateOptions()
    )
    assert (unchanged.key, unchanged.value, unchanged.sensitive) == ("cost_center", "", False)
    valued = tfe.policy_set_parameters.update(
        policy_set, created.id, PolicySetParameterUpdateOptions(value="cc-4711")
    )
    assert valued.value == "cc-4711"
    hidden = tfe.policy_set_parameters.update(
        policy_set, created.id, PolicySetParameterUpdateOptions(sensitive=True)
    )
    assert (hidden.value, hidden.sensitive) == (None, True)
    assert tfe.policy_set_parameters.read(policy_set, created.id).value is None
    # Renaming keeps the hidden value hidden.
    renamed = tfe.policy_set_parameters.update(
        policy_set, created.id, PolicySetParameterUpdateOptions(key="cost_centre")
    )
    assert (renamed.key, renamed.value, renamed.sensitive) == ("cost_centre", None, True)

    paged = list(
        tfe.policy_set_parameters.list(policy_set, PolicySetParameterListOptions(page_size=2))
    )
    assert sorted(p.key for p in paged) == [
        "allowed_regions",
        "cost_centre",
        "max_instance_size",
        "slack_webhook",
    ]

    tfe.policy_set_parameters.delete(policy_set, created.id)
    with pytest.raises(NotFound):
        tfe.policy_set_parameters.read(policy_set, created.id)


# -- team access -----------------------------------------------------------------

# The implied permissions of spec part 2 (and the spec folder's notes).
IMPLIED = {
    "read": ("read", "read", "read", "none", False, False),
    "plan": ("plan", "read", "read", "none", False, False),
    "write": ("apply", "write", "write", "read", True, False),
    "admin": ("apply", "write", "write", "read", True, True),
}


def _permissions(access: Any) -> tuple[object, ...]:
    """A pytfe team access record's permissions; policy-mocks arrives as an extra field."""
    return (
        access.runs.value,
        access.variables.value,
        access.state_versions.value,
        access.model_extra["policy-mocks"],
        access.workspace_locking,
        access.run_tasks,
    )


def _intranet_and_payroll_admins(sandbox: Sandbox) -> tuple[str, str]:
    """A workspace and a team of the demo's initech with no access record between them."""
    workspace = _ids(sandbox, "organizations/initech/workspaces")["intranet"]
    return workspace, _ids(sandbox, "organizations/initech/teams")["payroll-admins"]


def test_team_access_reports_the_implied_permissions_of_each_level(
    tfe: TFEClient, sandbox: Sandbox
) -> None:
    workspace, team = _intranet_and_payroll_admins(sandbox)
    access = tfe.team_workspace_accesses.add(
        TeamWorkspaceAccessAddOptions(
            team_id=team, workspace_id=workspace, access=TeamWorkspaceAccessType.READ
        )
    )
    assert access.id.startswith("tws-")
    assert (access.team_id, access.workspace_id) == (team, workspace)
    for level, implied in IMPLIED.items():
        updated = tfe.team_workspace_accesses.update(
            access.id, TeamWorkspaceAccessUpdateOptions(access=TeamWorkspaceAccessType(level))
        )
        assert updated.access.value == level
        assert _permissions(updated) == implied
        assert _permissions(tfe.team_workspace_accesses.read(access.id)) == implied

    listed = {a.id: a for a in tfe.team_workspace_accesses.list(workspace)}
    assert _permissions(listed[access.id]) == IMPLIED["admin"]

    # A second record for the same team and workspace is refused.
    with pytest.raises(TFEError) as twice:
        tfe.team_workspace_accesses.add(
            TeamWorkspaceAccessAddOptions(
                team_id=team, workspace_id=workspace, access=TeamWorkspaceAccessType.READ
            )
        )
    assert twice.value.status == 422
    tfe.team_workspace_accesses.remove(access.id)
    with pytest.raises(NotFound):
        tfe.team_workspace_accesses.read(access.id)


def test_custom_team_access_and_the_custom_only_rule(tfe: TFEClient, sandbox: Sandbox) -> None:
    workspace, team = _intranet_and_payroll_admins(sandbox)
    custom = tfe.team_workspace_accesses.add(
        TeamWorkspaceAccessAddOptions(
            team_id=team,
            workspace_id=workspace,
            access=TeamWorkspaceAccessType.CUSTOM,
            runs=TeamWorkspaceRunsPermission.PLAN,
            variables=TeamWorkspaceVariablesPermission.READ,
            state_versions=TeamWorkspaceStateVersionsPermission.READ_OUTPUTS,
            run_tasks=True,
        )
    )
    assert _permissions(custom) == ("plan", "read", "read-outputs", "none", False, True)

    with pytest.raises(TFEError) as refused:
        tfe.team_workspace_accesses.update(
            custom.id,
            TeamWorkspaceAccessUpdateOptions(
                access=TeamWorkspaceAccessType.READ, runs=TeamWorkspaceRunsPermission.APPLY
            ),
        )
    assert refused.value.status == 422
    assert str(refused.value) == (
        "Runs is read-only when access level is 'read'; "
        "use the 'custom' access level to set this attribute."
    )
    assert tfe.team_workspace_accesses.read(custom.id).access == TeamWorkspaceAccessType.CUSTOM


def test_pytfe_names_the_policy_mocks_permission_sentinel_mocks(
    tfe: TFEClient, sandbox: Sandbox
) -> None:
    workspace, team = _intranet_and_payroll_admins(sandbox)
    access = tfe.team_workspace_accesses.add(
        TeamWorkspaceAccessAddOptions(
            team_id=team,
            workspace_id=workspace,
            access=TeamWorkspaceAccessType.CUSTOM,
            sentinel_mocks=TeamWorkspaceSentinelMocksPermission.READ,
        )
    )
    # pytfe sends and reads "sentinel-mocks"; the spec's attribute is "policy-mocks".
    # The sandbox keeps to the spec: the unknown attribute changes nothing, and
    # pytfe's own field stays empty while the spec's value arrives as an extra.
    assert access.sentinel_mocks is None
    assert access.model_extra == {"policy-mocks": "none"}


# -- rate limit ------------------------------------------------------------------


@pytest.mark.slow  # it waits out the sandbox's rate-limit windows, a second each
def test_pytfe_waits_out_the_rate_limit_and_gets_every_page(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with Sandbox(rate_limit=1) as limited:
        pool = _ids(limited, "organizations/acme/agent-pools")["acme-private"]
        for i in range(20):
            limited.platform.add_agent(
                pool, name=f"extra-{i:02d}", status="idle", ip_address="10.1.1.1"
            )
        with _client(limited) as impatient:
            with pytest.raises(RateLimited) as limited_error:
                for _ in range(50):
                    impatient.agent_pools.read(pool)
            assert limited_error.value.status == 429
            assert 0 < (limited_error.value.retry_after or 0) <= 1
        patient_config = TFEConfig(address=limited.address, token=limited.token, max_retries=5)
        with TFEClient(patient_config) as patient, caplog.at_level("INFO", "pytfe.transport"):
            names = [a.name for a in patient.agents.list(pool, AgentListOptions(page_size=9))]
        assert len(names) == 27 and len(set(names)) == 27
        retried = [r for r in caplog.records if "status=429" in r.getMessage()]
        assert retried, "the list never met the limit, so the retry was not exercised"


def test_a_member_sees_only_its_own_teams_access_and_changes_nothing(sandbox: Sandbox) -> None:
    workspace = _ids(sandbox, "organizations/acme/workspaces")["web-frontend"]
    teams = {v: k for k, v in _ids(sandbox, "organizations/acme/teams").items()}
    with _client(sandbox) as owner:
        everyone = {teams[a.team_id] for a in owner.team_workspace_accesses.list(workspace)}
    assert everyone == {"developers", "readers", "contractors"}
    member_config = TFEConfig(address=sandbox.address, token="demo-member-bob", max_retries=0)
    with TFEClient(member_config) as bob:
        records = list(bob.team_workspace_accesses.list(workspace))
        # Bob is in developers, readers and planners; contractors is not his.
        assert {teams[a.team_id] for a in records} == {"developers", "readers"}
        with pytest.raises(NotFound):
            bob.team_workspace_accesses.update(
                records[0].id,
                TeamWorkspaceAccessUpdateOptions(access=TeamWorkspaceAccessType.ADMIN),
            )
    with _client(sandbox) as owner:
        assert owner.team_workspace_accesses.read(records[0].id).access == records[0].access


def test_a_workspace_admin_changes_its_workspaces_team_access_with_pytfe(sandbox: Sandbox) -> None:
    workspace = _ids(sandbox, "organizations/acme/workspaces")["networking"]
    readers = _ids(sandbox, "organizations/acme/teams")["readers"]
    admin_config = TFEConfig(address=sandbox.address, token="demo-member-alice", max_retries=0)
    with TFEClient(admin_config) as alice:  # platform-admins has admin on networking
        added = alice.team_workspace_accesses.add(
            TeamWorkspaceAccessAddOptions(
                access=TeamWorkspaceAccessType.READ, team_id=readers, workspace_id=workspace
            )
        )
        changed = alice.team_workspace_accesses.update(
            added.id, TeamWorkspaceAccessUpdateOptions(access=TeamWorkspaceAccessType.PLAN)
        )
        assert changed.access == TeamWorkspaceAccessType.PLAN
    with _client(sandbox) as owner:
        assert owner.team_workspace_accesses.read(added.id).access == TeamWorkspaceAccessType.PLAN


def test_pytfes_status_filter_is_not_the_specs_and_lists_every_agent(
    tfe: TFEClient, sandbox: Sandbox
) -> None:
    pool_id = _ids(sandbox, "organizations/acme/agent-pools")["acme-private"]
    # pytfe sends filter[status], which the spec's agent list does not have (it
    # filters by last-ping-since only); like any unknown query it filters nothing.
    filtered = list(tfe.agents.list(pool_id, AgentListOptions(status=AgentStatus.IDLE)))
    assert len(filtered) == 7
    assert {a.status for a in filtered} == {AgentStatus.IDLE, AgentStatus.BUSY, AgentStatus.UNKNOWN}
