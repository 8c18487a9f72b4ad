"""Which redirects a client follows: a rule the client passes in.

The layer asks the server not to redirect silently (aiohttp's
``allow_redirects=False``) and hands every 3xx to its client's
:class:`RedirectRule`. The rule may ask the server an unauthenticated GET
(``ask``) and answers with where to send the request again (scheme, host,
port: the path stays), or with the reason it is not followed, which the
:class:`~toolkit._errors.Redirected` error carries. At most one redirect is
followed. :data:`NO_REDIRECTS` follows none; the secrets client's rule for a
standby node lives with the secrets client (``toolkit.secrets.standby``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from .policy import Failure
    from .response import Response

__all__ = ["NO_REDIRECTS", "Ask", "Origin", "RedirectRule", "origin"]

# (scheme, host, port) of an address.
Origin = tuple[str, str, int]
# An unauthenticated GET of a path under the API prefix, within the call's deadline.
Ask = Callable[[str], Awaitable["Response | Failure"]]


@dataclass(frozen=True)
class RedirectRule:
    """Follow nothing."""

    async def follow(self, answer: Response, sent_to: str, ask: Ask) -> Origin | str:
        """Where to send the request that got ``answer`` (a 3xx) again, or why not
        (a sentence for the error). ``sent_to`` is the client's configured address."""
        location = answer.headers.get("Location", "")
        return (
            f"the server redirected to {location or '(no Location)'}; "
            "this client follows no such redirect"
        )


NO_REDIRECTS = RedirectRule()

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> Origin:
    """(scheme, host, port) of an address, the port filled in from the scheme."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme, 0)
