"""ACL policies as rules, and what is dangerous in them.

An ACL policy is HCL (or the same structure in JSON): ``path "<glob>" {
capabilities = [...] }`` blocks. :func:`rules_of` turns a policy's text into
rows ``(policy, path, capabilities)``; :func:`rule_findings` flags the rules an
auditor must look at:

- **critical**, root-equivalent: a rule that can write ACL policies
  (``sys/policies/acl/...`` or ``sys/policy/...``; the holder can grant itself
  anything), or that grants ``sudo`` together with a write on every path;
- **high**: ``sudo`` anywhere; ``create`` or ``update`` on
  ``auth/token/create-orphan`` (a token that outlives its parent and escapes
  revocation of the tree);
- **medium**: a glob (``*`` or ``+``) under ``sys/`` that grants anything.

Globs follow the server's rules: a trailing ``*`` matches any rest of the path,
``+`` one whole segment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from .._coverage import BuiltFrame, carries_coverage
from .._errors import InputError
from .._frames import Schema, build_frame
from .._spec.acl import PathRule, parse_acl_policy
from .._spec.hcl import PolicyParseError
from ..findings import Finding, findings_frame

__all__ = ["RULES", "covers", "rule_findings", "rules_frame", "rules_of"]

RULES = Schema.of("policy path capabilities:object")

WRITES = frozenset({"create", "update", "delete", "patch"})
_POLICY_WRITE_PROBES = ("sys/policies/acl/any-policy", "sys/policy/any-policy")
_ORPHAN = "auth/token/create-orphan"


def rules_of(name: str, text: str) -> list[dict[str, Any]]:
    """The rules of the ACL policy ``name``: a dict per path block, in the text's order,
    read by the one reader of policy documents (:func:`toolkit._spec.acl.parse_acl_policy`:
    a legacy ``policy = "write"`` counts as the capabilities it grants).

    Raises :class:`InputError` naming the policy when the text is neither HCL
    nor JSON of the policy's shape.
    """
    if not text.strip():
        return []
    try:
        rules = parse_acl_policy(text, name)
    except PolicyParseError as exc:
        kind = "JSON" if text.strip().startswith("{") else "HCL"
        raise InputError(f"policy {name!r} is not valid {kind}: {exc}") from None
    return [
        {"policy": name, "path": rule.pattern, "capabilities": sorted(rule.capabilities)}
        for rule in rules
    ]


def rules_frame(policies: Mapping[str, str]) -> BuiltFrame:
    """Every rule of every policy (name → text) as a frame: ``policy``, ``path``, ``capabilities``."""
    rows = [rule for name, text in policies.items() for rule in rules_of(name, text)]
    return build_frame(rows, RULES)


def covers(glob: str, path: str) -> bool:
    """Whether the rule path ``glob`` matches the request path ``path`` (the server's
    matching, from the one evaluator: :mod:`toolkit._spec.acl`)."""
    return PathRule(glob, frozenset()).matches(path)


@carries_coverage("acl.rule_findings")
def rule_findings(rules: pd.DataFrame | Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """The findings in ``rules`` (a :func:`rules_frame`, or its rows); see the module doc."""
    rows = rules.to_dict("records") if isinstance(rules, pd.DataFrame) else list(rules)
    found: list[Finding] = []
    for rule in rows:
        path, caps = str(rule["path"]), set(rule["capabilities"] or [])
        where = f"{rule['policy']}: {path}"
        if not caps or caps == {"deny"}:
            continue
        if caps & WRITES and any(covers(path, p) for p in _POLICY_WRITE_PROBES):
            found.append(
                Finding(
                    "critical",
                    "policies",
                    where,
                    "root-equivalent: can write ACL policies, so can grant itself anything",
                )
            )
        elif "sudo" in caps and caps & WRITES and path in ("*", "+*", "+/*"):
            found.append(
                Finding(
                    "critical", "policies", where, "root-equivalent: sudo and writes on every path"
                )
            )
        if "sudo" in caps:
            found.append(
                Finding("high", "policies", where, "grants sudo (root-protected endpoints)")
            )
        if caps & {"create", "update"} and covers(path, _ORPHAN):
            found.append(
                Finding(
                    "high",
                    "policies",
                    where,
                    "can create orphan tokens, which survive revocation of their parent",
                )
            )
        if path.startswith("sys/") and ("*" in path or "+" in path):
            found.append(
                Finding(
                    "medium", "policies", where, f"glob under sys/ grants {', '.join(sorted(caps))}"
                )
            )
    return findings_frame(found)
