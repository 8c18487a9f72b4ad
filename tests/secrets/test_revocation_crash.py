"""Revocation runs killed, starved of disk and run twice at once, then run again (issue 34).

The revoking client is a real process against a sandbox in this one; the sandbox's
own counts (``revoke_requests``, ``revocations``) prove each lease was asked for
and revoked exactly once, whatever step the run was killed at.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

pytestmark = pytest.mark.slow

FOLDER = "database/creds/scale-0"
LEASES = 5
BATCH = 2
# sys/health, then a lookup and a revocation for each lease.
RESPONSES = 1 + 2 * LEASES

_RUN = textwrap.dedent(
    """
    import json, os, resource, signal, sys
    from toolkit.secrets import SecretsClient

    address, journal, ids_file, kill_at, size_limit, rate, batch = sys.argv[1:]
    kill_at, size_limit = int(kill_at), int(size_limit)
    with SecretsClient(address, os.environ["REVOKE_TOKEN"]) as client:
        seen = [0]

        def hook(response):
            seen[0] += 1
            if seen[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

        client.http.response_hooks.append(hook)
        if size_limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (size_limit, size_limit))
        ids = json.load(open(ids_file))
        frame = client.leases.revocation_plan(
            ids, rate=float(rate), batch_size=int(batch), apply=True, journal=journal
        )
        print(json.dumps(frame["outcome"].to_dict()), flush=True)
    """
)


@pytest.fixture
def client(empty_sandbox: Sandbox) -> Iterator[SecretsClient]:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as c:
        yield c


def _leases(sandbox: Sandbox, tag: str) -> list[str]:
    with sandbox.secrets.lock:
        return [
            sandbox.secrets.leases.create(FOLDER, ttl=86400, suffix=f"{tag}{i:03d}").lease_id
            for i in range(LEASES)
        ]


def _start(
    sandbox: Sandbox,
    tmp_path: Path,
    ids: list[str],
    journal: Path,
    *,
    kill_at: int = 0,
    size_limit: int = 0,
    rate: float = 1000,
    token: str | None = None,
) -> subprocess.Popen[str]:
    ids_file = tmp_path / "ids.json"
    ids_file.write_text(json.dumps(ids))
    env = {**os.environ, "REVOKE_TOKEN": token or sandbox.token}
    argv = [sys.executable, "-c", _RUN, sandbox.address, str(journal), str(ids_file)]
    argv += [str(kill_at), str(size_limit), str(rate), str(BATCH)]
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _run(sandbox: Sandbox, tmp_path: Path, ids: list[str], journal: Path, **how) -> int:
    child = _start(sandbox, tmp_path, ids, journal, **how)
    child.communicate(timeout=120)
    return child.returncode


@pytest.mark.parametrize("kill_at", range(1, RESPONSES + 1))
def test_a_run_killed_at_any_answer_then_run_again_revokes_each_lease_exactly_once(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path, kill_at: int
) -> None:
    ids = _leases(empty_sandbox, "k")
    journal = tmp_path / "journal"
    assert _run(empty_sandbox, tmp_path, ids, journal, kill_at=kill_at) == -9
    again = client.leases.revocation_plan(
        ids, rate=1000, batch_size=BATCH, apply=True, journal=journal
    )
    assert set(again["outcome"]) == {"revoked"}, again[["outcome", "detail"]]
    store = empty_sandbox.secrets.leases
    assert {i: store.revocations[i] for i in ids} == dict.fromkeys(ids, 1)
    assert {i: store.revoke_requests[i] for i in ids} == dict.fromkeys(ids, 1)


@pytest.mark.parametrize("kill_at", [4, 7, 10])
def test_a_killed_run_without_lookup_reports_unknown_outcomes_and_never_sends_twice(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path, kill_at: int
) -> None:
    ids = _leases(empty_sandbox, "n")
    client.policies.write(
        "acl", "revoke-only", 'path "sys/leases/revoke" { capabilities = ["update"] }'
    )
    token = client.http.json(
        "POST", "/auth/token/create", json={"policies": ["revoke-only"], "no_default_policy": True}
    )["auth"]["client_token"]
    journal = tmp_path / "journal"
    # Without lookups the answers are sys/health then one a revocation.
    assert _run(empty_sandbox, tmp_path, ids, journal, kill_at=kill_at - 3, token=token) == -9
    with SecretsClient(empty_sandbox.address, token) as revoker:
        again = revoker.leases.revocation_plan(
            ids, rate=1000, batch_size=BATCH, apply=True, journal=journal
        )
    store = empty_sandbox.secrets.leases
    assert all(store.revoke_requests[i] <= 1 for i in ids)
    for lease in ids:
        if store.revocations[lease] == 1:
            assert again.loc[lease, "outcome"] in {"sent, not confirmed", "outcome unknown"}
        else:
            assert again.loc[lease, "outcome"] == "outcome unknown"
    assert "outcome unknown" in set(again["outcome"]) or kill_at - 3 <= 1


def _journal_sizes(sandbox: Sandbox, client: SecretsClient, tmp_path: Path) -> int:
    """The size of a whole run's journal, measured on leases of their own."""
    ids = _leases(sandbox, "m")
    journal = tmp_path / "measure"
    client.leases.revocation_plan(ids, rate=1000, batch_size=BATCH, apply=True, journal=journal)
    return journal.stat().st_size


def test_a_full_disk_at_any_journal_write_then_a_rerun_revokes_each_lease_exactly_once(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    whole = _journal_sizes(empty_sandbox, client, tmp_path)
    store = empty_sandbox.secrets.leases
    for number, limit in enumerate(range(150, whole, max(1, whole // 12))):
        ids = _leases(empty_sandbox, f"d{number}-")
        journal = tmp_path / f"journal{number}"
        child = _start(empty_sandbox, tmp_path, ids, journal, size_limit=limit)
        out, err = child.communicate(timeout=120)
        if child.returncode == 0:
            first = json.loads(out)
            assert set(first.values()) <= {"revoked", "failed", "outcome unknown"}, first
        else:
            assert "could not be written" in err, err[-500:]
        again = client.leases.revocation_plan(
            ids, rate=1000, batch_size=BATCH, apply=True, journal=journal
        )
        assert set(again["outcome"]) == {"revoked"}, (limit, again[["outcome", "detail"]])
        assert {i: store.revocations[i] for i in ids} == dict.fromkeys(ids, 1), limit
        assert {i: store.revoke_requests[i] for i in ids} == dict.fromkeys(ids, 1), limit


def test_two_runs_on_one_journal_at_once_send_each_revocation_once(
    empty_sandbox: Sandbox, client: SecretsClient, tmp_path: Path
) -> None:
    ids = _leases(empty_sandbox, "t")
    journal = tmp_path / "journal"
    first = _start(empty_sandbox, tmp_path, ids, journal, rate=2)  # about 2 s of sending
    lock = journal.with_name("journal.lock")
    deadline = time.monotonic() + 30
    while not (lock.exists() and lock.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    (tmp_path / "second").mkdir()
    second = _start(empty_sandbox, tmp_path / "second", ids, journal)
    _, err = second.communicate(timeout=120)
    assert second.returncode != 0 and f"in use by process {first.pid}" in err
    first.communicate(timeout=120)
    assert first.returncode == 0
    store = empty_sandbox.secrets.leases
    assert {i: store.revoke_requests[i] for i in ids} == dict.fromkeys(ids, 1)
