"""The fleet scenario of ``make bench``: one runbook over many targets, and how it scales.

A fleet of sandboxes (20, each in its own process; 4 with ``--quick``) plus one
real OpenBao, one target that is down, one whose token is refused and one that
never answers. The fleet runs with 1, 2 and 4 runs at a time and on a 2-worker
Dask ``LocalCluster`` of processes; every run must report every target right.
The fixed cost per run (kernel start and imports) is measured in-process at
``--parallel 1`` on a two-cell notebook.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from benchmarks._common import Goal

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "tests" / "fleet" / "probe.ipynb"
TOKEN = "bench-fleet-token"


@contextmanager
def _sandbox() -> Iterator[str]:
    """A sandbox in a process of its own, as the fleet tests start one."""
    from tests.sandbox._process import address_of, start

    process, lines = start("--token", TOKEN)
    try:
        yield address_of(lines)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


@contextmanager
def _silent() -> Iterator[str]:
    """Accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def hold() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


def _refused() -> str:
    with socket.create_server(("127.0.0.1", 0)) as s:
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def _targets(sandboxes: list[str], bao: Any, slow: str) -> tuple[str, dict[str, str]]:
    blocks = [
        f'[[target]]\nname = "sandbox-{k:02d}"\nkind = "secrets"\naddress = "{a}"\n'
        'token_env = "BENCH_FLEET_SANDBOX"\n'
        for k, a in enumerate(sandboxes)
    ]
    blocks += [
        f'[[target]]\nname = "openbao"\nkind = "secrets"\naddress = "{bao.address}"\n'
        'token_env = "BENCH_FLEET_BAO"\n',
        f'[[target]]\nname = "down"\nkind = "secrets"\naddress = "{_refused()}"\n'
        'token_env = "BENCH_FLEET_BAO"\n',
        f'[[target]]\nname = "bad-token"\nkind = "secrets"\naddress = "{bao.address}"\n'
        'token_env = "BENCH_FLEET_WRONG"\n',
        f'[[target]]\nname = "slow"\nkind = "secrets"\naddress = "{slow}"\n'
        'token_env = "BENCH_FLEET_BAO"\ntimeout = 5\n',
    ]
    expected = {f"sandbox-{k:02d}": "passed" for k in range(len(sandboxes))}
    expected |= {"openbao": "passed", "down": "failed", "bad-token": "failed", "slow": "failed"}
    return "\n".join(blocks), expected


def fleet(args: argparse.Namespace, goals: list[Any]) -> None:
    from tests.servers.openbao import OpenBao
    from toolkit.fleet import Target, parse_targets, run_fleet

    count = 4 if args.quick else 20
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-fleet-") as work:
        bao = stack.enter_context(OpenBao())
        sandboxes = [stack.enter_context(_sandbox()) for _ in range(count)]
        slow = stack.enter_context(_silent())
        os.environ["BENCH_FLEET_SANDBOX"] = TOKEN
        os.environ["BENCH_FLEET_BAO"] = bao.token
        os.environ["BENCH_FLEET_WRONG"] = "s.not-a-token"
        text, expected = _targets(sandboxes, bao, slow)
        targets = parse_targets(text)
        out = Path(work)

        # Fixed cost per run: one target, in this process, a few times.
        one = [Target("fixed", "secrets", sandboxes[0], token_env="BENCH_FLEET_SANDBOX")]
        costs = []
        for k in range(3 if args.quick else 5):
            run = run_fleet(PROBE, one, out / f"fixed-{k}", show_progress=False)
            costs.append(run.results[0]["seconds"])
        fixed = statistics.median(costs)
        print(f"  fixed cost per run (kernel start, imports, two cells): {fixed:.2f} s median")
        goals.append(Goal("fleet", "fixed cost per run, seconds", fixed, 3.0, False))

        walls: dict[str, float] = {}
        right = 0
        for label, options in (
            ("parallel 1", {"parallel": 1}),
            ("parallel 2", {"parallel": 2}),
            ("parallel 4", {"parallel": 4}),
        ):
            started = time.perf_counter()
            run = run_fleet(
                PROBE, targets, out / label.replace(" ", "-"), show_progress=False, **options
            )
            walls[label] = time.perf_counter() - started
            right += _reported_right(run, expected, label)
        import distributed

        with (
            distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            client.run(lambda: None)  # workers up before the clock starts
            started = time.perf_counter()
            run = run_fleet(PROBE, targets, out / "dask", dask=client, show_progress=False)
            walls["dask, 2 workers"] = time.perf_counter() - started
            right += _reported_right(run, expected, "dask")
    base = walls["parallel 1"]
    print(f"  {len(targets)} targets ({count} sandboxes, one OpenBao, down, bad token, slow):")
    for label, wall in walls.items():
        workers = {"parallel 1": 1, "parallel 2": 2, "parallel 4": 4}.get(label, 2)
        efficiency = base / (wall * workers)
        print(
            f"    {label:16s} {wall:7.1f} s   speed-up {base / wall:4.2f}x   efficiency {efficiency:4.2f}"
        )
    goals.append(Goal("fleet", "runs that reported every target right", right, 4, True))


def _reported_right(run: Any, expected: dict[str, str], label: str) -> int:
    got = {r["name"]: r["status"] for r in run.results}
    if got != expected:
        wrong = {k: (v, expected.get(k)) for k, v in got.items() if v != expected.get(k)}
        print(f"    {label}: targets reported wrongly: {wrong}")
        return 0
    return 1


if __name__ == "__main__":
    namespace = argparse.Namespace(quick="--quick" in sys.argv)
    found: list[Any] = []
    fleet(namespace, found)
    for goal in found:
        print(goal)
