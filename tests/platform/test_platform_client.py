"""The platform client against a real sandbox over HTTP: lists, writes, views, bulk clean-up."""

from __future__ import annotations

import time
from datetime import timedelta

import pandas as pd
import pytest

from toolkit import (
    InputError,
    NotFound,
    PlatformClient,
    PreconditionFailed,
    RetryPolicy,
    Unauthorized,
    Unprocessable,
)
from toolkit._spec.team_access import AGENT_STATUSES, IMPLIED_PERMISSIONS
from toolkit.sandbox import Sandbox


@pytest.fixture
def client(sandbox: Sandbox) -> PlatformClient:
    return PlatformClient(sandbox.address, sandbox.token)


@pytest.fixture(scope="module")
def reader(demo_sandbox: Sandbox) -> PlatformClient:
    return PlatformClient(demo_sandbox.address, demo_sandbox.token)


def pool_of(client: PlatformClient, organization: str) -> str:
    pools = client.agent_pools.pools_frame(organization)
    return str(pools.index[0])


def test_pool_list_has_stable_columns_dtypes_and_the_id_as_index(reader):
    pools = reader.agent_pools.pools_frame("acme")
    assert list(pools.columns) == [
        "name",
        "organization_scoped",
        "agent_count",
        "created_at",
        "workspace_ids",
        "allowed_workspace_ids",
    ]
    assert pools.index.name == "id"
    assert all(i.startswith("apool-") for i in pools.index)
    assert str(pools["created_at"].dtype) == "datetime64[ns, UTC]"
    assert str(pools["agent_count"].dtype) == "Int64"
    assert pools.loc[pools["name"] == "acme-private", "agent_count"].item() == 7


def test_an_organization_without_pools_gives_an_empty_frame_with_the_same_columns(reader):
    empty = reader.agent_pools.pools_frame("initech")
    assert empty.empty
    assert list(empty.columns) == list(reader.agent_pools.pools_frame("acme").columns)


def test_agents_by_status_counts_every_status_per_pool(reader):
    counts = reader.agent_pools.agents_by_status("acme")
    row = counts[counts["pool_name"] == "acme-private"].iloc[0]
    assert {s: int(row[s]) for s in AGENT_STATUSES} == {
        "idle": 1,
        "busy": 2,
        "exited": 1,
        "errored": 2,  # one errored, one unknown for five hours reads errored
        "unknown": 1,
    }
    assert int(row["total"]) == 7


def test_the_agent_views_ask_what_the_token_sees_once(demo_sandbox: Sandbox):
    """The pools frame already records whether the token sees every pool: the agent
    views built on it do not read the organization a second time."""
    with PlatformClient(demo_sandbox.address, demo_sandbox.token) as client:
        paths: list[str] = []
        client.http.response_hooks.append(lambda r: paths.append(str(r.url)))
        for view in (client.agent_pools.agents_by_status, client.agent_pools.all_agents):
            paths.clear()
            frame = view("acme")
            assert frame.attrs["coverage"]["gaps"] == []
            assert sum(p.endswith("/api/v2/organizations/acme") for p in paths) == 1, paths


def test_stale_agents_are_judged_against_the_servers_clock(reader):
    stale = reader.agent_pools.stale_agents("acme", older_than=timedelta(minutes=10))
    assert set(stale["name"]) == {"runner-04", "runner-05", "runner-06", "runner-07"}
    assert stale["silent_for"].is_monotonic_decreasing
    assert (stale["silent_for"] >= pd.Timedelta(minutes=10)).all()


def test_every_page_is_followed_and_order_is_kept(sandbox, client):
    pool = pool_of(client, "acme")
    for i in range(230):
        sandbox.platform.add_agent(pool, name=f"bulk-{i:03d}", status="idle", ip_address="10.0.0.1")
    agents = client.agent_pools.agents_frame(pool)
    assert len(agents) == 237
    assert agents.index.is_unique
    bulk = [n for n in agents["name"] if str(n).startswith("bulk-")]
    assert bulk == sorted(bulk)


