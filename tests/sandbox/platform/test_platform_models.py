"""The platform state classes used directly, without HTTP."""

from __future__ import annotations

from datetime import timedelta

import pytest

from toolkit.sandbox import DEMO_EPOCH
from toolkit.sandbox._clock import Clock
from toolkit.sandbox.platform.demo import load_demo
from toolkit.sandbox.platform.errors import (
    LimitReached,
    PlatformError,
    RecordNotFound,
    RuleViolation,
    UnknownCaller,
)
from toolkit.sandbox.platform.models import PlatformService
from toolkit.sandbox.platform.team_access import PermissionSettings


def _service(**options) -> PlatformService:
    return PlatformService(clock=Clock(DEMO_EPOCH), admin_token="root", **options)


def _demo() -> PlatformService:
    service = _service()
    load_demo(service)
    return service


def test_the_demo_data_is_the_same_on_every_load():
    first, second = _demo(), _demo()
    root = first.org_store.authenticate("root")
    pools = [p.id for p in first.pool_store.list_pools(root, "acme")[0]]
    assert pools == [
        p.id for p in second.pool_store.list_pools(second.org_store.authenticate("root"), "acme")[0]
    ]
    agents = first.agent_store.list_agents(root, pools[0])
    assert [(a.id, a.last_ping_at) for a in agents] == [
        (a.id, a.last_ping_at)
        for a in second.agent_store.list_agents(second.org_store.authenticate("root"), pools[0])
    ]
    assert (
        len(
            [
                w
                for o in ("acme", "globex", "initech")
                for w in first.org_store.list_workspaces(root, o)
            ]
        )
        == 12
    )


def test_the_demo_has_every_access_level_and_a_secret_team():
    service = _demo()
    root = service.org_store.authenticate("root")
    levels = {
        r.access
        for org in ("acme", "globex", "initech")
        for ws in service.org_store.list_workspaces(root, org)
        for r in service.access_store.list_records(root, ws.id)
    }
    assert levels == {"read", "plan", "write", "admin", "custom"}
    assert any(t.visibility == "secret" for t in service.org_store.list_teams(root, "acme"))


def test_describe_tokens_names_every_demo_token():
    tokens = dict(_demo().describe_tokens())
    assert tokens["root"] == "owner of every organization"
    assert tokens["demo-org-acme"] == "organization token of acme"
    assert tokens["demo-owner-olivia"] == "owner of acme"
    assert "acme/security" in tokens["demo-member-alice"]
    assert "initech/payroll-admins" in tokens["demo-member-dave"]


def test_an_unknown_agent_turns_errored_two_hours_after_its_last_ping():
    service = _service()
    service.add_organization("o")
    pool = service.add_pool("o", "p")
    agent_id = service.add_agent(
        pool, name="a", status="unknown", ip_address="10.0.0.1", last_ping_at=DEMO_EPOCH
    )
    root = service.org_store.authenticate("root")
    agent = service.agent_store.get(root, agent_id)
    assert service.agent_store.status(agent) == "unknown"
    service.clock.advance(2 * 3600)
    assert service.agent_store.status(agent) == "errored"
    service.set_agent_status(agent_id, "unknown")  # a fresh ping
    assert service.agent_store.status(agent) == "unknown"
    assert agent.status_at(DEMO_EPOCH + timedelta(hours=5)) == "errored"


def test_set_agent_status_validates_and_moves_the_ping():
    service = _service()
    service.add_organization("o")
    pool = service.add_pool("o", "p")
    agent_id = service.add_agent(pool, name=None, status="idle", ip_address="10.0.0.2")
    later = DEMO_EPOCH + timedelta(minutes=3)
    service.set_agent_status(agent_id, "busy", later)
    agent = service.agent_store.get(service.org_store.authenticate("root"), agent_id)
    assert (agent.reported_status, agent.last_ping_at) == ("busy", later)
    with pytest.raises(RuleViolation) as refused:
        service.set_agent_status(agent_id, "asleep")
    assert refused.value.field == "status"
    assert agent.reported_status == "busy"


def test_the_pool_limit_is_enforced_by_the_python_api_too():
    service = _service(pool_limit=2)
    service.add_organization("o")
    service.add_pool("o", "a")
    service.add_pool("o", "b")
    with pytest.raises(LimitReached) as refused:
        service.add_pool("o", "c")
    assert "limit is 2" in str(refused.value)


def test_unknown_tokens_are_refused_with_401():
    service = _demo()
    for token in (None, "", "nope"):
        with pytest.raises(UnknownCaller):
            service.org_store.authenticate(token)


