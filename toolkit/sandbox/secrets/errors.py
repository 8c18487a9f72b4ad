"""The one error type of the secrets service logic.

The state classes raise :class:`SecretsError` with the status and message the
real server gives; the HTTP layer turns it into ``{"errors": [...]}``.
"""

from __future__ import annotations


class SecretsError(Exception):
    def __init__(self, status: int, *messages: str) -> None:
        super().__init__("; ".join(messages))
        self.status = status
        self.messages = list(messages)


def bad_request(message: str) -> SecretsError:
    return SecretsError(400, message)


def permission_denied() -> SecretsError:
    """403 for a token the server does not accept (missing, unknown, expired)."""
    return SecretsError(403, "permission denied")


# A valid token that lacks the capability: the real server wraps its message
# (spec README: "1 error occurred:\n\t* permission denied").
CAPABILITY_DENIED = "1 error occurred:\n\t* permission denied\n\n"


def capability_denied() -> SecretsError:
    """403 for a token the server accepts, lacking the capability on the path."""
    return SecretsError(403, CAPABILITY_DENIED)


def not_found(message: str = "") -> SecretsError:
    return SecretsError(404, *([message] if message else []))
