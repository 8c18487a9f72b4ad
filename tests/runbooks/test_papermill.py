"""The runbooks run headless with papermill against a sandbox, and leak nothing."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import papermill
import pytest

from tests._runbooks import NOTEBOOKS, RUNBOOKS, run_runbook
from toolkit import PlatformClient
from toolkit._runbooks import runbooks
from toolkit.sandbox import ENV_ADDRESS, ENV_TOKEN, Sandbox

REHEARSALS = sorted(p.name for p in (NOTEBOOKS / "rehearsals").glob("*.ipynb"))
# The ceremony is not an audit: it files nothing.
UNFILED = {"04_rekey_ceremony"}
# Sensitive values of the demo data set: stored by the sandbox, never shown.
DEMO_SECRETS = ["https://hooks.example.invalid/demo", "demo-cost-api-key"]


@pytest.fixture
def private_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A demo sandbox with a random token, named to the kernel through the environment."""
    with Sandbox(token=f"tok-{secrets.token_hex(16)}") as sandbox:
        monkeypatch.setenv(ENV_ADDRESS, sandbox.address)
        monkeypatch.setenv(ENV_TOKEN, sandbox.token)
        yield sandbox


def _run(name: str, tmp_path: Path, **parameters: object) -> str:
    notebook = run_runbook(
        name, tmp_path, {"organization": "acme", **parameters}, DEMO_SECRETS, timeout=120
    )
    return json.dumps(notebook)


def _stored_parameter(sandbox: Sandbox, key: str) -> str:
    caller = sandbox.platform.authenticate(sandbox.token)
    for policy_set in sandbox.platform.policy_sets(caller, "acme"):
        for parameter in sandbox.platform.parameters(caller, policy_set.id):
            if parameter.key == key:
                return str(parameter.value)
    raise AssertionError(f"no parameter {key!r} in the sandbox")


def test_every_runbook_the_package_ships_is_run_here() -> None:
    # The package's own list (toolkit/runbooks links to notebooks/), not a copy of it.
    assert RUNBOOKS and [f.name for f in runbooks()] == RUNBOOKS


@pytest.mark.parametrize("name", RUNBOOKS)
def test_a_runbook_runs_headless_files_its_evidence_and_its_output_holds_no_secret(
    name: str, private_sandbox: Sandbox, tmp_path: Path
) -> None:
    evidence = tmp_path / "evidence"
    text = _run(name, tmp_path, evidence_dir=str(evidence))
    assert private_sandbox.token not in text
    for secret in DEMO_SECRETS:
        assert secret not in text
    assert "already running" in text  # the environment's sandbox, not one in the kernel
    stem = name.removesuffix(".ipynb")
    if stem in UNFILED:
        assert not evidence.exists()
        return
    header = json.loads((evidence / f"{stem}.header.json").read_text())
    assert header["runbook"] == stem and header["parameters"]["target"] == "sandbox"
    filed = {p.name for p in evidence.iterdir()}
    assert {f"{stem}.html", f"{stem}.xlsx"} <= filed
    assert any(n.endswith(".parquet") for n in filed) and any(n.endswith(".csv") for n in filed)
    for path in evidence.iterdir():
        content = path.read_bytes()
        assert private_sandbox.token.encode() not in content, path.name
        assert not any(secret.encode() in content for secret in DEMO_SECRETS), path.name


@pytest.mark.parametrize("name", REHEARSALS)
def test_a_rehearsal_refuses_a_live_target_before_it_sends_anything(
    name: str, tmp_path: Path
) -> None:
    with pytest.raises(papermill.PapermillExecutionError, match="runs against the sandbox only"):
        run_runbook(f"rehearsals/{name}", tmp_path, {"target": "live"}, timeout=120)


def test_the_agent_runbook_cleans_up_the_sandbox_it_was_pointed_at(
    private_sandbox: Sandbox, tmp_path: Path
) -> None:
    _run("01_agent_pool_health.ipynb", tmp_path)
    with PlatformClient(private_sandbox.address, private_sandbox.token) as client:
        left = client.agent_pools.all_agents("acme")
    # runner-06 is unknown but pinged 25 minutes before the sandbox's clock: within the
    # default hour of older_than, so it is kept.
    assert sorted(left["status"]) == ["busy", "busy", "idle", "unknown"]


