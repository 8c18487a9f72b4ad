"""The rows of ``who_can``: one policy set's answer from each policy's best match.

:class:`~toolkit.secrets.access.model.AccessModel` finds, per look-up stage, each
policy's most specific pattern matching a path (a :data:`Best`); :func:`combine` turns
them into a principal's row, as the server merges its policies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..._frames import Schema
from ..._spec.acl import Decision, PathRule
from .principals import Principal

__all__ = ["WHO_CAN", "Best", "combine", "grant", "identity_source"]

# A policy's most specific match at one stage: (priority key, pattern, capabilities).
Best = tuple[Any, str, set[str]]

WHO_CAN = Schema.of(
    "principal kind name status pattern policies:object capabilities:object depends_on",
    index="principal",
)


def combine(
    policies: Sequence[str],
    stage_bests: Sequence[Mapping[str, Best]],
    maybe: Mapping[str, list[PathRule]],
    capability: str,
    sudo: bool = False,
) -> dict[str, Any] | None:
    top: tuple[Any, str] | None = None
    best: Mapping[str, Best] = {}
    for best in stage_bests:  # the first stage where one of its policies matches decides
        for name in policies:
            held = best.get(name)
            if held is not None and (top is None or held[0] > top[0]):
                top = (held[0], held[1])
        if top is not None:
            break
    caps: set[str] = set()
    granting: list[str] = []
    if top is not None:
        for name in policies:
            held = best.get(name)
            if held is not None and held[1] == top[1]:
                caps |= held[2]
                granting.append(name)
    holds = capability in caps and "deny" not in caps and (not sudo or "sudo" in caps)
    could = [r for name in policies for r in maybe.get(name, ())]
    if could and (holds or any(capability in r.capabilities for r in could)):
        return {
            "status": "depends on identity",
            "pattern": top[1] if holds and top else could[0].pattern,
            "policies": granting if holds else sorted({r.policy for r in could}),
            "capabilities": sorted(caps) if holds else sorted(could[0].capabilities),
        }
    if not holds or top is None:
        return None
    return {
        "status": "granted",
        "pattern": top[1],
        "policies": [n for n in granting if capability in best[n][2]],
        "capabilities": sorted(caps),
    }


def identity_source(principal: Principal) -> str:
    """What a "depends on identity" answer of ``principal`` depends on."""
    if principal.kind == "token_role":
        return "the caller's entity (a token of this role inherits it)"
    if principal.kind in ("entity", "group", "policies"):
        return "the entity of the token holding these policies"
    return "each login's entity"


def grant(holds: bool, decision: Decision, capability: str) -> dict[str, Any] | None:
    if decision.depends_on_identity:
        return {
            "status": "depends on identity",
            "pattern": decision.pattern or decision.maybe[0][1],
            "policies": list(decision.policies) or [decision.maybe[0][0]],
            "capabilities": sorted(decision.capabilities),
        }
    if not holds:
        return None
    return {
        "status": "granted",
        "pattern": decision.pattern,
        "policies": list(decision.policies),
        "capabilities": sorted(decision.capabilities),
    }
