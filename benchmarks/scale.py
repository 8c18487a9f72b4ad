"""The scale scenarios of ``make bench`` (issue 27): a sandbox started with
``--demo-scale``, and each client run in a process of its own so that its peak
memory is its own.

    python -m benchmarks.scale ADDRESS TOKEN WHAT [--checkpoint PATH] [--deadline S]

prints one JSON line: ``seconds`` (wall time of the call, imports excluded),
``rss_mb`` (peak resident size), ``count`` (records found), ``interrupted``.
WHAT is ``lease-counts``, ``lease-scan``, ``lease-aiohttp``, ``token-scan``,
``token-aiohttp`` or ``cert-scan``.

Scenarios (registered in ``benchmarks.run``):

- ``scale-leases``: counts by mount and role from LIST alone under 2 s; the full
  scan with a lookup each within 1.25x of aiohttp with 16 connections; a scan
  interrupted by its deadline and run again with its checkpoint finds every
  lease and looks up only the rest; client peak under 1 GB.
- ``scale-tokens``: every accessor looked up within 1.25x of aiohttp-16, peak under 1 GB.
- ``scale-certificates``: every certificate listed (paged) and parsed in under
  4 minutes, peak under 1 GB.

Full size is 1,000,000 leases, 100,000 tokens and 200,000 certificates; the
``--quick`` and ``--report-only`` runs (``make test``) take a tenth.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import PYTHON, ROOT, Goal, sandbox_process, walk_then_lookup

GB = 1024.0


def _peak_mb() -> float:
    from benchmarks.lease_counts import _peak_mb as peak

    return peak()


def _aiohttp_leases(address: str, token: str) -> int:
    from benchmarks.raw import AioHTTP

    aio = AioHTTP(address, {"X-Vault-Token": token}, n=16, gone=frozenset({400}))
    return sum(answer is not None for answer in walk_then_lookup(aio.run))


def _aiohttp_tokens(address: str, token: str) -> int:
    from benchmarks.raw import AioHTTP

    aio = AioHTTP(address, {"X-Vault-Token": token}, n=16)
    listed = aio.run([("LIST", "/v1/auth/token/accessors", None)])[0]["data"]["keys"]
    calls = [("POST", "/v1/auth/token/lookup-accessor", {"accessor": a}) for a in listed]
    return len(aio.run(calls))


def client(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale")
    parser.add_argument("address")
    parser.add_argument("token")
    parser.add_argument("what")
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--deadline", type=float, default=None)
    args = parser.parse_args(argv)

    from toolkit.secrets import SecretsClient
    from toolkit.secrets.checkpoint import WalkInterrupted

    interrupted = False
    with SecretsClient(args.address, args.token, max_concurrency=16) as bao:
        mounts = bao.leases.list_mounts()
        started = time.perf_counter()
        count: int
        try:
            if args.what == "lease-counts":
                count = int(bao.leases.lease_counts(mounts=mounts)["count"].sum())
            elif args.what == "lease-scan":
                scan = bao.leases.scan(checkpoint=args.checkpoint, deadline=args.deadline)
                count = scan.leases
            elif args.what == "lease-aiohttp":
                count = _aiohttp_leases(args.address, args.token)
            elif args.what == "token-scan":
                count = bao.tokens.scan(checkpoint=args.checkpoint, deadline=args.deadline).tokens
            elif args.what == "token-aiohttp":
                count = _aiohttp_tokens(args.address, args.token)
            elif args.what == "cert-scan":
                estate = bao.pki.certificate_estate(["pki"])
                count = sum(s.rows for s in estate.spools.values())
            else:
                parser.error(f"unknown WHAT {args.what!r}")
        except WalkInterrupted as exc:
            interrupted = True
            del exc
            saved = json.loads(Path(args.checkpoint).read_text()) if args.checkpoint else {}
            count = int(saved.get("rows") or 0)
        seconds = time.perf_counter() - started
    print(
        json.dumps(
            {"seconds": seconds, "rss_mb": _peak_mb(), "count": count, "interrupted": interrupted}
        ),
        flush=True,
    )
    return 0


# -- the scenarios (run from benchmarks.run) -------------------------------------------------
def _run(server: dict[str, Any], what: str, *extra: str) -> dict[str, Any]:
    argv = [PYTHON, "-m", "benchmarks.scale", server["address"], server["token"], what, *extra]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if done.returncode:
        raise RuntimeError(f"scale client {what} failed: {done.stderr[-2000:]}")
    result = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    # Each run's figures as they come: a long scenario on a busy machine shows its progress.
    print(f"      {what} {' '.join(extra)}: {json.dumps(result)}", flush=True)
    return result


def _server(scale: str) -> Any:
    return sandbox_process(0, demo_scale=scale)


def scale_leases(args: argparse.Namespace, goals: list[Goal]) -> None:
    count = args.scale_leases
    started = time.perf_counter()
    with _server(f"leases={count}") as server:
        print(
            f"    sandbox with {count:,} generated leases in {time.perf_counter() - started:.0f}s"
        )
        counts = [_run(server, "lease-counts") for _ in range(3)]
        tk = _run(server, "lease-scan")
        aio = _run(server, "lease-aiohttp")
        with _tempdir() as tmp:
            point = str(Path(tmp) / "leases.checkpoint")
            first = _run(
                server,
                "lease-scan",
                "--checkpoint",
                point,
                "--deadline",
                f"{tk['seconds'] / 3:.2f}",
            )
            second = _run(server, "lease-scan", "--checkpoint", point)
    seconds = statistics.median(c["seconds"] for c in counts)
    print(
        f"    counts (LIST only): {seconds:.2f} s median of 3, peak {max(c['rss_mb'] for c in counts):.0f} MB, {counts[0]['count']:,} leases"
    )
    print(
        f"    full scan: toolkit {tk['seconds']:.1f} s (peak {tk['rss_mb']:.0f} MB), aiohttp-16 {aio['seconds']:.1f} s (peak {aio['rss_mb']:.0f} MB)"
    )
    print(
        f"    interrupted after {first['seconds']:.1f} s ({first['count']:,} looked up), "
        f"resumed in {second['seconds']:.1f} s: {second['count']:,} leases in all"
    )
    resumed = first["interrupted"] and second["count"] == tk["count"] and second["count"] >= count
    goals.append(Goal("scale-leases", "counts (LIST only), seconds", seconds, 2.0, False))
    goals.append(
        Goal(
            "scale-leases",
            "full scan: toolkit / aiohttp-16",
            tk["seconds"] / aio["seconds"],
            1.25,
            False,
        )
    )
    goals.append(Goal("scale-leases", "full scan: client peak (GB)", tk["rss_mb"] / GB, 1.0, False))
    goals.append(
        Goal(
            "scale-leases",
            "resumed after interruption, all found (1 = yes)",
            float(resumed),
            1.0,
            True,
        )
    )


def scale_tokens(args: argparse.Namespace, goals: list[Goal]) -> None:
    count = args.scale_tokens
    with _server(f"tokens={count}") as server:
        tk = _run(server, "token-scan")
        aio = _run(server, "token-aiohttp")
    print(
        f"    {tk['count']:,} accessors: toolkit {tk['seconds']:.1f} s (peak {tk['rss_mb']:.0f} MB), aiohttp-16 {aio['seconds']:.1f} s"
    )
    goals.append(
        Goal(
            "scale-tokens",
            "accessors: toolkit / aiohttp-16",
            tk["seconds"] / aio["seconds"],
            1.25,
            False,
        )
    )
    goals.append(Goal("scale-tokens", "accessors: client peak (GB)", tk["rss_mb"] / GB, 1.0, False))


def scale_certificates(args: argparse.Namespace, goals: list[Goal]) -> None:
    count = args.scale_certificates
    started = time.perf_counter()
    with _server(f"certificates={count}") as server:
        print(
            f"    sandbox with {count:,} generated certificates in {time.perf_counter() - started:.0f}s"
        )
        tk = _run(server, "cert-scan")
    print(
        f"    {tk['count']:,} certificates listed and parsed in {tk['seconds']:.1f} s, peak {tk['rss_mb']:.0f} MB"
    )
    goals.append(
        Goal("scale-certificates", "listed and parsed, seconds", tk["seconds"], 240.0, False)
    )
    goals.append(Goal("scale-certificates", "client peak (GB)", tk["rss_mb"] / GB, 1.0, False))


def _tempdir() -> Any:
    import tempfile

    return tempfile.TemporaryDirectory(prefix="bench-scale-")


if __name__ == "__main__":
    raise SystemExit(client(sys.argv[1:]))
