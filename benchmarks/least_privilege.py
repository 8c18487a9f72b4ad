"""Least privilege at scale on a generated log: ``python -m benchmarks.least_privilege LINES FILE``.

The log holds only request entries shaped as OpenBao 2.7's file device writes them
(``log_raw``: accessors in clear), from :data:`PRINCIPALS` tokens over
:data:`POLICIES` policies; one token (``acc-0``) makes :data:`HEAVY` of the requests
over :data:`HEAVY_PATHS` distinct paths. Run in a fresh process, it prints one JSON
line: seconds to read the log (DuckDB), to decide every request (each distinct key
once, then the verdicts joined with every request and the disagreements counted), the
standing privilege of every principal, and the generated policy of the heavy token with
its proof; the peak RSS after reading and at the end.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks._common import PYTHON, ROOT, Goal

PRINCIPALS = 10_000
POLICIES = 10_000
HEAVY = 100_000
HEAVY_PATHS = 2_000
TEAMS = 100


def policy_text(k: int) -> str:
    team = k % TEAMS
    return (
        f'path "secret/data/team{team}/*" {{ capabilities = ["read", "list"] }}\n'
        f'path "secret/data/team{team}/app{k % 7}/+" {{ capabilities = ["create", "update"] }}\n'
        f'path "secret/data/team{team}/locked" {{ capabilities = ["deny"] }}\n'
        f'path "secret/metadata/team{team}/*" {{ capabilities = ["list"] }}\n'
        + ('path "sys/policies/acl/*" { capabilities = ["update"] }\n' if k % 50 == 0 else "")
    )


def _line(when: str, i: int, operation: str, path: str) -> str:
    policy = f"p{i % POLICIES}"
    return (
        f'{{"time":"{when}","type":"request","auth":{{"accessor":"acc-{i}",'
        f'"display_name":"token-{i}","policies":["default","{policy}"],'
        f'"token_policies":["default","{policy}"],"policy_results":{{"allowed":true,'
        f'"granting_policies":[{{"name":"{policy}","namespace_id":"root","type":"acl"}}]}},'
        f'"token_type":"service"}},"request":{{"id":"r","operation":"{operation}",'
        f'"mount_point":"secret/","namespace":{{"id":"root"}},"path":"{path}",'
        f'"remote_address":"10.0.0.1"}}}}\n'
    )


def generate(path: Path, lines: int) -> Path:
    """Write ``lines`` request entries to ``path``."""
    start = 1_764_000_000
    heavy = min(HEAVY, lines // 4)
    with path.open("w") as out:
        batch: list[str] = []
        for n in range(lines):
            when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + n // 2))
            if n % max(1, lines // heavy) == 0:
                i, j = 0, n % HEAVY_PATHS
            else:
                i, j = 1 + (n * 7919) % (PRINCIPALS - 1), n % 20
            team = (i % POLICIES) % TEAMS
            operation = "read" if j % 3 else "update"
            leaf = f"app{(i % POLICIES) % 7}/k{j}" if operation == "update" else f"x/k{j}"
            batch.append(_line(when, i, operation, f"secret/data/team{team}/{leaf}"))
            if len(batch) >= 10_000:
                out.write("".join(batch))
                batch.clear()
        out.write("".join(batch))
    return path


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the forked deciders)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(lines: int, path: Path) -> dict[str, Any]:
    from toolkit import auditlog
    from toolkit._spec.identity_templates import UNKNOWN_IDENTITY
    from toolkit.least_privilege import PolicyTexts, Review
    from toolkit.least_privilege._log import read_requests
    from toolkit.secrets.access import Principal

    texts = {f"p{k}": policy_text(k) for k in range(POLICIES)}
    texts["default"] = 'path "auth/token/lookup-self" { capabilities = ["read"] }\n'
    policies = PolicyTexts(texts)
    principals = [
        Principal(f"auth/token/accessors/acc-{i}", "token", f"token-{i}",
                  ("default", f"p{i % POLICIES}"), None)
        for i in range(PRINCIPALS)
    ]  # fmt: skip
    del UNKNOWN_IDENTITY
    t = time.perf_counter()
    requests = read_requests(auditlog.open(path))
    read = time.perf_counter() - t
    rss_read = _rss_mb()
    review = Review(requests, policies, principals)
    t, cpu = time.perf_counter(), _cpu()
    review._decide_all()
    (disagree,) = requests.con.execute(
        f"select count(*) filter (where not agrees) from ({review._joined(columns='*')}) j, "
        "lateral (select j.allowed = j.v_allowed and j.granting = j.v_granting as agrees)"
    ).fetchone()
    decide, decide_cpu = time.perf_counter() - t, _cpu() - cpu
    t, cpu = time.perf_counter(), _cpu()
    ranking = review.ranking()
    standing, standing_cpu = time.perf_counter() - t, _cpu() - cpu
    t, cpu = time.perf_counter(), _cpu()
    generated = review.generate("auth/token/accessors/acc-0", generalise_above=50)
    generate_seconds, generate_cpu = time.perf_counter() - t, _cpu() - cpu
    heavy = int(review.used("auth/token/accessors/acc-0")["requests"].sum())
    return {
        "lines": lines,
        "read_seconds": read,
        "decide_seconds": decide,
        "decide_cpu_seconds": decide_cpu,
        "standing_cpu_seconds": standing_cpu,
        "generate_cpu_seconds": generate_cpu,
        "distinct_keys": len(review._verdicts),
        "disagreements": int(disagree),
        "standing_seconds": standing,
        "principals": len(ranking),
        "generate_seconds": generate_seconds,
        "heavy_requests": heavy,
        "generated_rules": len(generated.rules),
        "rss_after_read_mb": rss_read,
        "rss_peak_mb": _rss_mb(),
    }


def least_privilege(args: Any, goals: list[Any]) -> None:
    """The ``least-privilege`` scenario of :mod:`benchmarks.run`."""
    import os
    import subprocess
    import tempfile

    reduced = getattr(args, "quick", False) or getattr(args, "report_only", False)
    lines = 400_000 if reduced else 4_000_000
    with tempfile.TemporaryDirectory(prefix="bench-least-privilege-") as work:
        path = generate(Path(work) / "audit.log", lines)
        done = subprocess.run(
            [PYTHON, "-m", "benchmarks.least_privilege", str(lines), str(path)],
            cwd=ROOT, capture_output=True, text=True, timeout=3600,
        )  # fmt: skip
        if done.returncode:
            raise RuntimeError(f"least-privilege run failed: {done.stderr[-2000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
    beyond = result["rss_peak_mb"] - result["rss_after_read_mb"]
    print(
        f"    {lines:,} lines read in {result['read_seconds']:.1f}s; decided in "
        f"{result['decide_seconds']:.1f}s, {result['decide_cpu_seconds']:.1f} CPU s "
        f"({result['distinct_keys']:,} distinct keys, "
        f"{result['disagreements']} disagreements); standing of {result['principals']:,} "
        f"principals {result['standing_seconds']:.1f}s ({result['standing_cpu_seconds']:.1f} "
        f"CPU s); generated policy of "
        f"{result['heavy_requests']:,} requests with proof {result['generate_seconds']:.2f}s; "
        f"RSS {result['rss_after_read_mb']:.0f} MB after reading, peak "
        f"{result['rss_peak_mb']:.0f} MB; load average {os.getloadavg()[0]:.1f}"
    )
    goals.append(Goal("least-privilege", "decide the log (s)", result["decide_seconds"], 30,
                      False))  # fmt: skip
    goals.append(Goal("least-privilege", "RSS beyond reading (MB)", beyond, 1024, False))
    goals.append(Goal("least-privilege", "standing, all principals (s)",
                      result["standing_seconds"], 5, False))  # fmt: skip
    goals.append(Goal("least-privilege", "generated policy with proof (s)",
                      result["generate_seconds"], 2, False))  # fmt: skip


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]), Path(sys.argv[2]))))
