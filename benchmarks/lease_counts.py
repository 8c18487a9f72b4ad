"""The client side of the ``lease-counts`` scenario, in a process of its own.

    python -m benchmarks.lease_counts ADDRESS TOKEN counts|audit [--trace]

prints one JSON line: ``seconds`` (wall time of the call), ``rss_mb`` (the
process's peak resident size, after the imports and during the call) and
``baseline_mb`` (that peak before the call), ``traced_mb`` (tracemalloc's peak
during the call, with ``--trace``: slower, so timed apart), ``leases`` and
``groups``. A process of its own, so that its peak is the client's alone.

Also :func:`seed`, which fills a sandbox's lease manager directly (the
sandbox's HTTP side is not what is measured).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
import tracemalloc
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolkit.sandbox.secrets.models import SecretsService

# Engine roles the seeded leases spread over, and the share that are token leases.
ENGINE_FOLDERS = [f"database/creds/role-{i:02d}" for i in range(20)] + [
    f"broker/creds/queue-{i:02d}" for i in range(5)
]
TOKEN_SHARE = 10  # one lease in ten is an auth lease


def seed(service: SecretsService, count: int) -> None:
    """``count`` leases in ``service``: nine in ten under 25 engine roles, the rest tokens'."""
    with service.lock:
        for i in range(count):
            folder = (
                "auth/token/create"
                if i % TOKEN_SHARE == 0
                else ENGINE_FOLDERS[i % len(ENGINE_FOLDERS)]
            )
            service.leases.create(folder, ttl=3600 + i % 86400, renewable=True)


def _peak_mb() -> float:
    """This process's peak resident size, from ``VmHWM``: unlike ``ru_maxrss``, which
    Linux carries over ``execve`` from the forked parent (a benchmark runner grown
    large by earlier scenarios), it starts afresh with the new program."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lease_counts")
    parser.add_argument("address")
    parser.add_argument("token")
    parser.add_argument("what", choices=["counts", "audit"])
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args(argv)

    from toolkit.secrets import SecretsClient

    with SecretsClient(args.address, args.token, max_concurrency=8) as client:
        mounts = client.leases.list_mounts()
        baseline = _peak_mb()
        if args.trace:
            tracemalloc.start()
        started = time.perf_counter()
        result: Any
        if args.what == "counts":
            result = client.leases.lease_counts(mounts=mounts)
            leases, groups = int(result["count"].sum()), len(result)
        else:
            result = client.leases.leases_by_mount(mounts=mounts)
            leases, groups = len(result), int(result["mount"].nunique())
        seconds = time.perf_counter() - started
        traced = tracemalloc.get_traced_memory()[1] / 2**20 if args.trace else None
    print(
        json.dumps(
            {
                "seconds": seconds,
                "rss_mb": _peak_mb(),
                "baseline_mb": baseline,
                "traced_mb": traced,
                "leases": leases,
                "groups": groups,
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
