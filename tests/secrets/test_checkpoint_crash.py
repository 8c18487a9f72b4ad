"""Checkpointed scans in real processes: killed, starved of disk, two at once (issue 34)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit._durable import Locked
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

pytestmark = pytest.mark.slow

FOLDER = "database/creds/scale-0"
LEASES = 120
CHUNK = 10

_SCAN = textwrap.dedent(
    """
    import os, resource, signal, sys, time
    from toolkit.secrets import SecretsClient

    address, point, kill_at, size_limit, pause, chunk = sys.argv[1:]
    kill_at, size_limit, pause = int(kill_at), int(size_limit), float(pause)
    with SecretsClient(address, os.environ["SCAN_TOKEN"]) as client:
        seen = [0]

        def hook(response):
            seen[0] += 1
            if seen[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(pause)

        client.http.response_hooks.append(hook)
        if size_limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (size_limit, size_limit))
        scan = client.leases.scan(checkpoint=point, chunk=int(chunk))
        print(len(scan.frame()), flush=True)
    """
)


@pytest.fixture
def client(empty_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with empty_sandbox.secrets.lock:
        for i in range(LEASES):
            empty_sandbox.secrets.leases.create(FOLDER, ttl=86400, suffix=f"s{i:04d}")
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as c:
        yield c


def _start(
    sandbox: Sandbox, point: Path, *, kill_at: int = 0, size_limit: int = 0, pause: float = 0
) -> subprocess.Popen[str]:
    argv = [sys.executable, "-c", _SCAN, sandbox.address, str(point)]
    argv += [str(kill_at), str(size_limit), str(pause), str(CHUNK)]
    env = {**os.environ, "SCAN_TOKEN": sandbox.token}
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _exact(client: SecretsClient, point: Path) -> None:
    frame = client.leases.scan(checkpoint=point, chunk=CHUNK).frame()
    assert frame.index.is_unique and len(frame) == LEASES


@pytest.mark.parametrize("kill_at", [3, 8, 15, 40, 90])
def test_a_scan_killed_anywhere_resumes_to_exactly_every_lease(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path, kill_at: int
) -> None:
    point = tmp_path / "scan"
    child = _start(empty_sandbox, point, kill_at=kill_at)
    child.communicate(timeout=120)
    assert child.returncode == -9
    _exact(client, point)


def test_a_full_disk_stops_the_scan_in_one_line_and_a_rerun_is_exact(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    stopped = 0
    for limit in (300, 1_000, 2_000, 4_000, 9_000):
        point = tmp_path / f"scan{limit}"
        child = _start(empty_sandbox, point, size_limit=limit)
        _, err = child.communicate(timeout=120)
        if child.returncode != 0:
            stopped += 1
            last = err.strip().splitlines()[-1]
            assert "could not be written" in last and "OSError" not in last, err[-800:]
        _exact(client, point)
    assert stopped >= 3


def test_two_scans_on_one_checkpoint_never_mix_their_rows(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    point = tmp_path / "scan"
    first = _start(empty_sandbox, point, pause=0.01)  # a few seconds of scanning
    lock = tmp_path / "scan.lock"
    deadline = time.monotonic() + 30
    while not (lock.exists() and lock.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    with pytest.raises(Locked, match=f"in use by process {first.pid}"):
        client.leases.scan(checkpoint=point, chunk=CHUNK)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err[-800:]
    assert int(out) == LEASES
