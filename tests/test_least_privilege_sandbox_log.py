"""Least privilege over the log the sandbox's own file audit device wrote: its entries carry
what the review reads, as OpenBao 2.7 logs them (tests/data/openbao-2.7.2-audit.log), and
the review agrees with every logged outcome (as tests/real/test_least_privilege.py proves
on OpenBao)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolkit import InputError, SecretsClient, least_privilege
from toolkit.sandbox import Sandbox

SAMPLE = Path(__file__).parent / "data" / "openbao-2.7.2-audit.log"
# Creates database roles, never updates them: the second write of one is refused.
ROLE_MAKER = 'path "database/roles/*" { capabilities = ["create", "read"] }\n'
ROLE = {"db_name": "orders-postgres", "creation_statements": ["CREATE ROLE x;"]}


@dataclass
class World:
    sandbox: Sandbox
    client: SecretsClient
    log: Path
    entries: list[dict[str, Any]]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """The demo principals' traffic, and a user who creates a database role then is
    refused its update: create and update resolved, one allowed and one denied."""
    audit = tmp_path_factory.mktemp("audit") / "audit.log"
    with Sandbox(audit_file=str(audit)) as sb, SecretsClient(sb.address, sb.token) as client:
        log = least_privilege.sandbox_demo_traffic(client)
        with httpx.Client(base_url=f"{sb.address}/v1", timeout=10) as api:
            root = {"X-Vault-Token": sb.token}
            api.put("/sys/policies/acl/role-maker", json={"policy": ROLE_MAKER}, headers=root)
            made = api.post("/auth/userpass/users/rita", json={
                "password": "rita-pass-7", "token_policies": ["role-maker"]}, headers=root)  # fmt: skip
            assert made.is_success, made.text
            login = api.post("/auth/userpass/login/rita", json={"password": "rita-pass-7"})
            rita = {"X-Vault-Token": login.json()["auth"]["client_token"]}
            assert api.post("/database/roles/rita-role", json=ROLE, headers=rita).is_success
            assert api.post("/database/roles/rita-role", json=ROLE, headers=rita).status_code == 403
        entries = [json.loads(line) for line in log.read_text().splitlines()]
        yield World(sb, client, log, entries)


def _requests(entries: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    return [e for e in entries if e["type"] == "request" and e["request"]["path"] == path]


def test_the_runbook_finds_the_log_the_sandbox_writes_through_sys_audit(world: World) -> None:
    assert world.log == Path(world.sandbox.options.audit_file or "")
    assert _requests(world.entries, "sys/policies/acl/team-access")


def test_a_server_without_a_file_audit_device_is_refused_with_what_to_do() -> None:
    with (
        Sandbox(demo=False) as sb,
        SecretsClient(sb.address, sb.token) as client,
        pytest.raises(InputError, match="--audit-file"),
    ):
        least_privilege.sandbox_demo_traffic(client)


def test_the_sandboxs_entries_carry_what_least_privilege_reads_as_openbao_logs_it(
    world: World,
) -> None:
    sample = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    results = [(e, e["auth"].get("policy_results", {})) for e in sample if e["type"] == "request"]
    real_allowed = next(e for e, r in results if e["auth"].get("entity_id") and r.get("allowed"))
    real_denied = next(e for e, r in results if r.get("allowed") is False)
    created, refused = _requests(world.entries, "database/roles/rita-role")
    # Create and update resolved, as OpenBao resolves them before logging.
    assert (created["request"]["operation"], refused["request"]["operation"]) == (
        "create",
        "update",
    )
    assert created["auth"]["policy_results"] == {
        "allowed": True,
        "granting_policies": [{"name": "role-maker", "namespace_id": "root", "type": "acl"}],
    }
    assert refused["auth"]["policy_results"] == real_denied["auth"]["policy_results"]
    # The same fields, in the same shapes, as the real server's entries.
    assert set(real_allowed["auth"]) <= set(created["auth"]) | {"token_ttl"}
    assert set(real_allowed["request"]) - {"client_id", "mount_running_version",
                                            "mount_class"} <= set(created["request"])  # fmt: skip
    assert "error" not in created and refused["error"]
    assert created["request"]["namespace"] == {"id": "root"}
    # Identity policies and the entity, when the token has them (olivia's groups).
    olivia = next(e for e in _requests(world.entries, "sys/policies/acl/db-readers")
                  if e["auth"].get("display_name") == "userpass-olivia")  # fmt: skip
    assert olivia["auth"]["entity_id"]
    assert {"team-access", "on-call"} <= set(olivia["auth"]["identity_policies"])
    assert olivia["auth"]["token_policies"] == ["default", "operators"] or set(
        olivia["auth"]["token_policies"]
    ) == {"default", "operators"}
    assert olivia["auth"]["policy_results"]["granting_policies"] == [
        {"name": "operators", "namespace_id": "root", "type": "acl"}
    ]


def test_the_review_of_the_sandboxs_own_log_agrees_with_every_logged_outcome(
    world: World,
) -> None:
    review = least_privilege.review(world.client, world.log, days=90)
    decisions = review.decisions()
    assert review.findings().empty, review.findings().to_dict("records")
    assert decisions["agrees"].all()
    acl = decisions[decisions["decided_by"] == "acl"]
    # Every request of the demo principals and rita is decided by a rule, and the deciding
    # rule's granting policies are those the sandbox logged.
    people = acl[~acl["principal"].str.startswith("token ")]
    assert {"auth/userpass/users/olivia", "auth/userpass/users/arthur",
            "auth/ldap/users/lena.ops", "auth/approle/role/nightly-audit",
            "auth/userpass/users/rita"} <= set(people["principal"])  # fmt: skip
    allowed = people[people["allowed"]]
    assert len(allowed) >= 12
    assert (allowed["policy"] == allowed["logged_policy"]).all()
    denied = people[~people["allowed"]]
    assert set(zip(denied["path"], denied["operation"], strict=True)) == {
        ("database/creds/readonly", "read"),
        ("database/roles/rita-role", "update"),
    }
    made = acl[(acl["path"] == "database/roles/rita-role") & acl["allowed"]].iloc[0]
    assert (made["operation"], made["pattern"], made["policy"]) == (
        "create", "database/roles/*", "role-maker"
    )  # fmt: skip


def test_a_login_tokens_use_counts_for_it_though_the_log_hashes_its_accessor(
    world: World,
) -> None:
    review = least_privilege.review(world.client, world.log, days=90)
    tokens = {p.name: p.principal for p in review.principals.values() if p.kind == "token"}
    ranking = review.ranking().set_index("principal")
    assert ranking.loc[tokens["userpass-olivia"], "used"] > 0
    assert ranking.loc[tokens["token-demo-operator"], "used"] == 0
