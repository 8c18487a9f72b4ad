"""The README's first command, run headless: ``make lab`` serves the runbooks in
JupyterLab beside a sandbox and ``make ceremony`` the ceremony with Voila, and
Ctrl-C stops both. A slow suite (``make test-launch``): each starts a Jupyter
server, some 30 s on two cores."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/api/v2/ping", timeout=1).is_success
    except httpx.HTTPError:
        return False


ROOT = Path(__file__).resolve().parents[2]
# Bounds for a Jupyter server to answer and to stop on a shared two-core machine.
START_WITHIN = 120.0
STOP_WITHIN = 45.0


def _recipe(target: str, sandbox_port: int) -> tuple[dict[str, str], list[str]]:
    """The Makefile's recipe for ``target`` as (environment, command), with this venv's
    programs for ``$(BIN)``: the test runs what the README's first command runs."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"{target}:")))
    recipe = ""
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe += line.strip().removesuffix("\\") + " "
    bin_dir = str(Path(sys.executable).parent)
    recipe = recipe.replace("$(BIN)/python", sys.executable).replace("$(BIN)", bin_dir)
    recipe = recipe.replace("$(SANDBOX_PORT)", str(sandbox_port))
    words = shlex.split(recipe)
    env: dict[str, str] = {}
    while words and "=" in words[0] and not words[0].startswith(("-", "/")):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return env, words


def _get(url: str, **headers: str) -> httpx.Response | None:
    try:
        return httpx.get(url, headers=headers, timeout=5)
    except httpx.HTTPError:
        return None


def _wait_for(url: str, process: subprocess.Popen[bytes], log: Path, **headers: str) -> None:
    deadline = time.monotonic() + START_WITHIN
    while time.monotonic() < deadline:
        answer = _get(url, **headers)
        if answer is not None and answer.status_code == 200:
            return
        assert process.poll() is None, f"exited with {process.returncode}:\n{log.read_text()}"
        time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {START_WITHIN:g}s:\n{log.read_text()}")


def _as_in_a_terminal() -> None:
    """Ctrl-C's signal at its default, as in a terminal's foreground job: a shell
    without job control starts background jobs (a CI runner's, say) with SIGINT
    ignored, and the launcher and Jupyter would inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@contextlib.contextmanager
def _launched(
    command: list[str], env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """The launcher in a session of its own; stopped at the end as Ctrl-C would stop it."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_as_in_a_terminal,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's group
            try:
                process.wait(STOP_WITHIN)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                raise AssertionError(
                    f"not stopped within {STOP_WITHIN:g}s:\n{log.read_text()}"
                ) from None


def _lab_env(tmp_path: Path, extra: dict[str, str]) -> dict[str, str]:
    # Jupyter's runtime files (server info, kernels' connection files) stay in the test's folder.
    return {**os.environ, **extra, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}


def test_make_lab_serves_the_runbooks_in_jupyterlab_beside_the_sandbox_then_stops_both(
    tmp_path: Path,
) -> None:
    sandbox_port, lab_port, token = _free_port(), _free_port(), "lab-test-token"
    extra_env, command = _recipe("lab", sandbox_port)
    assert command[-3:-1] == [str(Path(sys.executable).parent / "jupyter"), "lab"]
    command += ["--no-browser", f"--port={lab_port}", "--ServerApp.port_retries=0"]
    command += [f"--IdentityProvider.token={token}"]
    log = tmp_path / "lab.log"
    lab = f"http://127.0.0.1:{lab_port}"
    auth = {"Authorization": f"token {token}"}
    with _launched(command, _lab_env(tmp_path, extra_env), log) as process:
        _wait_for(f"{lab}/api/status", process, log, **auth)
        assert _answers(sandbox_port)
        # `jupyter lab notebooks/` serves the runbooks' folder as its root.
        runbook = "01_agent_pool_health.ipynb"
        contents = _get(f"{lab}/api/contents/{runbook}", **auth)
        assert contents is not None and contents.status_code == 200
        assert contents.json()["type"] == "notebook"
        assert contents.json()["content"]["cells"]
        page = _get(f"{lab}/lab/tree/{runbook}", **auth)
        assert page is not None and page.status_code == 200 and "JupyterLab" in page.text
    output = log.read_text()
    assert process.returncode == 130, output
    assert not _answers(sandbox_port)
    assert _get(f"{lab}/api/status", **auth) is None
    said_root = "Running as root: passing --allow-root" in output
    assert said_root == (os.geteuid() == 0)


def test_make_ceremony_serves_the_ceremony_with_voila_beside_the_sandbox_then_stops_both(
    tmp_path: Path,
) -> None:
    sandbox_port, voila_port = _free_port(), _free_port()
    extra_env, command = _recipe("ceremony", sandbox_port)
    assert Path(command[-2]).name == "voila"
    command += ["--no-browser", f"--port={voila_port}"]
    log = tmp_path / "voila.log"
    voila = f"http://127.0.0.1:{voila_port}"
    with _launched(command, _lab_env(tmp_path, extra_env), log) as process:
        _wait_for(f"{voila}/", process, log)
        assert _answers(sandbox_port)
    output = log.read_text()
    assert process.returncode == 130, output
    assert not _answers(sandbox_port)
    assert _get(f"{voila}/") is None
    # Voila runs as root without a flag, and the launcher gives it none.
    assert "--allow-root" not in output
