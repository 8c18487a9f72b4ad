"""The runbooks run headless with papermill against a sandbox, and leak nothing."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import papermill
import pytest

from tests._runbooks import NOTEBOOKS, RUNBOOKS, run_runbook
from toolkit import PlatformClient, history
from toolkit._shipped import runbooks
from toolkit.drift import Snapshots
from toolkit.sandbox import ENV_ADDRESS, ENV_TOKEN, Sandbox

REHEARSALS = sorted(p.name for p in (NOTEBOOKS / "rehearsals").glob("*.ipynb"))
# The ceremony is not an audit: it files nothing.
UNFILED = {"04_rekey_ceremony"}
# Sensitive values of the demo data set: stored by the sandbox, never shown.
DEMO_SECRETS = ["https://hooks.example.invalid/demo", "demo-cost-api-key"]


@pytest.fixture
def private_sandbox(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Sandbox]:
    """A demo sandbox with a random token, named to the kernel through the environment;
    its audit device writes a file, as binder/start's and make lab's do."""
    audit = tmp_path_factory.mktemp("audit") / "audit.log"
    with Sandbox(token=f"tok-{secrets.token_hex(16)}", audit_file=str(audit)) as sandbox:
        monkeypatch.setenv(ENV_ADDRESS, sandbox.address)
        monkeypatch.setenv(ENV_TOKEN, sandbox.token)
        yield sandbox


def _run(name: str, tmp_path: Path, **parameters: object) -> str:
    if name < "04":  # the platform runbooks
        parameters = {"organization": "acme", **parameters}
    notebook = run_runbook(name, tmp_path, parameters, DEMO_SECRETS, timeout=120)
    return json.dumps(notebook)


def _stored_parameter(sandbox: Sandbox, key: str) -> str:
    platform = sandbox.platform
    with platform.lock:  # the stores, read as a request reads them
        caller = platform.org_store.authenticate(sandbox.token)
        for policy_set in platform.org_store.list_policy_sets(caller, "acme"):
            for parameter in platform.parameter_store.list_parameters(caller, policy_set.id):
                if parameter.key == key:
                    return str(parameter.value)
    raise AssertionError(f"no parameter {key!r} in the sandbox")


def test_every_runbook_the_package_ships_is_run_here() -> None:
    # The package's own list (toolkit/notebooks links to notebooks/), not a copy of it.
    assert RUNBOOKS and [f.name for f in runbooks()] == RUNBOOKS


@pytest.mark.parametrize("name", RUNBOOKS)
def test_a_runbook_runs_headless_files_its_evidence_and_its_output_holds_no_secret(
    name: str, private_sandbox: Sandbox, tmp_path: Path
) -> None:
    evidence = tmp_path / "evidence"
    stem = name.removesuffix(".ipynb")
    # A runbook that files nothing declares no evidence_dir, and would refuse one.
    filing = {} if stem in UNFILED else {"evidence_dir": str(evidence)}
    text = _run(name, tmp_path, **filing)
    assert private_sandbox.token not in text
    for secret in DEMO_SECRETS:
        assert secret not in text
    assert "already running" in text  # the environment's sandbox, not one in the kernel
    if stem in UNFILED:
        assert not evidence.exists()
        return
    header = json.loads((evidence / f"{stem}.header.json").read_text())
    assert header["runbook"] == stem and header["parameters"]["target"] == "sandbox"
    filed = {p.name for p in evidence.iterdir()}
    assert {f"{stem}.html", f"{stem}.xlsx", "MANIFEST.json"} <= filed
    if "toolkit" in json.loads((NOTEBOOKS / name).read_text())["metadata"]:
        # A runbook on toolkit.runbook files its provenance: who, where, which runbook (its
        # hash), when, every parameter as applied, and what its views could see.
        source = (NOTEBOOKS / name).read_bytes()
        assert header["runbook_sha256"] == hashlib.sha256(source).hexdigest()
        assert header["os_user"] and header["host"] and header["toolkit_version"]
        assert header["started_at"] <= header["finished_at"]
        # Every view a runbook checks carries its record: the demo reads whole, never unproven.
        assert header["coverage"]["verdict"] == "complete", header["coverage"]
        # ... and names them: with none checked, "complete" would prove nothing.
        assert header["coverage"]["views"], header["coverage"]
        assert {"allow_incomplete", "evidence_dir"} <= set(header["parameters"])
        assert header["token_display_name"] or header["token_owner"]
        assert f"{stem}-coverage.csv" in filed
    manifest = json.loads((evidence / "MANIFEST.json").read_text())
    assert {e["file"] for e in manifest["files"]} == filed - {"MANIFEST.json"}
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
    assert len(Snapshots(folder).list(snapshot)) == 2  # seed and now, in the history store
    assert history.list_frames(folder) == sorted([history.AUDITS, snapshot])
    # A second run compares with the first run's snapshot: the demo change is the same, so
    # nothing changed since, and a third snapshot is kept.
    time.sleep(1.1)  # one snapshot a second
    second = _run(name, tmp_path, snapshot_dir=str(folder))
    assert "Since the last snapshot: 0 " in second and ", 0 removed, 0 changed" in second
    assert len(Snapshots(folder).list(snapshot)) == 3


def test_the_lease_audit_shows_lease_counts_that_moved_since_its_last_snapshot(
    private_sandbox: Sandbox, tmp_path: Path
) -> None:
    folder = tmp_path / "snapshots"
    first = _run("05_lease_audit.ipynb", tmp_path, snapshot_dir=str(folder))
    # The demonstration's token is one more lease under auth/token/ than the seed saw.
    assert (
        "Since the last snapshot: 0 mount/role group(s) new, 0 gone, 1 with another count" in first
    )
    assert len(Snapshots(folder).list("lease_counts")) == 2
    time.sleep(1.1)  # one snapshot a second
    second = _run("05_lease_audit.ipynb", tmp_path, snapshot_dir=str(folder))
    assert (
        "Since the last snapshot: 0 mount/role group(s) new, 0 gone, 0 with another count" in second
    )
    assert len(Snapshots(folder).list("lease_counts")) == 3


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


# -- issue 23: the mistakes operators make, each refused in one line before a request ------


def _refused(name: str, tmp_path: Path, parameters: dict[str, object]) -> str:
    """The one-line error a run stopped on, checking it stopped in the check cell."""
    with pytest.raises(papermill.PapermillExecutionError) as caught:
        run_runbook(name, tmp_path, parameters, timeout=120)
    executed = json.loads((tmp_path / Path(name).name).read_text())
    failed = [
        c
        for c in executed["cells"]
        if any(o.get("output_type") == "error" for o in c.get("outputs", []))
    ]
    assert len(failed) == 1 and "check_parameters" in "".join(failed[0]["source"])
    return f"{caught.value.ename}: {caught.value.evalue}"


def test_a_mistyped_target_with_apply_writes_nothing(
    private_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The live branch would reach this sandbox through TFE_ADDRESS: it must not be reached.
    monkeypatch.setenv("TFE_ADDRESS", private_sandbox.address)
    monkeypatch.setenv("TFE_TOKEN", private_sandbox.token)
    with PlatformClient(private_sandbox.address, private_sandbox.token) as client:
        agents = len(client.agent_pools.all_agents("acme"))
    line = _refused(
        "01_agent_pool_health.ipynb",
        tmp_path,
        {"target": "sandbx", "apply": True, "organization": "acme"},
    )
    assert "target must be 'sandbox' or 'live', not 'sandbx'" in line
    with PlatformClient(private_sandbox.address, private_sandbox.token) as client:
        assert len(client.agent_pools.all_agents("acme")) == agents


def test_a_misspelt_parameter_is_refused_naming_the_one_meant(tmp_path: Path) -> None:
    line = _refused("05_lease_audit.ipynb", tmp_path, {"soon_secnds": 60})
    assert "unknown parameter 'soon_secnds' (did you mean 'soon_seconds'?)" in line


def test_apply_yes_is_not_true(tmp_path: Path) -> None:
    line = _refused("09_database_credentials.ipynb", tmp_path, {"apply": "yes"})
    assert "the parameter apply must be True or False, not 'yes'" in line


def test_an_evidence_folder_in_use_is_refused_before_the_run(tmp_path: Path) -> None:
    used = tmp_path / "evidence"
    used.mkdir()
    (used / "MANIFEST.json").write_text("{}")
    line = _refused("07_plugin_catalog_audit.ipynb", tmp_path, {"evidence_dir": str(used)})
    assert "exists already and is not empty" in line


def test_a_demo_name_the_server_lacks_is_one_line_naming_what_it_has(tmp_path: Path) -> None:
    with pytest.raises(papermill.PapermillExecutionError) as caught:
        run_runbook("11_certificates.ipynb", tmp_path, {"role": "no-such-role"}, timeout=120)
    assert caught.value.ename == "InputError"
    assert "role = 'no-such-role': no role of that name on this server (it has: " in (
        caught.value.evalue
    )
    assert "web-server" in caught.value.evalue


def test_the_trends_count_a_finding_closed_by_an_audit_that_found_nothing(
    tmp_path: Path,
) -> None:
    import pandas as pd

    from toolkit import history, report
    from toolkit.secrets import SecretsClient

    folder = tmp_path / "history"
    counts = pd.DataFrame({"mount": ["pki/"], "role": ["web"], "count": [300]})
    finding = pd.DataFrame(
        {"severity": ["low"], "area": ["leases"], "object": ["pki/web"], "reason": ["many"]}
    )
    with Sandbox() as sandbox, SecretsClient(sandbox.address, sandbox.token) as client:
        for found in (finding, finding.iloc[0:0]):  # fixed on the second day
            header = report.header_of(client, runbook="05_lease_audit", parameters={})
            history.append(folder, {"lease_counts": counts, "findings": found}, header, target="eu")
            sandbox.clock.advance(24 * 3600)
        header = report.header_of(client, runbook="06_token_audit", parameters={})
        token = finding.assign(area="tokens", object="auth/token/root")
        history.append(folder, {"findings": token}, header, target="eu")
    evidence = tmp_path / "evidence"
    run_runbook(
        "14_trends.ipynb",
        tmp_path,
        {"history_dir": str(folder), "evidence_dir": str(evidence)},
        timeout=120,
    )
    # Section 4's live answer (the server's mounts beside the history) is checked and filed.
    header = json.loads((evidence / "14_trends.header.json").read_text())
    views = header["coverage"]["views"]
    assert any(v.startswith("sql_tables.sql: complete") for v in views), header["coverage"]
    assert (evidence / "14_trends-beside.csv").exists()
    (ages,) = evidence.glob("14_trends-finding_ages.csv")
    rows = ages.read_text().splitlines()
    # Open: the token audit's finding only; the lease audit's newest run found nothing.
    assert len(rows) == 2 and "auth/token/root" in rows[1], rows