def test_a_pools_agent_count_plans_its_pages_and_a_stale_count_changes_no_answer(sandbox, client):
    """A pool's ``agent_count`` says how many pages of agents to ask for with the
    first (no round trip to learn it); it is only a hint: a count grown stale in
    either direction still gives every agent and no other."""
    pool = pool_of(client, "acme")
    ids = [
        sandbox.platform.add_agent(
            pool, name=f"gone-{i:03d}", status="exited", ip_address="10.0.0.1"
        )
        for i in range(243)
    ]
    stale = client.agent_pools.pools_frame("acme")
    assert stale.loc[pool, "agent_count"] == 250  # three pages
    for agent_id in ids[:150]:
        client.agent_pools.delete_agent(agent_id)
    asked: list[str] = []
    client.http.response_hooks.append(lambda r: asked.append(str(r.url)))
    agents = client.agent_pools.all_agents("acme", pools=stale)
    assert len(agents) == 100 and agents.index.is_unique
    # Pages 2 and 3 on the stale count's word alone: one page is all the server has now.
    pages = sorted(
        int(u.split("page%5Bnumber%5D=")[1].split("&")[0]) for u in asked if "/agents?" in u
    )
    assert pages == [1, 2, 3]
    for i in range(300):
        sandbox.platform.add_agent(pool, name=f"new-{i:03d}", status="idle", ip_address="10.0.0.2")
    counts = client.agent_pools.all_agents("acme", pools=stale)
    assert len(counts) == 400 and counts.index.is_unique


def test_create_update_and_delete_a_pool(client):
    ws = client.organizations.workspaces_frame("initech")
    payroll = ws.index[ws["name"] == "payroll"][0]
    pool = client.agent_pools.create(
        "initech", "initech-runners", organization_scoped=False, allowed_workspace_ids=[payroll]
    )
    assert pool.id.startswith("apool-")
    assert pool.organization_scoped is False
    assert pool.allowed_workspace_ids == [payroll]
    # The API resets organization-scoped to true when an update leaves it out.
    updated = client.agent_pools.update(pool.id, name="initech-runners-2")
    assert (updated.name, updated.organization_scoped) == ("initech-runners-2", True)
    client.agent_pools.delete(pool.id)
    with pytest.raises(NotFound):
        client.agent_pools.read(pool.id)


def test_a_second_pool_is_refused_with_the_servers_reason(client):
    with pytest.raises(Unprocessable) as err:
        client.agent_pools.create("acme", "second-pool")
    assert "limit" in err.value.message


def test_a_bad_pool_name_is_refused_before_anything_is_sent(client):
    with pytest.raises(InputError, match="letters, numbers"):
        client.agent_pools.create("initech", "bad name!")
    assert client.agent_pools.pools_frame("initech").empty


def test_pool_list_filters_by_query_and_allowed_workspace(reader):
    assert list(reader.agent_pools.pools_frame("acme", q="PRIVATE")["name"]) == ["acme-private"]
    assert reader.agent_pools.pools_frame("acme", q="nothing-like-this").empty
    globex = reader.agent_pools.pools_frame("globex", allowed_workspace="analytics")
    assert list(globex["name"]) == ["globex-datacenter"]
    assert reader.agent_pools.pools_frame("globex", allowed_workspace="reporting").empty


def test_pool_get_can_include_the_workspaces_that_use_it(reader):
    pool = reader.agent_pools.read(pool_of(reader, "acme"), include_workspaces=True)
    assert sorted(w["name"] for w in pool.workspaces) == ["billing-api", "web-backend"]


def test_pool_list_can_include_the_workspaces_each_pool_serves(reader):
    pools = reader.agent_pools.pools_frame("acme", include="workspaces")
    assert list(pools.columns) == [*reader.agent_pools.pools_frame("acme").columns, "workspaces"]
    (row,) = pools.itertuples()
    assert sorted(row.workspaces) == ["billing-api", "web-backend"]
    # names in the order of the ids they stand for
    names = reader.organizations.workspaces_frame("acme")["name"]
    assert row.workspaces == [names[w] for w in row.workspace_ids]
    globex = reader.agent_pools.pools_frame("globex", include=["workspaces"])
    assert [list(w) for w in globex["workspaces"]] == [["etl-jobs"]]
    empty = reader.agent_pools.pools_frame("initech", include="workspaces")
    assert empty.empty and list(empty.columns) == list(pools.columns)


def test_an_include_the_pool_list_does_not_offer_is_refused_before_sending(reader):
    with pytest.raises(InputError, match="'agents' is not allowed"):
        reader.agent_pools.pools_frame("acme", include=["workspaces", "agents"])


def test_status_counts_report_total_and_matching(reader):
    counts = reader.agent_pools.status_counts("acme", q="nothing-like-this")
    assert counts == {"total": 1, "matching": 0}


def test_deleting_an_idle_agent_is_a_precondition_failure(client):
    agents = client.agent_pools.agents_frame(pool_of(client, "acme"))
    idle = agents.index[agents["status"] == "idle"][0]
    with pytest.raises(PreconditionFailed):
        client.agent_pools.delete_agent(idle)
    assert client.agent_pools.read_agent(idle).status == "idle"