@pytest.mark.parametrize(
    ("name", "snapshot", "key"),
    [
        ("02_team_access_audit.ipynb", "admin_grants", "billing-api"),
        ("06_policy_review.ipynb", "sudo_paths", "incident-response"),
        ("07_plugin_catalog_audit.ipynb", "plugins", "drift-demo-plugin"),
    ],
)
def test_a_drift_runbook_shows_the_change_since_its_last_snapshot_and_keeps_a_new_one(
    name: str, snapshot: str, key: str, private_sandbox: Sandbox, tmp_path: Path
) -> None:
    folder = tmp_path / "snapshots"
    first = _run(name, tmp_path, snapshot_dir=str(folder))
    assert "Since the last snapshot: 1 " in first and ", 0 removed, 0 changed" in first
    assert key in first
    kept = sorted(p.name for p in folder.iterdir())
    assert len(kept) == 2 and all(n.startswith(f"{snapshot}-") for n in kept)  # seed and now
    # A second run compares with the first run's snapshot: the demo change is the same, so
    # nothing changed since, and a third snapshot is kept.
    time.sleep(1.1)  # one snapshot a second
    second = _run(name, tmp_path, snapshot_dir=str(folder))
    assert "Since the last snapshot: 0 " in second and ", 0 removed, 0 changed" in second
    assert len(list(folder.iterdir())) == 3


def test_the_lease_audit_shows_lease_counts_that_moved_since_its_last_snapshot(
    private_sandbox: Sandbox, tmp_path: Path
) -> None:
    folder = tmp_path / "snapshots"
    first = _run("05_lease_audit.ipynb", tmp_path, snapshot_dir=str(folder))
    # The demonstration's token is one more lease under auth/token/ than the seed saw.
    assert (
        "Since the last snapshot: 0 mount/role group(s) new, 0 gone, 1 with another count" in first
    )
    assert len(list(folder.iterdir())) == 2
    time.sleep(1.1)  # one snapshot a second
    second = _run("05_lease_audit.ipynb", tmp_path, snapshot_dir=str(folder))
    assert (
        "Since the last snapshot: 0 mount/role group(s) new, 0 gone, 0 with another count" in second
    )
    assert len(list(folder.iterdir())) == 3


def test_the_parameter_runbook_stores_a_sensitive_value_it_never_shows(
    private_sandbox: Sandbox, tmp_path: Path
) -> None:
    text = _run("03_policy_set_parameters.ipynb", tmp_path)
    stored = _stored_parameter(private_sandbox, "pagerduty_routing_key")
    assert len(stored) >= 24
    assert stored not in text
    assert _stored_parameter(private_sandbox, "owner_email") == "platform-team@example.com"


def test_the_rekey_runbook_rehearses_a_whole_ceremony_and_shows_no_share(
    private_sandbox: Sandbox, tmp_path: Path
) -> None:
    init = tmp_path / "init.json"
    private_sandbox.secrets.write_init_file(str(init))
    shares = json.loads(init.read_text())["keys"]
    text = _run("04_rekey_ceremony.ipynb", tmp_path)
    assert "old shares unseal: False; new shares unseal: True" in text
    assert "share shown in the form: False" in text
    assert not any(share in text for share in shares)
    # The rehearsal ran on its own sandbox: the one the runbook was pointed at keeps its shares.
    assert private_sandbox.secrets.seal.rebuilds_root_key([bytes.fromhex(s) for s in shares[:3]])


def test_the_secrets_audits_leave_leases_catalog_and_tokens_as_they_were(
    private_sandbox: Sandbox, tmp_path: Path
) -> None:
    service = private_sandbox.secrets
    leases, catalog = len(service.leases), len(service.plugins.entries())
    tokens = len(service.tokens.live())
    for name in ("05_lease_audit.ipynb", "06_policy_review.ipynb", "07_plugin_catalog_audit.ipynb"):
        _run(name, tmp_path)
    assert (len(service.leases), len(service.plugins.entries())) == (leases, catalog)
    assert len(service.tokens.live()) == tokens  # the scoped token revoked itself
