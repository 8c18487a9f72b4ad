"""The rows of ``can`` and ``explain``: what a principal's merged ACL grants, and which
pattern of which policy decides a path for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..._frames import Schema
from ..._spec.acl import ACL, merged_patterns
from .principals import Principal

__all__ = ["CAN", "EXPLAIN", "can_rows", "explain_rows"]

CAN = Schema.of("pattern capabilities:object policies:object written_as status")
EXPLAIN = Schema.of("rank:int policy pattern capabilities:object outcome")


def can_rows(principal: Principal, acl: ACL) -> list[dict[str, Any]]:
    """The rows of ``can`` for ``principal`` holding ``acl`` (see
    :meth:`toolkit.secrets.access.Access.can`)."""
    rows: list[dict[str, Any]] = []
    refused = _refused(principal, acl)
    if refused:
        rows.append(
            {
                "pattern": "",
                "capabilities": [],
                "policies": list(principal.policies),
                "written_as": "",
                "status": f"holds nothing: {refused}",
            }
        )
    elif "root" in principal.policies:
        rows.append(
            {
                "pattern": "*",
                "capabilities": ["root"],
                "policies": ["root"],
                "written_as": "",
                "status": "granted",
            }
        )
    else:
        for pattern, caps, policies in merged_patterns(acl.sources):
            origins = {
                acl.written_as[(p, pattern)] for p in policies if (p, pattern) in acl.written_as
            }
            rows.append(
                {
                    "pattern": pattern,
                    "capabilities": sorted(caps),
                    "policies": list(policies),
                    "written_as": ", ".join(sorted(origins)),
                    "status": "denied" if caps == {"deny"} else "granted",
                }
            )
        for rule in acl.unresolved:
            rows.append(
                {
                    "pattern": rule.pattern,
                    "capabilities": sorted(rule.capabilities),
                    "policies": [rule.policy],
                    "written_as": rule.pattern,
                    "status": "depends on identity",
                }
            )
    return rows


def explain_rows(
    principal: Principal, acl: ACL, path: str, capability: str, sudo: bool
) -> list[dict[str, Any]]:
    """The rows of ``explain`` for ``principal`` holding ``acl`` on ``path`` (see
    :meth:`toolkit.secrets.access.Access.explain`); ``sudo``: the path needs it."""
    rows: list[dict[str, Any]] = []
    refused = _refused(principal, acl)
    if refused:
        rows.append(
            {
                "rank": None,
                "policy": "",
                "pattern": "",
                "capabilities": [],
                "outcome": f"denied: holds nothing ({refused})",
            }
        )
    elif "root" in principal.policies:
        rows.append(
            {
                "rank": 1,
                "policy": "root",
                "pattern": "",
                "capabilities": ["root"],
                "outcome": "decides: the root policy allows everything",
            }
        )
    else:
        decision = acl.decide(path, capability)
        caps_of: dict[tuple[str, str], set[str]] = {}
        for r in acl.sources:
            caps_of.setdefault((r.policy, r.pattern), set()).update(r.capabilities)
        order: list[str] = []
        for _policy, pattern in [(p, decision.pattern) for p in decision.policies] + list(
            decision.losers
        ):
            if pattern is not None and pattern not in order:
                order.append(pattern)
        verdict = _verdict(decision.capabilities, capability, sudo)
        for policy in decision.policies:
            merged = (
                ""
                if len(decision.policies) == 1
                else " (merged with the other policies on this pattern)"
            )
            rows.append(
                {
                    "rank": 1,
                    "policy": policy,
                    "pattern": decision.pattern,
                    "capabilities": sorted(caps_of[(policy, decision.pattern or "")]),
                    "outcome": f"decides{merged}" + (f": denied, {verdict}" if verdict else ""),
                }
            )
        for policy, pattern in decision.losers:
            rows.append(
                {
                    "rank": order.index(pattern) + 1,
                    "policy": policy,
                    "pattern": pattern,
                    "capabilities": sorted(caps_of[(policy, pattern)]),
                    "outcome": f"lost to {decision.pattern!r} (more specific)",
                }
            )
        for policy, pattern in decision.maybe:
            rule = next(r for r in acl.unresolved if r.policy == policy and r.pattern == pattern)
            rows.append(
                {
                    "rank": None,
                    "policy": policy,
                    "pattern": pattern,
                    "capabilities": sorted(rule.capabilities),
                    "outcome": "depends on identity: may match, and then may decide",
                }
            )
        if not rows:
            rows.append(
                {
                    "rank": None,
                    "policy": "",
                    "pattern": "",
                    "capabilities": ["deny"],
                    "outcome": "no pattern of its policies matches: denied",
                }
            )
    return rows


def _verdict(granted: Iterable[str], capability: str, sudo: bool) -> str:
    """Why the deciding pattern's capabilities do not allow the request, or "" when they do."""
    caps = set(granted)
    if "deny" in caps:
        return "the pattern denies it ('deny')"
    if capability not in caps:
        return f"the pattern does not grant {capability!r}"
    if sudo and "sudo" not in caps:
        return "the path needs 'sudo', which the pattern does not grant"
    return ""


def _refused(principal: Principal, acl: ACL) -> str:
    """Why the server gives ``principal`` nothing (its token refused, or its whole ACL),
    or ""."""
    return principal.depends_on if principal.depends_on.startswith("refused") else acl.refused
