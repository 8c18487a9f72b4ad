"""The secrets runbooks run headless against a real OpenBao (and PostgreSQL), pointed at it
as the README says: ``target = "live"``, ``VAULT_ADDR`` and the token in ``VAULT_TOKEN``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests._runbooks import run_runbook
from tests.real import _seed
from tests.servers.openbao import OpenBao
from tests.servers.postgres import Postgres
from toolkit.secrets import SecretsClient

from .conftest import launch

PASSWORD_POLICY = (
    'length = 32\nrule "charset" {\n  charset = "abcdefghijklmnopqrstuvwxyz0123456789"\n}\n'
)
POLICY = 'path "sys/leases/lookup/*" {\n  capabilities = ["list", "sudo"]\n}\n'
# What the policy review's step 4 expects of its scoped token: read policies, no passwords.
AUDITORS = """path "sys/policies/*" {
  capabilities = ["read", "list"]
}
path "sys/policies/password/+/generate" {
  capabilities = ["deny"]
}
"""


@pytest.fixture(scope="module")
def live(monkeypatch_module: pytest.MonkeyPatch) -> Iterator[OpenBao]:
    """A dev OpenBao of its own with what the runbooks' default parameters name, and the
    environment pointing at it."""
    with launch(OpenBao) as server:
        with SecretsClient(server.address, server.token) as client:
            client.policies.write("acl", "operators", POLICY)
            client.policies.write("acl", "auditors", AUDITORS)
            client.password_policies.write("strong-32", PASSWORD_POLICY)
        _seed.tokens(server, "runbook", 30)
        for name in ("VAULT_NAMESPACE", "BAO_ADDR", "BAO_TOKEN"):
            monkeypatch_module.delenv(name, raising=False)
        monkeypatch_module.setenv("VAULT_ADDR", server.address)
        monkeypatch_module.setenv("VAULT_TOKEN", server.token)
        yield server


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def run_with(
    name: str, tmp_path: Path, secrets: list[str], **parameters: object
) -> dict[str, object]:
    """Execute a runbook with ``target = "live"`` (and ``parameters``); no error, no secret."""
    return run_runbook(name, tmp_path, {"target": "live", **parameters}, secrets)


def test_the_lease_audit_runs_against_the_real_server(live: OpenBao, tmp_path: Path) -> None:
    notebook = run_with("05_lease_audit.ipynb", tmp_path, [live.token])
    text = json.dumps(notebook)
    assert "auth/token/" in text  # the real token leases show per mount


def test_the_policy_review_runs_against_the_real_server(live: OpenBao, tmp_path: Path) -> None:
    notebook = run_with("06_policy_review.ipynb", tmp_path, [live.token])
    assert "operators" in json.dumps(notebook)


def test_the_database_runbook_runs_against_the_real_server_and_postgres(
    live: OpenBao, postgres: Postgres, tmp_path: Path
) -> None:
    with postgres.connect() as conn:
        for statement in (
            "DROP ROLE IF EXISTS runbook_admin",
            "CREATE ROLE runbook_admin LOGIN CREATEROLE PASSWORD 'runbook-admin'",
            "DROP ROLE IF EXISTS orders_batch",
            "CREATE ROLE orders_batch LOGIN PASSWORD 'orders-initial'",
        ):
            conn.execute(statement)
    with SecretsClient(live.address, live.token) as client:
        client.enable_engine("database", "database")
        db = client.database
        db.configure_connection(
            "main",
            "postgresql-database-plugin",
            connection_url=postgres.template_url,
            username="runbook_admin",
            password="runbook-admin",
            allowed_roles="*",
        )
        db.write_role(
            "readonly", "main", [_seed.CREATE_ROLE], revocation_statements=[_seed.DROP_ROLE]
        )
        db.write_static_role("orders-batch", "main", "orders_batch", "1h")
    # With apply and both rotations named, the plan is sent: the runbook's writes work on
    # the real server (the read-only default is proven in test_runbooks_live).
    notebook = run_with(
        "09_database_credentials.ipynb",
        tmp_path,
        [live.token],
        apply=True,
        rotate_static="orders-batch",
        rotate_root_of="main",
    )
    text = json.dumps(notebook)
    assert "credential revoked: True" in text
    assert "rotated: ['orders-batch', 'main']" in text
