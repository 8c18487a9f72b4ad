"""``python -m toolkit.sandbox.lab``: a command run beside a sandbox."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from toolkit.sandbox import DEFAULT_TOKEN, Sandbox
from toolkit.sandbox.lab import needs_allow_root

PRINT_ENV = (
    "import json, os, httpx; "
    "a = os.environ['TOOLKIT_SANDBOX_ADDRESS']; t = os.environ['TOOLKIT_SANDBOX_TOKEN']; "
    "r = httpx.get(a + '/api/v2/ping', headers={'Authorization': 'Bearer ' + t}); "
    "print(json.dumps({'address': a, 'token': t, 'ping_ok': r.is_success}))"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _lab(port: int, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolkit.sandbox.lab", "--port", str(port), "--", *command],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/v2/ping", timeout=1).is_success
    except httpx.HTTPError:
        return False


@pytest.mark.slow
def test_the_command_sees_a_sandbox_that_answers_and_it_stops_afterwards() -> None:
    port = _free_port()
    done = _lab(port, sys.executable, "-c", PRINT_ENV)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "address": f"http://127.0.0.1:{port}",
        "token": DEFAULT_TOKEN,
        "ping_ok": True,
    }
    assert not _answers(port)


@pytest.mark.slow
def test_the_command_exit_status_is_passed_on() -> None:
    done = _lab(_free_port(), sys.executable, "-c", "raise SystemExit(3)")
    assert done.returncode == 3


@pytest.mark.slow
def test_a_sandbox_already_serving_on_the_port_is_reused_and_left_running(
    sandbox: Sandbox,
) -> None:
    port = int(sandbox.address.rsplit(":", 1)[1])
    done = _lab(port, sys.executable, "-c", PRINT_ENV)
    assert done.returncode == 0, done.stderr
    assert "Reusing the sandbox" in done.stdout
    assert json.loads(done.stdout.strip().splitlines()[-1])["address"] == sandbox.address
    assert _answers(port)


@pytest.mark.slow
def test_without_a_command_it_refuses_with_a_usage_error() -> None:
    done = _lab(_free_port())
    assert done.returncode == 2
    assert "command" in done.stderr


@pytest.mark.slow
def test_a_port_taken_by_another_program_is_refused_naming_sandbox_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        done = _lab(port, sys.executable, "-c", "print('ran')")
    assert done.returncode == 1
    assert "ran" not in done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert f"port {port} is taken" in line and "SANDBOX_PORT" in line


@pytest.mark.parametrize(
    ("command", "root", "expected"),
    [
        (["/venv/bin/jupyter", "lab", "notebooks/"], True, True),
        (["jupyter-lab"], True, True),
        (["python3", "-m", "jupyterlab"], True, True),
        (["python", "-m", "jupyter", "notebook"], True, True),
        (["/venv/bin/jupyter", "lab", "notebooks/"], False, False),
        (["jupyter", "lab", "--allow-root"], True, False),
        (["/venv/bin/voila", "notebooks/04_rekey_ceremony.ipynb"], True, False),
        (["jupyter", "nbconvert", "x.ipynb"], True, False),
        ([sys.executable, "-c", "pass"], True, False),
    ],
)
def test_allow_root_is_added_only_for_a_jupyter_server_run_as_root(
    command: list[str], root: bool, expected: bool
) -> None:
    assert needs_allow_root(command, root=root) is expected
