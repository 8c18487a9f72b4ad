"""The refusals of the secrets sandbox's rules, as typed errors with no HTTP in them.

The state raises these with the message the real server gives; the HTTP side
(:func:`.http._base.status_of`) maps each class to its status and answers
``{"errors": [...]}``, as the platform half does with its
:class:`~..platform.errors.PlatformError`.

- :class:`InvalidRequest`: a request the rules refuse (a value, a missing field, a
  state that does not allow it): the server's 400.
- :class:`AccessDenied`: a token the server does not accept, or one lacking the
  capability: 403.
- :class:`PathNotFound`: a path or record that does not exist: 404, with or
  without a message as the server answers.
- :class:`ServerSealed`: the server is sealed: 503.

Each name is the secrets sandbox's own: the client's errors (``toolkit._errors``) and
the platform sandbox's have others, so a traceback names one class.
"""

from __future__ import annotations

__all__ = [
    "CAPABILITY_DENIED",
    "AccessDenied",
    "InvalidRequest",
    "PathNotFound",
    "SecretsError",
    "ServerSealed",
    "bad_request",
    "capability_denied",
    "not_found",
    "permission_denied",
]


class SecretsError(Exception):
    """A refusal by the secrets server's rules; ``messages`` are the answer's ``errors``."""

    def __init__(self, *messages: str) -> None:
        super().__init__("; ".join(messages))
        self.messages = list(messages)


class InvalidRequest(SecretsError):
    """The rules refuse the request (the server's 400)."""


class AccessDenied(SecretsError):
    """The token is not accepted, or lacks the capability on the path."""


class PathNotFound(SecretsError):
    """No such path or record."""


class ServerSealed(SecretsError):
    """The server is sealed."""


def bad_request(message: str) -> InvalidRequest:
    return InvalidRequest(message)


def permission_denied() -> AccessDenied:
    """A token the server does not accept (missing, unknown, expired)."""
    return AccessDenied("permission denied")


# A valid token that lacks the capability: the real server wraps its message
# (spec README: "1 error occurred:\n\t* permission denied").
CAPABILITY_DENIED = "1 error occurred:\n\t* permission denied\n\n"


def capability_denied() -> AccessDenied:
    """A token the server accepts, lacking the capability on the path."""
    return AccessDenied(CAPABILITY_DENIED)


def not_found(message: str = "") -> PathNotFound:
    return PathNotFound(*([message] if message else []))
