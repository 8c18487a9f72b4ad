"""The state file keeps every acknowledged answer, and serves one sandbox at a time.

Each test starts the sandbox as a child process (``--state``) and kills it with
SIGKILL; what an answer acknowledged must be there after a restart.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.sandbox._process import address_of, start

ROOT = "durable-root"
pytestmark = pytest.mark.slow  # every test starts sandboxes as processes


def _secrets(address: str) -> httpx.Client:
    return httpx.Client(base_url=f"{address}/v1", headers={"X-Vault-Token": ROOT}, timeout=10)


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    assert proc.wait(10) == 0


def test_a_credential_issued_by_a_get_survives_kill_9_right_after_the_answer(
    tmp_path: Path,
) -> None:
    state = tmp_path / "sandbox.db"
    proc, lines = start("--token", ROOT, "--state", str(state))
    with _secrets(address_of(lines)) as api:
        issued = api.get("/database/creds/readonly")
        assert issued.status_code == 200, issued.text
        lease_id = issued.json()["lease_id"]
    proc.send_signal(signal.SIGKILL)  # no flush, no shutdown: only what the answer waited for
    proc.wait(10)

    proc, lines = start("--state", str(state))
    try:
        with _secrets(address_of(lines)) as api:
            looked = api.put("/sys/leases/lookup", json={"lease_id": lease_id})
            assert looked.status_code == 200, looked.text
            assert looked.json()["data"]["id"] == lease_id
    finally:
        _stop(proc)


def test_a_second_sandbox_on_the_same_file_is_refused_naming_the_first(tmp_path: Path) -> None:
    state = tmp_path / "sandbox.db"
    first, lines = start("--token", ROOT, "--state", str(state))
    try:
        second = subprocess.run(
            [sys.executable, "-m", "toolkit", "sandbox", "--port", "0", "--state", str(state)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert second.returncode == 2
        assert second.stderr.count("\n") == 1, second.stderr
        assert f"process {first.pid} on host" in second.stderr
        assert "Traceback" not in second.stderr
        # The first still serves and stores: a write acknowledged now is kept.
        with _secrets(address_of(lines)) as api:
            assert (
                api.put(
                    "/sys/policies/acl/kept",
                    json={"policy": 'path "kv/*" { capabilities = ["read"] }'},
                ).status_code
                == 204
            )
    finally:
        _stop(first)
    again, lines = start("--state", str(state))  # the lock went with the first
    try:
        with _secrets(address_of(lines)) as api:
            assert api.get("/sys/policies/acl/kept").status_code == 200
    finally:
        _stop(again)


def test_the_lock_of_a_sandbox_killed_with_kill_9_is_free_again(tmp_path: Path) -> None:
    state = tmp_path / "sandbox.db"
    proc, _ = start("--token", ROOT, "--state", str(state))
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    proc, lines = start("--state", str(state))
    assert any(line.startswith("State: resumed") for line in lines)
    _stop(proc)
