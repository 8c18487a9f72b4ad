"""Progress bars over the operations that walk many records."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit import PlatformClient
from toolkit._progress import progress
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient


def bar_lines(err: str) -> list[str]:
    return [line for line in re.split(r"[\r\n]+", err) if line.strip()]


def test_a_bar_counts_every_item_against_the_total(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(progress(range(7), desc="walking")) == list(range(7))
    last = bar_lines(capsys.readouterr().err)[-1]
    assert last.startswith("walking: 100%") and "7/7" in last


@pytest.mark.slow
def test_a_disabled_bar_prints_nothing_and_does_not_load_tqdm() -> None:
    code = (
        "import sys\n"
        "from toolkit._progress import progress\n"
        "assert list(progress(iter([1, 2]), desc='x', enabled=False)) == [1, 2]\n"
        "assert 'tqdm' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    with Sandbox() as sb:
        yield sb


def test_the_lease_walk_shows_a_bar_over_its_lookups(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    with SecretsClient(sandbox.address, sandbox.token) as client:
        quiet = client.leases.leases_by_mount(mounts=["broker/"])
        assert capsys.readouterr().err == ""
        shown = client.leases.leases_by_mount(mounts=["broker/"], show_progress=True)
    last = bar_lines(capsys.readouterr().err)[-1]
    assert len(shown) == len(quiet) > 0
    assert last.startswith("looking up leases: 100%") and f"{len(shown)}/{len(shown)}" in last


def test_reading_every_pools_agents_shows_a_bar_over_the_pools(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    with PlatformClient(sandbox.address, sandbox.token) as client:
        pools = len(client.agent_pools.pools_frame("acme"))
        client.agent_pools.agents_by_status("acme")
        assert capsys.readouterr().err == ""
        client.agent_pools.agents_by_status("acme", show_progress=True)
    last = bar_lines(capsys.readouterr().err)[-1]
    assert last.startswith("reading agents: 100%") and f"{pools}/{pools}" in last


def test_bulk_renewal_shows_a_bar_and_a_dry_run_shows_none(
    sandbox: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    with SecretsClient(sandbox.address, sandbox.token) as client:
        leases = client.leases.leases_by_mount(mounts=["broker/"])
        ids = list(leases[leases["renewable"].astype(bool)].index[:3])
        assert len(ids) == 3
        client.leases.renew_leases(ids, 60, dry_run=True)
        assert capsys.readouterr().err == ""
        client.leases.renew_leases(ids, 60, dry_run=False)
    last = bar_lines(capsys.readouterr().err)[-1]
    assert last.startswith("renew leases: 100%") and f"{len(ids)}/{len(ids)}" in last


@pytest.mark.slow  # it starts a kernel
def test_a_bar_in_a_notebook_leaves_a_line_saying_what_was_done(tmp_path: Path) -> None:
    # The bar's saved text is its first state ("0%| | 0/4"); a reader with no kernel
    # (GitHub, nbviewer) must still learn how much was done.
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "from toolkit._progress import progress\n"
            "done = [n for n in progress(range(4), desc='walking')]\n"
            "for n in progress(range(5), desc='stopping early'):\n"
            "    if n == 2:\n"
            "        break\n"
        )
    ]
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    printed = "".join(
        o.get("text", "") for o in notebook.cells[0].outputs if o["output_type"] == "stream"
    )
    assert printed.splitlines() == ["walking: 4 of 4 done", "stopping early: 2 of 5 done"]


def test_a_bar_outside_a_notebook_prints_no_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(progress(range(3), desc="walking")) == [0, 1, 2]
    assert capsys.readouterr().out == ""
