"""The audit-log reader on a generated log: ``python -m benchmarks.auditlog LINES FILE``.

A generated log only: request and response entries shaped as OpenBao's file
device writes them (HMAC'd tokens and accessors, auth metadata, policy results,
remote addresses), for ``PRINCIPALS`` principals. Run in a fresh process, it
prints one JSON line: seconds for the requests-per-principal summary and the
last-use table (one read of the log), lines per second, the CPU seconds (all
threads) and the lines per second they make on 2 idle cores, and the peak RSS.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import resource
import sys
import time
from pathlib import Path
from typing import IO

PRINCIPALS = 2_000
_PATHS = ("secret/data/app/config", "database/creds/readonly", "auth/token/lookup-self",
          "pki/issue/web", "sys/leases/renew", "transit/encrypt/orders")  # fmt: skip


def _hmac(text: str) -> str:
    return "hmac-sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _writer(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "wt", compresslevel=1)
    return path.open("w")


def generate(path: Path, lines: int) -> Path:
    """Write ``lines`` entries (request / response pairs) to ``path`` (``.gz``: gzip, level 1)."""
    accessors = [_hmac(f"accessor-{i}") for i in range(PRINCIPALS)]
    tokens = [_hmac(f"token-{i}") for i in range(PRINCIPALS)]
    start = 1_764_000_000
    with _writer(path) as out:
        batch: list[str] = []
        for n in range(lines // 2):
            i = (n * 7919) % PRINCIPALS
            role = f"role-{i % 200}"
            when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(start + n // 20))
            auth = {
                "client_token": tokens[i], "accessor": accessors[i], "display_name": f"approle-{i}",
                "policies": ["default", "app"], "metadata": {"role_name": role},
                "entity_id": f"entity-{i:06d}", "token_type": "service",
                "policy_results": {"allowed": n % 50 != 0},
            }  # fmt: skip
            path_ = _PATHS[n % len(_PATHS)]
            request = {
                "id": f"req-{n:012d}", "operation": "read" if n % 3 else "update",
                "mount_point": path_.split("/")[0] + "/", "mount_type": "kv",
                "client_token": tokens[i], "client_token_accessor": accessors[i],
                "namespace": {"id": "root"}, "path": path_,
                "remote_address": f"10.0.{i % 250}.{n % 200 + 1}", "remote_port": 40000 + n % 20000,
            }  # fmt: skip
            error = "permission denied" if n % 50 == 0 else None
            req = {"time": f"{when}.{n % 1000000:06d}Z", "type": "request", "auth": auth,
                   "request": request}  # fmt: skip
            resp = {**req, "type": "response",
                    "response": {"mount_type": "kv", "data": {"value": _PATHS[n % 3]}}}  # fmt: skip
            if error:
                req["error"] = resp["error"] = error
            batch.append(json.dumps(req))
            batch.append(json.dumps(resp))
            if len(batch) >= 20_000:
                out.write("\n".join(batch) + "\n")
                batch.clear()
        if batch:
            out.write("\n".join(batch) + "\n")
    return path


def measure(path: Path) -> dict[str, float]:
    from toolkit import auditlog

    started = time.perf_counter()
    cpu_before = time.process_time()
    log = auditlog.open(path)
    principals = log.principals_frame()
    last = log.last_use_frame()
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu_before  # every thread of this process
    lines = log.span.lines
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "seconds": seconds,
        "lines": lines,
        "lines_per_second": lines / seconds,
        "cpu_seconds": cpu,
        # What 2 idle cores would do: the CPU time spread over both.
        "lines_per_second_of_2_cores_cpu": lines / (cpu / 2),
        "principals": len(principals),
        "last_use_rows": len(last),
        "rss_mb": peak,
    }


if __name__ == "__main__":
    target = Path(sys.argv[2])
    if not target.exists():
        generate(target, int(sys.argv[1]))
    print(json.dumps(measure(target)))
