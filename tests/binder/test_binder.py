"""The Binder folder, checked without Docker.

``repo2docker --no-build`` writes the build plan (a Dockerfile) Binder would
build; the plan must pin the Python of ``runtime.txt`` and run the steps that
install the project. Then a fresh virtual environment follows the same steps
(``requirements.txt``, ``postBuild``, ``start``) on a copy of the repository,
and every runbook passes nbval against the sandbox ``start`` launched (a fresh
one per runbook, as each Binder session gets its own).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINDER = ROOT / "binder"
SOURCES = ("binder", "notebooks", "toolkit", "widgets", "pyproject.toml", "README.md")


def runtime_version() -> str:
    text = (BINDER / "runtime.txt").read_text().strip()
    found = re.fullmatch(r"python-(\d+\.\d+)", text)
    assert found, f"runtime.txt names a Python version as python-X.Y, not {text!r}"
    return found.group(1)


@pytest.fixture(scope="module")
def build_plan() -> str:
    """The Dockerfile repo2docker would build, from a copy holding only the repository's files."""
    done = subprocess.run(
        [sys.executable, "-m", "repo2docker", "--no-build", "--no-run", "--debug", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plan = done.stdout + done.stderr
    assert "FROM " in plan, "repo2docker printed its build plan"
    return plan


def test_the_build_plan_pins_the_python_of_runtime_txt(build_plan: str) -> None:
    version = runtime_version()
    assert f"python={version}" in build_plan
    pinned = set(re.findall(r"python=(\d+\.\d+)", build_plan))
    assert pinned == {version}, pinned


def test_the_build_plan_installs_the_requirements_then_runs_post_build_and_starts_with_start(
    build_plan: str,
) -> None:
    steps = [
        'pip install --no-cache-dir -r "binder/requirements.txt"',
        "./binder/postBuild",
        'R2D_ENTRYPOINT="${REPO_DIR}/binder/start"',
    ]
    where = [build_plan.find(step) for step in steps]
    assert all(i >= 0 for i in where), dict(zip(steps, where, strict=True))
    assert where == sorted(where), "requirements, then postBuild, then the start entry point"


def test_post_build_installs_the_project_with_the_forms_and_the_sandbox() -> None:
    # [all]: the runbooks need the forms and plots ([notebook]) and binder/start the
    # sandbox ([sandbox]).
    lines = [
        line.strip()
        for line in (BINDER / "postBuild").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert any(re.search(r"pip install .*-e \"?\.\[all\]\"?", line) for line in lines), lines


def _python_of_runtime() -> str:
    """The interpreter of runtime.txt's version if this machine has one, else this one."""
    version = runtime_version()
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(
        str(p) for p in Path.home().glob(f".pyenv/versions/{version}*/bin/python{version}")
    )
    for candidate in candidates:
        if not candidate:
            continue
        probe = subprocess.run([candidate, "--version"], capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.startswith(f"Python {version}"):
            return candidate
    return sys.executable


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_fresh_environment_that_follows_the_binder_steps_runs_every_runbook(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source,
                repo / name,
                ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"),
            )
        else:
            shutil.copy(source, repo / name)
    venv = tmp_path / "venv"
    subprocess.run([_python_of_runtime(), "-m", "venv", str(venv)], check=True)
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(venv),
        "JUPYTER_DATA_DIR": str(tmp_path / "jupyter"),
    }
    env.pop("TOOLKIT_SANDBOX_ADDRESS", None)
    env.pop("PYTHONPATH", None)

    def step(*command: str, timeout: float = 900) -> None:
        failure = run(*command, timeout=timeout)
        assert failure is None, failure

    def run(*command: str, timeout: float = 900) -> str | None:
        # Its own process group: the sandbox that start leaves in the background
        # is stopped with the step.
        process = subprocess.Popen(
            command,
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            out, _ = process.communicate(timeout=timeout)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        return None if process.returncode == 0 else f"{command}:\n{out[-6000:]}"

    # Binder's steps, in its order.
    step("python", "-m", "pip", "install", "--quiet", "-r", "binder/requirements.txt")
    step("bash", "binder/postBuild")
    # The test's own tools; then each runbook under nbval beside the sandbox that start
    # launched for it: a fresh demo sandbox each, as a Binder session starts with one.
    step("python", "-m", "pip", "install", "--quiet", "pytest", "nbval")
    runbooks = sorted(p.name for p in (repo / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert runbooks
    failures: list[str] = []
    for runbook in runbooks:
        env["TOOLKIT_SANDBOX_PORT"] = str(_free_port())
        failure = run(
            "bash",
            "binder/start",
            "python",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--nbval",
            "--nbval-sanitize-with",
            "notebooks/sanitize.cfg",
            f"notebooks/{runbook}",
        )
        if failure:
            failures.append(failure)
    assert not failures, "\n\n".join(failures)


def test_the_readme_has_a_binder_badge_and_a_launch_link_opening_jupyterlab_on_the_runbooks() -> (
    None
):
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\((https://mybinder\.org/v2/gh/[^)\s]+)\)", readme)
    assert len(links) >= 2, "a badge and a launch link"
    assert "https://mybinder.org/badge_logo.svg" in readme
    for link in links:
        target = re.search(r"[?&]urlpath=([^&]+)", link)
        assert target and target.group(1) == "lab/tree/notebooks", link
    assert (ROOT / "notebooks").is_dir()


def test_start_logs_the_sandbox_to_a_private_file_that_holds_no_token(tmp_path: Path) -> None:
    from toolkit.sandbox import Sandbox

    log = tmp_path / "sandbox.log"
    log.write_text("planted before start\n")
    log.chmod(0o644)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),
        "TOOLKIT_SANDBOX_PORT": str(_free_port()),
        "TOOLKIT_SANDBOX_LOG": str(log),
    }
    env.pop("TOOLKIT_SANDBOX_ADDRESS", None)
    process = subprocess.Popen(
        ["bash", str(BINDER / "start"), "python", "-c", "print('the command ran')"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the sandbox start leaves behind is stopped with the group
    )
    try:
        out, _ = process.communicate(timeout=120)
        assert process.returncode == 0, out
        assert "the command ran" in out
        text = log.read_text()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    assert oct(log.stat().st_mode & 0o777) == oct(0o600)
    assert "Sandbox serving on" in text and "planted before start" not in text
    demo = Sandbox()
    tokens = [demo.token, *(token for token, _ in demo.describe_tokens())]
    assert len(tokens) > 5
    leaked = [token for token in tokens if token in text]
    assert not leaked, f"the log holds {len(leaked)} tokens"
