"""A demonstration log for the sandbox, which has no audit device yet: requests of its
demo tokens sent for real, written as OpenBao 2.7's file device logs them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .._errors import APIError
from ._decide import Decider
from ._policies import PolicyTexts

__all__ = ["sandbox_demo_log"]

# (demo token, method, path, days before now): a month of use by the sandbox's demo
# tokens, one refused request among them.
_TRAFFIC = (
    *(("demo-db-reader-token", "GET", "database/creds/readonly", d) for d in (40, 20, 9, 2)),
    ("demo-db-reader-token", "LIST", "database/roles", 20),
    ("demo-auditor-token", "LIST", "sys/policies/acl", 30),
    ("demo-auditor-token", "GET", "sys/policies/acl/operators", 30),
    ("demo-auditor-token", "GET", "sys/policies/acl/auditors", 3),
    ("demo-auditor-token", "GET", "database/creds/readonly", 3),
    ("demo-operator-token", "LIST", "sys/policies/acl", 12),
    ("demo-operator-token", "GET", "sys/policies/acl/db-readers", 12),
    ("demo-operator-token", "GET", "sys/policies/acl/auditors", 5),
    ("demo-operator-token", "GET", "sys/policies/acl/operators", 1),
    ("demo-library-user-token", "LIST", "ad/library", 6),
)


def sandbox_demo_log(client: Any, folder: str | Path) -> Path:
    """Send the demo tokens' requests to the sandbox ``client`` points at and write
    ``folder/audit.log`` as OpenBao's file device would (``log_raw``): the outcome is
    the sandbox's answer; ``granting_policies`` are the evaluator's, which the
    sandbox enforces with. Times are spread over the last 40 days. For the runbook's
    demonstration only: a live review reads the server's own log."""
    from ..secrets import SecretsClient

    texts = client.policies.acl_texts()
    decider = Decider(PolicyTexts(texts), {})
    now = datetime.now(UTC)
    lines: list[str] = []
    for token, method, path, days in _TRAFFIC:
        with SecretsClient(client.address, token) as user:
            me = user.tokens.lookup_self()
            try:
                if method == "LIST":
                    user.http.json("LIST", f"/{path}")
                else:
                    user.http.json(method, f"/{path}")
                allowed = True
            except APIError as exc:
                allowed = exc.status != 403
        policies = sorted(me["policies"])
        operation = {"GET": "read", "LIST": "list"}[method]
        logged_path = path + "/" if operation == "list" else path
        verdict = decider.decide(",".join(policies), "", operation, logged_path)
        results: dict[str, Any] = {"allowed": allowed}
        if allowed:
            results["granting_policies"] = [
                {"name": p, "namespace_id": "root", "type": "acl"} for p in verdict.granting
            ]
        entry: dict[str, Any] = {
            "time": (now - timedelta(days=days)).isoformat().replace("+00:00", "Z"),
            "type": "request",
            "auth": {"accessor": me["accessor"], "display_name": me.get("display_name") or "",
                     "policies": policies, "token_policies": policies,
                     "policy_results": results, "token_type": "service"},
            "request": {"id": f"demo-{len(lines)}", "operation": operation,
                        "path": logged_path, "namespace": {"id": "root"},
                        "remote_address": "127.0.0.1"},
        }  # fmt: skip
        if not allowed:
            entry["error"] = "1 error occurred:\n\t* permission denied\n\n"
        lines.append(json.dumps(entry))
    lines.sort(key=lambda line: json.loads(line)["time"])
    target = Path(folder) / "audit.log"
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target