def test_agent_cleanup_dry_run_changes_nothing_and_says_what_it_would_do(client):
    plan = client.agent_pools.remove_agents("acme", show_progress=False)
    assert set(plan.loc[plan["action"] == "would remove", "status"]) == {"exited", "errored"}
    # The unknown agent silent for 25 minutes is under the default hour: kept, and why.
    young = plan[plan["name"] == "runner-06"]
    assert list(young["action"]) == ["skipped"] and list(young["detail"]) == ["pinged within 1h"]
    assert set(plan.loc[plan["action"] == "skipped", "status"]) == {"idle", "busy", "unknown"}
    assert len(client.agent_pools.agents_frame(pool_of(client, "acme"))) == 7


def test_agent_cleanup_removes_the_dead_and_reports_a_412_without_stopping(sandbox, client):
    pool = pool_of(client, "acme")
    plan = client.agent_pools.remove_agents("acme", show_progress=False)
    # Between preview and removal, one agent comes back to life.
    revived = plan.index[plan["name"] == "runner-04"][0]
    sandbox.platform.set_agent_status(revived, "idle")
    result = client.agent_pools.remove_agents(
        "acme",
        dry_run=False,
        show_progress=False,
        statuses=["exited", "errored", "unknown", "idle"],
        older_than=0,
    )
    assert set(result.loc[result["action"] == "removed", "name"]) >= {"runner-05", "runner-06"}
    failed = result[result["action"] == "failed"]
    assert set(failed["name"]) == {"runner-01", "runner-04"}
    assert failed["detail"].str.startswith("412").all()
    left = client.agent_pools.agents_frame(pool)
    assert set(left["status"]) <= {"idle", "busy"}


def test_unknown_statuses_are_refused_for_cleanup(client):
    with pytest.raises(InputError, match="unknown agent status"):
        client.agent_pools.remove_agents("acme", statuses=["sleeping"])


def test_the_permissions_matrix_has_a_row_per_workspace_and_a_column_per_team(reader):
    matrix = reader.team_access.permissions_matrix("acme")
    assert list(matrix.index) == sorted(
        ["web-frontend", "web-backend", "billing-api", "data-pipeline", "networking"]
    )
    assert matrix.loc["networking", "platform-admins"] == "admin"
    assert matrix.loc["billing-api", "security"] == "custom"
    assert matrix.loc["web-frontend", "developers"] == "write"
    assert pd.isna(matrix.loc["networking", "readers"])


def test_the_long_form_expands_implied_permissions(reader):
    long = reader.team_access.permissions_long("acme")
    admin = long[
        (long["workspace_name"] == "networking") & (long["team_name"] == "platform-admins")
    ]
    assert dict(zip(admin["permission"], admin["value"], strict=True)) == {
        "runs": "apply",
        "variables": "write",
        "state_versions": "write",
        "policy_mocks": "read",
        "workspace_locking": "true",
        "run_tasks": "true",
    }
    assert admin["implied"].all()
    custom = long[long["access"] == "custom"]
    assert not custom["implied"].any()


def test_the_styled_matrix_renders_colours_per_level(reader):
    html = reader.team_access.permissions_matrix_styled("acme").to_html()
    assert "background-color" in html and "admin" in html


def test_custom_permissions_with_a_non_custom_level_are_refused_before_sending(client):
    with pytest.raises(InputError, match="custom"):
        client.team_access.create("ws-x", "team-x", "read", runs="apply")


def test_adding_and_updating_team_access_reports_implied_permissions(client):
    ws = client.organizations.workspaces_frame("acme")
    teams = client.organizations.teams_frame("acme")
    networking = ws.index[ws["name"] == "networking"][0]
    readers = teams.index[teams["name"] == "readers"][0]
    record = client.team_access.create(networking, readers, "plan")
    assert record.runs == IMPLIED_PERMISSIONS["plan"]["runs"]
    record = client.team_access.update(record.id, access="custom", runs="apply", run_tasks=True)
    assert (record.access, record.runs, record.run_tasks, record.variables) == (
        "custom",
        "apply",
        True,
        "none",
    )
    with pytest.raises(Unprocessable):
        client.team_access.create(networking, readers, "read")
    client.team_access.delete(record.id)
    assert record.id not in client.team_access.access_frame(networking).index


def test_parameters_hide_sensitive_values(client):
    sets = client.organizations.policy_sets_frame("acme")
    ps = sets.index[sets["name"] == "security-baseline"][0]
    created = client.policy_set_parameters.create(ps, "api_key", "s3cr3t-value", sensitive=True)
    assert created.value == "<hidden>"
    frame = client.policy_set_parameters.parameters_frame(ps)
    assert frame.loc[created.id, "value"] == "<hidden>"
    assert "s3cr3t-value" not in frame.to_string()
    plain = client.policy_set_parameters.create(ps, "region", "eu-west-1")
    updated = client.policy_set_parameters.update(ps, plain.id, value="eu-central-1")
    assert updated.value == "eu-central-1"
    client.policy_set_parameters.delete(ps, plain.id)
    assert plain.id not in client.policy_set_parameters.parameters_frame(ps).index


