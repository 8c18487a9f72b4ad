"""The refusals of the platform sandbox's rules, as typed errors with no HTTP in them.

The state raises these; the HTTP side (:mod:`.http._errors`) turns each into
a JSON:API error document, choosing the status, the title and the JSON
pointer. ``field`` names the argument that broke a rule, in the state's own
words (``name``, ``organization_scoped``, ``allowed_workspaces``, ``team``...),
and ``index`` the entry of a list argument.

- :class:`UnknownCaller`: no token, or one the service does not know.
- :class:`RecordNotFound`: a missing record, or one the caller may not see or change
  (spec part 5: the two are answered alike).
- :class:`RuleViolation`: a value that breaks a rule (a name's characters, a taken key).
- :class:`LimitReached`: the organization holds as many agent pools as allowed.
- :class:`InUse`: an agent pool that workspaces still use.
- :class:`NotRemovable`: an agent whose status does not allow its removal.

Each name is the platform's own: the client's errors (``toolkit._errors``) and the
secrets sandbox's have others, so a traceback names one class.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

__all__ = [
    "InUse",
    "LimitReached",
    "NotRemovable",
    "PlatformError",
    "RecordNotFound",
    "RuleViolation",
    "UnknownCaller",
    "existing",
]

R = TypeVar("R")


class PlatformError(Exception):
    """A refusal by the platform's rules; the message says what is wrong."""


class UnknownCaller(PlatformError):
    """The request has no token, or one the service does not know."""


class RecordNotFound(PlatformError):
    """The record does not exist, or the caller may not see or change it."""

    def __init__(self, message: str = "not found") -> None:
        super().__init__(message)


def existing(records: Mapping[str, R], record_id: str, what: str, advice: str = "") -> R:
    """``records[record_id]``, for the Python API: RecordNotFound ``no <what> <id>`` (then
    ``advice``, if any) when there is none."""
    record = records.get(record_id)
    if record is None:
        missing = f"no {what} {record_id!r}"
        raise RecordNotFound(f"{missing}: {advice}" if advice else missing)
    return record


class RuleViolation(PlatformError):
    """A value breaks a rule: ``field`` names the argument, ``index`` its entry in a list."""

    def __init__(self, message: str, field: str | None = None, index: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.index = index


class LimitReached(PlatformError):
    """The organization already holds as many agent pools as the service allows."""


class InUse(PlatformError):
    """The agent pool is still used by workspaces."""


class NotRemovable(PlatformError):
    """The agent's status does not allow removing it (only unknown, errored, exited)."""
