"""A fleet run over a real OpenBao, a sandbox in its own process and two broken targets,
locally and on a Dask cluster of processes: the same results either way."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fleet.test_fleet import lease_audit_in_a_mistyped_namespace
from tests.sandbox._process import address_of, start
from tests.servers.openbao import OpenBao
from toolkit.fleet import parse_targets, run_fleet

PROBE = Path(__file__).parents[1] / "fleet" / "probe.ipynb"
SANDBOX_TOKEN = "fleet-sandbox-token"


@pytest.fixture(scope="module")
def sandbox_process() -> Iterator[str]:
    process, lines = start("--token", SANDBOX_TOKEN)
    try:
        yield address_of(lines)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def _refused_address() -> str:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def targets(bao: OpenBao, sandbox_process: str, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    # Set before any worker starts: each worker resolves credentials from its own environment.
    monkeypatch.setenv("FLEET_BAO_TOKEN", bao.token)
    monkeypatch.setenv("FLEET_SANDBOX_TOKEN", SANDBOX_TOKEN)
    monkeypatch.setenv("FLEET_WRONG_TOKEN", "s.not-a-real-token")
    return parse_targets(
        f"""
[[target]]
name = "openbao"
kind = "secrets"
address = "{bao.address}"
token_env = "FLEET_BAO_TOKEN"

[[target]]
name = "sandbox"
kind = "secrets"
address = "{sandbox_process}"
token_env = "FLEET_SANDBOX_TOKEN"

[[target]]
name = "refuses-the-token"
kind = "secrets"
address = "{bao.address}"
token_env = "FLEET_WRONG_TOKEN"

[[target]]
name = "down"
kind = "secrets"
address = "{_refused_address()}"
token_env = "FLEET_BAO_TOKEN"
"""
    )


def _outcome(run: Any) -> list[tuple[Any, ...]]:
    return [
        (r["name"], r["status"], (r["error"] or "").split(":")[0], r["summary"])
        for r in run.results
    ]


def test_a_fleet_on_dask_gives_what_a_local_run_gives(
    targets: list[Any], tmp_path: Path, bao: OpenBao
) -> None:
    distributed = pytest.importorskip("distributed")
    local = run_fleet(PROBE, targets, tmp_path / "local", parallel=2, show_progress=False)
    assert _outcome(local) == [
        ("openbao", "passed", "", {"sealed": False, "policies": 1}),
        ("sandbox", "passed", "", {"sealed": False, "policies": 1}),
        ("refuses-the-token", "failed", "TokenRefused", {}),  # refused, not a missing permission
        ("down", "failed", "ConnectError", {}),
    ]
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        on_dask = run_fleet(PROBE, targets, tmp_path / "dask", dask=client, show_progress=False)
    assert _outcome(on_dask) == _outcome(local)
    for name in ("openbao", "sandbox"):
        local_csv = tmp_path / "local" / name / "evidence" / "evidence-policies.csv"
        dask_csv = tmp_path / "dask" / name / "evidence" / "evidence-policies.csv"
        assert local_csv.read_text() == dask_csv.read_text()
    for path in (tmp_path / "dask").rglob("*"):
        if path.is_file():
            blob = path.read_bytes()
            assert bao.token.encode() not in blob and SANDBOX_TOKEN.encode() not in blob, path


def test_the_command_hands_a_fleet_to_a_dask_scheduler_by_address(
    targets: list[Any], tmp_path: Path
) -> None:
    distributed = pytest.importorskip("distributed")
    toml = tmp_path / "targets.toml"
    toml.write_text(
        "\n".join(
            f'[[target]]\nname = "{t.name}"\nkind = "{t.kind}"\naddress = "{t.address}"\n'
            f'token_env = "{t.token_env}"\n'
            for t in targets[:2]
        )
    )
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "toolkit",
                "fleet",
                str(PROBE),
                "--targets",
                str(toml),
                "--out",
                str(tmp_path / "out"),
                "--dask",
                cluster.scheduler_address,
                "--no-progress",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "0 failed, 0 incomplete, 2 passed, 0 skipped" in done.stdout
    assert (tmp_path / "out" / "index.html").is_file()


def test_an_openbao_target_with_a_mistyped_namespace_is_never_passed(
    bao: OpenBao, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_BAO_TOKEN", bao.token)
    error = lease_audit_in_a_mistyped_namespace(bao.address, "FLEET_BAO_TOKEN", tmp_path / "o")
    assert "namespace 'nope'" in error, error
