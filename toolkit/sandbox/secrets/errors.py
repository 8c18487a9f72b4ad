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
    return SecretsError(403, "permission denied")


def not_found(message: str = "") -> SecretsError:
    return SecretsError(404, *([message] if message else []))
