"""Sensitive values: one type for anything that must not be shown.

Passwords, private keys, unseal shares and tokens come back from the clients
wrapped in :class:`Sensitive`. Its ``repr``/``str`` and its HTML show a
placeholder, so a notebook cell, a log line, an exception or a DataFrame never
holds the value; :meth:`Sensitive.reveal` hands the value to code that needs it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HIDDEN", "Sensitive", "hidden", "reveal"]

HIDDEN = "<hidden>"


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
