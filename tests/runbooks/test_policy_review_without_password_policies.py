"""Issue 33: the policy review runs on a server without password policies, as OpenBao
starts, and says so (it stopped on "name is empty")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._runbooks import run_runbook
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient


def test_the_policy_review_runs_live_on_a_server_with_no_password_policy_and_says_so(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SecretsClient(sandbox.address, sandbox.token) as client:
        for name in client.password_policies.list_policies():
            client.password_policies.delete(name)
        assert client.password_policies.list_policies() == []
    for name in ("VAULT_NAMESPACE", "BAO_ADDR", "BAO_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VAULT_ADDR", sandbox.address)
    monkeypatch.setenv("VAULT_TOKEN", sandbox.token)
    notebook = run_runbook(
        "06_policy_review.ipynb",
        tmp_path,
        {"target": "live", "apply": True, "evidence_dir": str(tmp_path / "evidence")},
        [sandbox.token],
        timeout=120,
    )
    text = json.dumps(notebook)
    assert "No password policy on this server (a new OpenBao has none)" in text
    assert "no password policy to generate from: the refusal is not shown" in text
    assert "had no password policy to be refused; no password policy on this server to test" in text
    header = json.loads((tmp_path / "evidence" / "06_policy_review.header.json").read_text())
    assert header["coverage"]["verdict"] == "complete"
    assert not list((tmp_path / "evidence").glob("*password_coverage*"))
