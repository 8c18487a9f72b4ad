"""The platform sandbox's demo data set: three organizations, a dozen workspaces.

Deterministic: ids derive from names and every time is relative to the clock's
start (``DEMO_EPOCH`` for the demo sandbox), so runbooks print the same output
on every run. docs/platform-sandbox.md lists the tokens.

- acme: pool ``acme-private`` (organization-scoped) with agents in all five
  statuses, one of them ``unknown`` for five hours and so reported ``errored``;
  teams at every access level including ``custom`` and a secret team; two
  Sentinel policy sets with plain and sensitive parameters.
- globex: pool ``globex-datacenter`` limited to two workspaces, a custom team,
  an OPA policy set (no parameters) and a Sentinel one.
- initech: no agent pool yet (room to create one under the one-pool limit).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from .models import PlatformService

__all__ = ["load_demo"]


def _ago(now: datetime, **delta: float) -> datetime:
    return now - timedelta(**delta)


def load_demo(service: PlatformService) -> None:
    """Fill ``service`` with the demo organizations, teams, pools, agents and policy sets."""
    # Written against the clock's start (DEMO_EPOCH unless the sandbox starts elsewhere),
    # not against now, so that the time start-up takes does not shift the data.
    now = service.clock.start.replace(microsecond=0)
    with service.lock:
        _acme(service, now)
        _globex(service, now)
        _initech(service, now)


# Each organization's policy sets: (name, kind, description, made this many days before
# the clock's start, its parameters as (key, value, sensitive)).
POLICY_SETS: dict[str, list[tuple[str, str, str, int, list[tuple[str, str, bool]]]]] = {
    "acme": [
        ("security-baseline", "sentinel", "Guardrails every workspace must pass", 200, [
            ("allowed_regions", "us-east-1,eu-west-1", False),
            ("max_instance_size", "m5.xlarge", False),
            ("slack_webhook", "https://hooks.example.invalid/demo", True),
        ]),
        ("cost-controls", "sentinel", "Monthly budget checks", 120, [
            ("monthly_budget_usd", "5000", False),
            ("cost_api_key", "demo-cost-api-key", True),
        ]),
    ],
    "globex": [
        ("opa-guardrails", "opa", "OPA policies (no parameters)", 50, []),
        ("tagging-rules", "sentinel", "Required resource tags", 45, [
            ("required_tags", "owner,cost-center", False),
        ]),
    ],
    "initech": [
        ("compliance", "sentinel", "SOX controls", 30, [
            ("audit_contact", "compliance@initech.example", False),
            ("sox_token", "demo-sox-token", True),
        ]),
    ],
}  # fmt: skip


def _policy_sets(service: PlatformService, org: str, now: datetime) -> None:
    for name, kind, description, days, parameters in POLICY_SETS[org]:
        created_at = _ago(now, days=days)
        ps = service.add_policy_set(
            org, name, kind=kind, description=description, created_at=created_at
        )
        for key, value, sensitive in parameters:
            service.add_parameter(ps, key, value, sensitive=sensitive)


def _agents(
    service: PlatformService, pool: str, now: datetime, agents: list[tuple[str, str, str, Any]]
) -> None:
    """Agents of ``pool``: (name, status, IP address, how long ago it last pinged)."""
    for name, status, ip, age in agents:
        service.add_agent(
            pool, name=name, status=status, ip_address=ip, last_ping_at=_ago(now, **age)
        )


def _workspaces(service: PlatformService, org: str, now: datetime, *names: str) -> dict[str, str]:
    return {
        name: service.add_workspace(org, name, created_at=_ago(now, days=300 - 20 * i))
        for i, name in enumerate(names)
    }


def _acme(service: PlatformService, now: datetime) -> None:
    service.add_organization("acme", token="demo-org-acme", created_at=_ago(now, days=400))
    ws = _workspaces(
        service,
        "acme",
        now,
        "web-frontend",
        "web-backend",
        "billing-api",
        "data-pipeline",
        "networking",
    )
    add_team = service.add_team
    add_team("acme", "owners", members=["demo-owner-olivia"], owners=True)
    developers = add_team("acme", "developers", members=["demo-member-alice", "demo-member-bob"])
    readers = add_team("acme", "readers", members=["demo-member-bob"])
    planners = add_team("acme", "planners", members=["demo-member-bob"])
    admins = add_team("acme", "platform-admins", members=["demo-member-alice"])
    security = add_team("acme", "security", members=["demo-member-alice"], secret=True)
    contractors = add_team("acme", "contractors", members=["demo-member-dave"])

    access = service.add_team_access
    access(ws["web-frontend"], developers, "write")
    access(ws["web-backend"], developers, "write")
    access(ws["web-frontend"], readers, "read")
    access(ws["billing-api"], readers, "read")
    access(ws["data-pipeline"], planners, "plan")
    access(ws["networking"], admins, "admin")
    access(ws["web-frontend"], contractors, "plan")
    access(
        ws["billing-api"],
        security,
        "custom",
        runs="read",
        variables="read",
        state_versions="read-outputs",
        policy_mocks="read",
        workspace_locking=False,
        run_tasks=True,
    )

    pool = service.add_pool("acme", "acme-private", created_at=_ago(now, days=90))
    for name in ("web-backend", "billing-api"):
        service.assign_workspace_pool(ws[name], pool)
    _agents(service, pool, now, [
        ("runner-01", "idle", "10.0.1.11", {"seconds": 30}),
        ("runner-02", "busy", "10.0.1.12", {"seconds": 15}),
        ("runner-03", "busy", "10.0.1.13", {"seconds": 45}),
        ("runner-04", "exited", "10.0.1.14", {"hours": 3}),
        ("runner-05", "errored", "10.0.1.15", {"hours": 6, "minutes": 10}),
        ("runner-06", "unknown", "10.0.1.16", {"minutes": 25}),
        ("runner-07", "unknown", "10.0.1.17", {"hours": 5}),  # silent too long: errored
    ])  # fmt: skip
    _policy_sets(service, "acme", now)


def _globex(service: PlatformService, now: datetime) -> None:
    service.add_organization("globex", token="demo-org-globex", created_at=_ago(now, days=380))
    ws = _workspaces(service, "globex", now, "analytics", "reporting", "etl-jobs", "ml-training")
    service.add_team("globex", "owners", members=["demo-owner-gus"], owners=True)
    analysts = service.add_team("globex", "analysts", members=["demo-member-carol"])
    data_eng = service.add_team("globex", "data-eng", members=["demo-member-carol"])
    report_readers = service.add_team("globex", "report-readers")
    service.add_team_access(
        ws["analytics"],
        analysts,
        "custom",
        runs="plan",
        variables="write",
        state_versions="read",
        policy_mocks="none",
        workspace_locking=True,
        run_tasks=False,
    )
    service.add_team_access(ws["etl-jobs"], data_eng, "write")
    service.add_team_access(ws["reporting"], report_readers, "read")

    pool = service.add_pool(
        "globex",
        "globex-datacenter",
        organization_scoped=False,
        allowed_workspace_ids=[ws["analytics"], ws["etl-jobs"]],
        created_at=_ago(now, days=60),
    )
    service.assign_workspace_pool(ws["etl-jobs"], pool)
    _agents(service, pool, now, [
        ("dc-agent-a", "idle", "192.168.50.10", {"minutes": 1}),
        ("dc-agent-b", "unknown", "192.168.50.11", {"minutes": 40}),
        ("dc-agent-c", "exited", "192.168.50.12", {"hours": 26}),
    ])  # fmt: skip
    _policy_sets(service, "globex", now)


def _initech(service: PlatformService, now: datetime) -> None:
    service.add_organization("initech", token="demo-org-initech", created_at=_ago(now, days=365))
    ws = _workspaces(service, "initech", now, "tps-reports", "payroll", "intranet")
    service.add_team("initech", "owners", members=["demo-owner-irene"], owners=True)
    payroll = service.add_team("initech", "payroll-admins", members=["demo-member-dave"])
    everyone = service.add_team("initech", "everyone", members=["demo-member-dave"])
    service.add_team_access(ws["payroll"], payroll, "admin")
    service.add_team_access(ws["tps-reports"], everyone, "read")
    service.add_team_access(ws["intranet"], everyone, "read")
    _policy_sets(service, "initech", now)
