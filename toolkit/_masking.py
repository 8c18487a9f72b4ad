"""Sensitive values: one type for anything that must not be shown.

Passwords, private keys, unseal shares and tokens come back from the clients
wrapped in :class:`Sensitive`. Its ``repr``/``str`` and its HTML show a
placeholder, so a notebook cell, a log line, an exception or a DataFrame never
holds the value; :meth:`Sensitive.reveal` hands the value to code that needs it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

__all__ = [
    "HIDDEN",
    "LEFT_OUT",
    "Sensitive",
    "clean_parameters",
    "hidden",
    "plain",
    "reveal",
    "secret_name",
]

HIDDEN = "<hidden>"
# What filed evidence shows in place of a secret parameter or attribute.
LEFT_OUT = "<left out>"
# Parameter names whose values are secrets; `*_env` names a variable, not a value.
_SECRET_NAME = re.compile(r"token|password|passwd|secret|share|private|credential|key$", re.I)


class Sensitive:
    """A secret value that never prints itself."""

    __slots__ = ("_value", "label")

    def __init__(self, value: str, label: str = "secret") -> None:
        self._value = value
        self.label = label

    def reveal(self) -> str:
        """The value itself. Call only to pass it on, never to display it."""
        return self._value

    def __repr__(self) -> str:
        return f"<hidden {self.label}>"

    __str__ = __repr__

    def _repr_html_(self) -> str:
        return f"<code>&lt;hidden {self.label}&gt;</code>"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sensitive):
            return self._value == other._value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(("Sensitive", self._value))

    def __bool__(self) -> bool:
        return bool(self._value)

    def __len__(self) -> int:
        return len(self._value)

    def __reduce__(self) -> Any:
        raise TypeError("a Sensitive value cannot be pickled")


def reveal(value: Any) -> Any:
    """The plain value of a Sensitive, or the value itself."""
    return value.reveal() if isinstance(value, Sensitive) else value


def hidden(value: str | Sensitive, label: str = "secret") -> Sensitive:
    """``value`` as a Sensitive (a Sensitive stays as it is): what client entry points
    do at once with a share, password or token they are given."""
    return value if isinstance(value, Sensitive) else Sensitive(value, label)


def secret_name(name: str) -> bool:
    """Whether a parameter's name says its value is a secret (``token``, ``password``,
    ``share``, ...); ``token_env`` names a variable and is not."""
    return _SECRET_NAME.search(name) is not None and not name.endswith("_env")


def plain(value: Any) -> Any:
    """``value`` as plain JSON values (a Sensitive as ``<left out>``, a time as ISO 8601,
    anything else as its text)."""
    if isinstance(value, Sensitive):
        return LEFT_OUT
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def clean_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters with every secret value replaced by ``<left out>``.

    A value is secret when it is :class:`Sensitive` or when its name says it is
    (:func:`secret_name`).
    """
    return {
        name: LEFT_OUT if isinstance(value, Sensitive) or secret_name(name) else plain(value)
        for name, value in parameters.items()
    }