def test_tokens_and_sensitive_values_never_show_in_reprs():
    service = _demo()
    root = service.org_store.authenticate("root")
    text = repr(service) + repr(root)
    text += "".join(repr(t) for t in service.org_store.list_teams(root, "acme"))
    text += repr(service.org_store.visible(root, "acme"))
    ps = next(
        p for p in service.org_store.list_policy_sets(root, "acme") if p.name == "cost-controls"
    )
    text += "".join(repr(v) for v in service.parameter_store.list_parameters(root, ps.id))
    for secret in ("root", "demo-org-acme", "demo-member-alice", "demo-cost-api-key"):
        assert secret not in text


def test_a_refused_team_access_update_changes_nothing():
    service = _demo()
    root = service.org_store.authenticate("root")
    ws = next(w for w in service.org_store.list_workspaces(root, "acme") if w.name == "billing-api")
    record = next(r for r in service.access_store.list_records(root, ws.id) if r.access == "custom")
    before = dict(record.permissions)
    with pytest.raises(PlatformError):
        service.access_store.update(
            root, record.id, permissions=PermissionSettings(runs="apply", variables="nope")
        )
    assert record.permissions == before


def test_listing_a_pools_agents_reads_only_that_pool():
    service = _service(pool_limit=2)
    service.add_organization("o")
    small, big = service.add_pool("o", "small"), service.add_pool("o", "big")
    service.add_agent(small, name="only", status="idle", ip_address="10.0.0.1")
    for i in range(500):
        service.add_agent(big, name=f"b{i}", status="idle", ip_address="10.0.0.2")
    root = service.org_store.authenticate("root")
    assert [a.name for a in service.agent_store.list_agents(root, small)] == ["only"]
    assert len(service.pool_store.get(root, small).agents) == 1


def test_the_demo_is_written_against_the_demo_epoch_even_when_loaded_late():
    clock = Clock(DEMO_EPOCH)
    late = PlatformService(clock=clock, admin_token="root")
    clock.advance(5)  # a slow start-up between the clock starting and the demo loading
    load_demo(late)
    org = late.org_store.visible(late.org_store.authenticate("root"), "acme")
    assert org.created_at == DEMO_EPOCH - timedelta(days=400)


def test_a_demo_on_a_clock_started_elsewhere_is_relative_to_that_start():
    start = DEMO_EPOCH + timedelta(days=30)
    service = PlatformService(clock=Clock(start), admin_token="root")
    load_demo(service)
    org = service.org_store.visible(service.org_store.authenticate("root"), "acme")
    assert org.created_at == start - timedelta(days=400)


def test_seeding_a_missing_record_refuses_with_record_not_found_naming_it() -> None:
    """The seeding API refuses as the endpoints do, with the platform's typed errors
    (never a bare KeyError), and its message names what is missing."""
    service = _demo()
    ws = service.org_store.list_workspaces(service.org_store.authenticate("root"), "acme")[0].id
    team = service.org_store.list_teams(service.org_store.authenticate("root"), "acme")[0].id
    refusals = {
        "no organization 'nope'": lambda: service.add_workspace("nope", "w"),
        "no policy set 'polset-nope'": lambda: service.add_parameter("polset-nope", "k"),
        "no agent pool 'apool-nope'": lambda: service.add_agent(
            "apool-nope", name=None, status="idle", ip_address="10.0.0.1"
        ),
        "no agent 'agent-nope'": lambda: service.set_agent_status("agent-nope", "idle"),
        "no workspace 'ws-nope'": lambda: service.add_team_access("ws-nope", team, "read"),
        "no team 'team-nope'": lambda: service.add_team_access(ws, "team-nope", "read"),
        "no agent pool 'apool-nope' in organization 'acme'": lambda: service.assign_workspace_pool(
            ws, "apool-nope"
        ),
        r"no workspace 'ws-nope'\Z": lambda: service.assign_workspace_pool("ws-nope", None),
    }
    for message, seed in refusals.items():
        with pytest.raises(RecordNotFound, match=message):
            seed()


def test_seeding_a_broken_rule_refuses_with_rule_violation_naming_the_argument() -> None:
    service = _demo()
    refusals = {
        "name": lambda: service.add_organization("acme"),
        "token": lambda: service.add_organization("newco", token="demo-org-acme"),
        "members": lambda: service.add_team("acme", "x", members=["root"]),
        "kind": lambda: service.add_policy_set("acme", "p", kind="rego"),
    }
    for field, seed in refusals.items():
        with pytest.raises(RuleViolation) as refused:
            seed()
        assert refused.value.field == field
    with pytest.raises(RuleViolation, match="already exists in acme"):
        service.add_workspace(
            "acme",
            service.org_store.list_workspaces(service.org_store.authenticate("root"), "acme")[
                0
            ].name,
        )
