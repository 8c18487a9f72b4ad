"""What the secrets client tells the HTTP layer about its API: the token headers
and the one redirect it follows.

A standby node of a secrets server answers 307 with the active node's address.
:class:`FollowStandby` follows that once, to the active node that ``GET
sys/leader`` names, when the ``Location`` points at that node's scheme, host
and port, and never from https to http. Anything else is an error, and the
token goes nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from .._http import Response
from .._http.redirects import Ask, Origin, RedirectRule, origin

__all__ = ["FollowStandby", "standby_refusal"]


@dataclass(frozen=True)
class FollowStandby(RedirectRule):
    """Follow a standby's 307 once, to the leader ``leader_path`` names (unauthenticated GET)."""

    leader_path: str = "/sys/leader"

    async def follow(self, answer: Response, sent_to: str, ask: Ask) -> Origin | str:
        if answer.status_code != 307:
            return await super().follow(answer, sent_to, ask)
        location = answer.headers.get("Location", "")
        asked = await ask(self.leader_path)
        leader = ""
        if isinstance(asked, Response) and asked.status_code == 200:
            try:
                found = orjson.loads(asked.content)
            except orjson.JSONDecodeError:  # (orjson refuses deep nesting itself)
                found = None
            if isinstance(found, dict):
                data = found["data"] if isinstance(found.get("data"), dict) else found
                leader = str(data.get("leader_address") or "")
        refusal = standby_refusal(location, leader, sent_to)
        if refusal:
            return f"a standby node redirected to {location}; not followed: {refusal}"
        return origin(leader)


def standby_refusal(location: str, leader_address: str, sent_to: str) -> str:
    """Why a standby's redirect to ``location`` is not followed, or ``""`` to follow it."""
    if not location:
        return "the redirect names no Location"
    if not leader_address:
        return "sys/leader names no active node"
    try:
        target, leader, here = origin(location), origin(leader_address), origin(sent_to)
    except ValueError:  # urlsplit refuses a bracketed host that is no IP address
        return "the Location or the active node's address is not a valid address"
    if target[0] not in ("http", "https") or not target[1]:
        return "the Location is not an http or https address with a host"
    if here[0] == "https" and target[0] != "https":
        return "it would go from https to http"
    if target != leader:
        return f"the Location is not the active node that sys/leader names ({leader_address})"
    if target == here:
        return "it points back at the node that sent it"
    return ""