def test_a_parameters_category_can_be_sent_and_only_policy_set_is_accepted(client):
    sets = client.organizations.policy_sets_frame("acme")
    ps = sets.index[sets["name"] == "security-baseline"][0]
    plain = client.policy_set_parameters.create(ps, "zone", "a")
    kept = client.policy_set_parameters.update(ps, plain.id, value="b", category="policy-set")
    assert (kept.value, kept.category) == ("b", "policy-set")
    with pytest.raises(Unprocessable, match="category 'terraform' is not allowed"):
        client.policy_set_parameters.update(ps, plain.id, value="c", category="terraform")
    after = client.policy_set_parameters.parameters_frame(ps).loc[plain.id]
    assert (after["value"], after["category"]) == ("b", "policy-set")


def test_a_member_sees_only_its_own_teams_access(demo_sandbox):
    bob = PlatformClient(demo_sandbox.address, "demo-member-bob")
    seen = bob.team_access.organization_access("acme")
    assert set(seen["team_name"]) <= {"developers", "readers", "planners"}
    assert "security" not in set(seen["team_name"])


def test_a_bad_token_is_unauthorized(demo_sandbox):
    with pytest.raises(Unauthorized):
        PlatformClient(demo_sandbox.address, "not-a-token").organizations.organizations_frame()


@pytest.mark.slow  # it waits out the sandbox's rate-limit windows, a second each
def test_the_client_backs_off_when_the_sandbox_rate_limits_it():
    with Sandbox(rate_limit=5) as limited:
        client = PlatformClient(
            limited.address, limited.token, retry=RetryPolicy(attempts=10, backoff=0.05)
        )
        started = time.monotonic()
        for _ in range(12):
            assert client.organizations.read("acme")["name"] == "acme"
        elapsed = time.monotonic() - started
    # The limit bit (the sandbox answered 429s), and every one was waited out: 12
    # requests at 5 a second take at least two fresh windows, whatever the retries.
    assert limited.rate_limited >= 2, "the sandbox never refused a request"
    assert elapsed >= 1.9, (
        f"12 requests at 5/s done in {elapsed:.2f}s: the 429s were not waited out"
    )


def test_ping_answers(reader):
    assert reader.ping() is True


def test_ping_checks_the_token_with_an_authenticated_read(demo_sandbox):
    with pytest.raises(Unauthorized) as refused:
        PlatformClient(demo_sandbox.address, "not-a-token").ping()
    assert refused.value.status == 401 and "/organizations" in str(refused.value)
    assert "not-a-token" not in str(refused.value)
    assert PlatformClient(demo_sandbox.address, "demo-member-bob").ping() is True


def test_agent_cleanup_takes_an_age_threshold_in_seconds_or_as_a_timedelta(client):
    by_seconds = client.agent_pools.remove_agents("acme", older_than=20 * 60, show_progress=False)
    by_delta = client.agent_pools.remove_agents(
        "acme", older_than=timedelta(minutes=20), show_progress=False
    )
    assert by_seconds["action"].equals(by_delta["action"])
    assert by_seconds.loc[by_seconds["name"] == "runner-06", "action"].item() == "would remove"
    for bad in (-1, "1h", True):
        with pytest.raises(InputError, match="older_than"):
            client.agent_pools.remove_agents("acme", older_than=bad)


def test_a_planned_removal_touches_only_the_planned_agents_and_skips_changed_ones(sandbox, client):
    plan = client.agent_pools.remove_agents("acme", show_progress=False)
    ids = {name: i for i, name in plan["name"].items()}
    now = sandbox.platform.clock.now()
    sandbox.platform.set_agent_status(ids["runner-02"], "exited", now - timedelta(hours=2))
    sandbox.platform.set_agent_status(ids["runner-04"], "idle")

    result = client.agent_pools.remove_planned(plan, show_progress=False)

    left = set(client.agent_pools.agents_frame(pool_of(client, "acme"))["name"])
    assert left == {"runner-01", "runner-02", "runner-03", "runner-04", "runner-06"}
    assert result.loc[ids["runner-04"], "detail"] == (
        "status changed since the preview: exited -> idle"
    )
    assert set(result.loc[result["action"] == "removed", "name"]) == {"runner-05", "runner-07"}
    with pytest.raises(InputError, match="not a clean-up plan"):
        client.agent_pools.remove_planned(plan[["name"]])
