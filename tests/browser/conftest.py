"""Fixtures of the browser suite: Debian's Chromium driven by Playwright, JupyterLab, Voila.

Chromium comes from the system (``make system-deps``); Playwright never
downloads a browser. Without it the suite is skipped on a laptop and fails in
CI (``CI`` set), so a CI run cannot pass by skipping.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser._page import NOTEBOOKS
from tests.browser._servers import free_port, start_jupyter, start_voila, stop
from tests.servers._common import chromium_missing, system_path
from toolkit._masking import Sensitive
from toolkit.sandbox import Sandbox

CHROMIUM = Path(os.environ.get("TOOLKIT_CHROMIUM") or system_path("/usr/bin/chromium"))
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _require_chromium() -> None:
    if CHROMIUM.exists():
        return
    message = chromium_missing(CHROMIUM)
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def sandbox_port() -> int:
    """The port the servers' kernels reach the sandbox on."""
    return free_port()


@pytest.fixture
def shares_file(tmp_path: Path) -> Path:
    return tmp_path / "init.json"


@pytest.fixture
def sandbox(sandbox_port: int, shares_file: Path, tmp_path: Path) -> Iterator[Sandbox]:
    """A fresh demo sandbox on the servers' sandbox port, writing its init file; its audit
    device writes a file, as binder/start's and make lab's do (runbook 15 reads it)."""
    audit = tmp_path / "audit.log"
    with Sandbox(init_file=str(shares_file), audit_file=str(audit)).start(port=sandbox_port) as sb:
        yield sb


@pytest.fixture
def current_shares(sandbox: Sandbox, shares_file: Path) -> list[Sensitive]:
    """The sandbox's unseal shares, as ``sys/init`` hands them to the key holders."""
    keys = json.loads(shares_file.read_text())["keys"]
    return [Sensitive(k, "key share") for k in keys]


@pytest.fixture
def init_secrets(sandbox: Sandbox, shares_file: Path) -> list[str]:
    """Every secret of the init file (shares in both spellings, the root token)."""
    data: dict[str, Any] = json.loads(shares_file.read_text())
    return [*data["keys"], *data["keys_base64"], data["root_token"], sandbox.token]


@pytest.fixture(scope="session")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the runbooks for the servers, so saving in a test never edits the repository."""
    root = tmp_path_factory.mktemp("notebooks")
    for notebook in NOTEBOOKS.glob("*.ipynb"):
        shutil.copy(notebook, root / notebook.name)
    return root


@pytest.fixture(scope="session")
def lab(
    workdir: Path, sandbox_port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """JupyterLab's address (token-less, on loopback, with temporary settings and workspaces)."""
    _require_chromium()
    process, base = start_jupyter(workdir, tmp_path_factory.mktemp("jupyter"), sandbox_port)
    try:
        yield base
    finally:
        stop(process)


@pytest.fixture(scope="session")
def voila(
    workdir: Path, sandbox_port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Voila's address, serving the rekey ceremony runbook as an app."""
    _require_chromium()
    notebook = workdir / "04_rekey_ceremony.ipynb"
    process, base = start_voila(notebook, tmp_path_factory.mktemp("voila"), sandbox_port)
    try:
        yield base
    finally:
        stop(process)


@pytest.fixture(scope="session")
def browser_runtime() -> Iterator[Any]:
    _require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as runtime:
        yield runtime


@pytest.fixture
def page(browser_runtime: Any, tmp_path: Path) -> Iterator[Any]:
    """A page of a headless Chromium with a fresh user-data folder."""
    context = browser_runtime.chromium.launch_persistent_context(
        str(tmp_path / "chromium-profile"),
        executable_path=str(CHROMIUM),
        headless=True,
        args=CHROMIUM_FLAGS,
        viewport={"width": 1280, "height": 1000},
    )
    context.set_default_timeout(30_000)
    page = context.pages[0] if context.pages else context.new_page()
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def lab_kernels(lab: str) -> Iterator[str]:
    """The lab's address; every kernel a test started is shut down after it."""
    yield lab
    for kernel in httpx.get(f"{lab}/api/kernels", timeout=10).json():
        httpx.delete(f"{lab}/api/kernels/{kernel['id']}", timeout=30)
