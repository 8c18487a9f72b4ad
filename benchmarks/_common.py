"""What every benchmark shares: where the house is, goals, timing and a sandbox process.

The scenarios (``run``, ``access``, ``fleet``, ``scale``, ``trends``,
``least_privilege``) import from here; nothing here imports a scenario, so the
benchmarks never import each other in a loop.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


# -- measuring ---------------------------------------------------------------------------


@dataclass
class Timing:
    name: str
    seconds: list[float] = field(default_factory=list)
    # CPU seconds of this process and of the servers during each run: unlike
    # wall time, they hardly move when other work shares the machine.
    client_cpu: list[float] = field(default_factory=list)
    server_cpu: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def cpu(self) -> float:
        """Median CPU seconds of client and servers together."""
        return statistics.median(
            c + s for c, s in zip(self.client_cpu, self.server_cpu, strict=True)
        )


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Goal:
    scenario: str
    text: str
    value: float
    limit: float
    higher_is_better: bool

    @property
    def met(self) -> bool:
        return self.value >= self.limit if self.higher_is_better else self.value <= self.limit


def alternate(
    contenders: dict[str, Callable[[], Any]],
    rounds: int,
    check: Callable[[str, Any], None] | None = None,
    rounds_of: dict[str, int] | None = None,
    cold: frozenset[str] = frozenset(),
    servers: Sequence[int] = (),
) -> dict[str, Timing]:
    """Run each contender once a round, rotating the order.

    Each contender runs once untimed first (connections, caches, imports), and
    ``check`` sees that result; a contender in ``cold`` (a slow one) skips the
    warm-up and ``check`` sees its first timed result instead. ``rounds_of``
    gives some contenders fewer rounds, spread over the run from the first:
    a machine that slows down midway then weighs on every contender alike.
    ``servers`` are the process ids whose CPU time is counted with this
    process's.
    """
    names = list(contenders)
    timings = {n: Timing(n) for n in names}
    for name in names:
        if name not in cold:
            result = contenders[name]()
            if check is not None:
                check(name, result)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        if rounds_of:
            order = [n for n in order if _one_of(r, rounds_of.get(n, rounds), rounds)]
        for name in order:
            cpu0 = time.process_time()
            server0 = sum(process_cpu(p) for p in servers)
            started = time.perf_counter()
            result = contenders[name]()
            timing = timings[name]
            timing.seconds.append(time.perf_counter() - started)
            timing.client_cpu.append(time.process_time() - cpu0)
            timing.server_cpu.append(sum(process_cpu(p) for p in servers) - server0)
            if check is not None and name in cold and r == 0:
                check(name, result)
        line = "  ".join(f"{n} {timings[n].seconds[-1]:.3f}s" for n in order)
        print(f"    round {r + 1}: {line}", flush=True)
    return timings


def _one_of(r: int, k: int, rounds: int) -> bool:
    """Whether round ``r`` is one of ``k`` rounds spread evenly over ``rounds`` (round 0 is)."""
    return r * k // rounds != (r - 1) * k // rounds


def show(scenario: str, timings: dict[str, Timing]) -> None:
    print(f"  {scenario}: median wall time, best, and median CPU time (client + servers)")
    for t in timings.values():
        print(
            f"    {t.name:28s} {t.median:9.3f} s  best {t.best:7.3f} s  "
            f"cpu {t.cpu:7.3f} s  (n={len(t.seconds)})"
        )


# -- servers -----------------------------------------------------------------------------


@contextmanager
def sandbox_process(
    agents: int, rate_limit: float | None = None, leases: int = 0, demo_scale: str = ""
) -> Iterator[dict[str, Any]]:
    """A sandbox in its own process with one pool of ``agents`` agents (and ``leases``,
    and the ``--demo-scale`` records asked)."""
    args = [PYTHON, "-m", "benchmarks.sandbox_server", "--agents", str(agents)]
    if leases:
        args += ["--leases", str(leases)]
    if demo_scale:
        args += ["--demo-scale", demo_scale]
    if rate_limit:
        args += ["--rate-limit", str(rate_limit)]
    process = subprocess.Popen(args, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("the benchmark sandbox did not start")
        yield {**json.loads(line), "pid": process.pid}
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def walk_then_lookup(fetch: Callable[[list[Any]], list[Any]]) -> list[Any]:
    """Every lease id level by level (``LIST``), then every lookup, with a raw fetcher."""
    level: list[str] = [""]
    ids: list[str] = []
    while level:
        answers = fetch([("LIST", f"/v1/sys/leases/lookup/{p}", None) for p in level])
        nxt: list[str] = []
        for folder, answer in zip(level, answers, strict=True):
            for key in ((answer or {}).get("data") or {}).get("keys") or []:
                (nxt if key.endswith("/") else ids).append(folder + key)
        level = nxt
    return fetch([("POST", "/v1/sys/leases/lookup", {"lease_id": i}) for i in ids])
