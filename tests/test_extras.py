"""What a client-only install can do, and the error a part without its extra gives.

Each test runs a fresh interpreter whose import system refuses the extra's libraries
(a finder at the front of ``sys.meta_path``), as if they were not installed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOK_LIBRARIES = ["ipywidgets", "matplotlib", "papermill", "jupyterlab", "ipykernel"]
SANDBOX_LIBRARIES = ["starlette", "uvicorn", "zttp"]

BLOCKER = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
"""


def _run(blocked: list[str], code: str, *args: str) -> subprocess.CompletedProcess[str]:
    program = f"BLOCKED = {set(blocked)!r}\n" + BLOCKER + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_a_form_without_the_notebook_extra_says_which_extra_to_install() -> None:
    done = _run(
        ["ipywidgets"],
        """
        try:
            from widgets import TeamAccessForm
        except ImportError as exc:
            print(type(exc).__name__, exc)
        """,
    )
    assert done.returncode == 0, done.stderr
    assert "MissingExtra" in done.stdout
    assert "ipywidgets" in done.stdout
    assert "pip install 'operator-toolkit[notebook]'" in done.stdout


@pytest.mark.slow
def test_a_chart_without_the_notebook_extra_says_which_extra_to_install() -> None:
    done = _run(
        ["matplotlib"],
        """
        for load in ("from toolkit import plots", "import toolkit; toolkit.plots"):
            try:
                exec(load)
            except ImportError as exc:
                print(exc)
        """,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert "matplotlib" in line and "pip install 'operator-toolkit[notebook]'" in line


@pytest.mark.slow
def test_the_sandbox_without_its_extra_says_which_extra_to_install() -> None:
    done = _run(
        ["starlette"],
        """
        try:
            from toolkit.sandbox import Sandbox
        except ImportError as exc:
            print(exc)
        """,
    )
    assert "pip install 'operator-toolkit[sandbox]'" in done.stdout
    assert "starlette" in done.stdout
    command = _run(
        SANDBOX_LIBRARIES,
        "import sys, toolkit.__main__ as m; raise SystemExit(m.main(sys.argv[1:]))",
        "sandbox",
        "--port",
        "0",
    )
    assert command.returncode == 2
    assert "pip install 'operator-toolkit[sandbox]'" in command.stderr
    assert "Traceback" not in command.stderr


@pytest.mark.slow
def test_a_client_only_install_reads_both_services_and_builds_frames() -> None:
    # The sandbox runs in this process; the client in an interpreter without the extras.
    from toolkit.sandbox import Sandbox

    with Sandbox() as sandbox:
        done = _run(
            NOTEBOOK_LIBRARIES + SANDBOX_LIBRARIES,
            f"""
            import sys, toolkit
            secrets = toolkit.SecretsClient({sandbox.address!r}, {sandbox.token!r})
            platform = toolkit.PlatformClient({sandbox.address!r}, {sandbox.token!r})
            leases = secrets.leases.leases_by_mount()
            pools = platform.agent_pools.pools_frame("acme")
            print(len(leases) > 0, len(pools) > 0, secrets.is_authenticated())
            print(toolkit.lease_summary(leases)["count"].sum() == len(leases))
            print(sorted(m for m in {sorted(NOTEBOOK_LIBRARIES + SANDBOX_LIBRARIES)!r}
                         if m in sys.modules))
            """,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "True", "[]"]
