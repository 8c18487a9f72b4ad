"""The servers the browser tests drive: a sandbox, JupyterLab and Voila on loopback.

JupyterLab and Voila run as child processes of the test session with
``TOOLKIT_SANDBOX_ADDRESS`` naming a sandbox port; each test gets a fresh
sandbox on that port (see ``conftest.py``), so a runbook that removes agents
does not change what the next test sees.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from toolkit.sandbox import DEFAULT_TOKEN, ENV_ADDRESS, ENV_TOKEN

__all__ = ["free_port", "start_jupyter", "start_voila", "stop", "lab_settings"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(sandbox_port: int, home: Path) -> dict[str, str]:
    # The kernels inherit this: the runbooks' connect_*(sandbox=True) reach the
    # test's sandbox. Jupyter's own state goes to the test's temporary folders.
    return {
        **os.environ,
        ENV_ADDRESS: f"http://127.0.0.1:{sandbox_port}",
        ENV_TOKEN: DEFAULT_TOKEN,
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "IPYTHONDIR": str(home / "ipython"),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
    }


def lab_settings(folder: Path) -> Path:
    """A user-settings folder: no news pop-up, and widget state saved with the notebook.

    Saving the widget state is on so that the saved-notebook check covers it.
    """
    settings = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
        "@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings": {"saveState": True},
    }
    for name, value in settings.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    return folder


def _wait_http(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"{url} exited with {process.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer in {timeout:g}s:\n{log.read_text()[-3000:]}")
        time.sleep(0.25)


def start_jupyter(root: Path, home: Path, sandbox_port: int) -> tuple[subprocess.Popen[bytes], str]:
    """JupyterLab on loopback serving ``root``: no token, temporary settings and workspaces."""
    port = free_port()
    log = home / "jupyterlab.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        "--ServerApp.disable_check_xsrf=True",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={lab_settings(home / 'settings')}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--LabApp.expose_app_in_browser=True",
        "--LabApp.extension_manager=readonly",
        "--ServerApp.allow_root=True",  # CI runs as root
    ]
    process = subprocess.Popen(
        command, env=_env(sandbox_port, home), stdout=log.open("wb"), stderr=subprocess.STDOUT
    )
    base = f"http://127.0.0.1:{port}"
    _wait_http(f"{base}/api/status", process, log, 90)
    return process, base


def start_voila(
    notebook: Path, home: Path, sandbox_port: int
) -> tuple[subprocess.Popen[bytes], str]:
    """Voila serving one notebook as an app (no code cells) on loopback."""
    port = free_port()
    log = home / "voila.log"
    command = [
        sys.executable,
        "-m",
        "voila",
        str(notebook),
        "--no-browser",
        "--Voila.ip=127.0.0.1",
        f"--port={port}",
    ]
    process = subprocess.Popen(
        command,
        cwd=notebook.parent,
        env=_env(sandbox_port, home),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    _wait_http(f"{base}/voila/static/voila.js", process, log, 90)
    return process, base


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a server this session started: SIGTERM, then SIGKILL if it lingers."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
