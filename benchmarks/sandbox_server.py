"""A sandbox in a process of its own, holding a pool of ``--agents`` agents.

    python -m benchmarks.sandbox_server --agents 10000

``--leases N`` also seeds N leases in the secrets server (``benchmarks.lease_counts``).

prints one JSON line (``address``, ``token``, ``organization``, ``pool_id``)
once it listens, and serves until its standard input closes. A process of its
own so that the server does not share the benchmark client's interpreter lock.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import timedelta

from toolkit.sandbox import Sandbox
from toolkit.sandbox.platform.models import PlatformService

ORGANIZATION = "bench"
STATUSES = ("idle", "busy", "idle", "exited", "errored", "unknown")


def fill(service: PlatformService, agents: int) -> str:
    """One organization with one pool of ``agents`` agents in a fixed mix of statuses."""
    now = service.clock.now()
    service.add_organization(ORGANIZATION)
    pool_id = service.add_pool(ORGANIZATION, "bench-pool")
    for i in range(agents):
        service.add_agent(
            pool_id,
            name=f"agent-{i:05d}",
            status=STATUSES[i % len(STATUSES)],
            ip_address=f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}",
            last_ping_at=now - timedelta(seconds=i % 600),
        )
    return pool_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sandbox_server")
    parser.add_argument("--agents", type=int, default=0)
    parser.add_argument("--rate-limit", type=float, default=None)
    parser.add_argument("--leases", type=int, default=0, help="leases to seed (lease-counts)")
    parser.add_argument("--demo-scale", default="", help="generated records (benchmarks.scale)")
    args = parser.parse_args(argv)
    from toolkit.sandbox.scale import parse_scale

    scale = parse_scale(args.demo_scale) if args.demo_scale else {}
    sandbox = Sandbox(demo=False, rate_limit=args.rate_limit, demo_scale=scale)
    pool_id = fill(sandbox.platform, args.agents)
    if args.leases:
        from benchmarks.lease_counts import seed

        seed(sandbox.secrets, args.leases)
    sandbox.start()
    print(
        json.dumps(
            {
                "address": sandbox.address,
                "token": sandbox.token,
                "organization": ORGANIZATION,
                "pool_id": pool_id,
            }
        ),
        flush=True,
    )
    sys.stdin.read()
    sandbox.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
