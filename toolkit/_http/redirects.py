"""Which redirects a client follows.

The layer asks the server not to redirect silently (aiohttp's
``allow_redirects=False``) and applies a rule the client configures:

- :data:`NO_REDIRECTS` (the platform client): every 3xx is an error.
- :class:`FollowStandby` (the secrets client): a 307 from a standby node is
  followed once, to the active node that ``GET sys/leader`` names, when the
  ``Location`` points at that node's scheme, host and port, and never from
  https to http. Anything else is an error, and the token goes nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["NO_REDIRECTS", "FollowStandby", "RedirectRule", "origin", "standby_refusal"]


@dataclass(frozen=True)
class RedirectRule:
    """Follow nothing."""

    def follows_standby(self) -> bool:
        return False


@dataclass(frozen=True)
class FollowStandby(RedirectRule):
    """Follow a standby's 307 once, to the leader ``leader_path`` names (unauthenticated GET)."""

    leader_path: str = "/sys/leader"

    def follows_standby(self) -> bool:
        return True


NO_REDIRECTS = RedirectRule()

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an address, the port filled in from the scheme."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme, 0)


def standby_refusal(location: str, leader_address: str, sent_to: str) -> str:
    """Why a standby's redirect to ``location`` is not followed, or ``""`` to follow it."""
    if not location:
        return "the redirect names no Location"
    if not leader_address:
        return "sys/leader names no active node"
    target, leader, here = origin(location), origin(leader_address), origin(sent_to)
    if here[0] == "https" and target[0] != "https":
        return "it would go from https to http"
    if target != leader:
        return f"the Location is not the active node that sys/leader names ({leader_address})"
    if target == here:
        return "it points back at the node that sent it"
    return ""
