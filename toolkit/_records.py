"""What a write or a single read returns: a plain mapping that displays safely.

A :class:`Record` is a ``dict`` with snake_case keys. Values that are secrets are
:class:`~toolkit._masking.Sensitive`, so neither ``repr`` nor the HTML shown in
Jupyter carries them.
"""

from __future__ import annotations

import html
from typing import Any

from ._errors import DecodeError, MissingField
from ._masking import Sensitive

__all__ = ["Record", "integer", "text"]


def integer(value: Any, field: str, default: int = 0) -> int:
    """A whole number a server's answer gives for ``field`` (``default`` when absent):
    an int, or digits; anything else (text, a fraction, a list) is a :class:`DecodeError`
    naming the field, never a raw ValueError or TypeError."""
    if value is None or value == "":
        return default
    if type(value) is int:
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 40:
        return int(value)
    if type(value) is float and value.is_integer():
        return int(value)
    raise DecodeError(f"the server's answer has a {field!r} that is not a whole number")


def text(value: Any, field: str) -> str | None:
    """Text a server's answer gives for ``field`` (None when absent); anything else
    is a :class:`DecodeError` naming the field."""
    if value is None or isinstance(value, str):
        return value
    raise DecodeError(f"the server's answer has a {field!r} that is not text")


class Record(dict[str, Any]):
    """A record from the server, keyed in snake_case."""

    kind: str = "record"

    def __init__(self, *args: Any, kind: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if kind:
            self.kind = kind

    def __missing__(self, key: str) -> Any:
        raise MissingField(f"the {self.kind} has no {str(key)[:60]!r} field")

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __dir__(self) -> list[str]:
        # The keys read as attributes (``record.name``), so tab completion offers them.
        keys = {k for k in self if isinstance(k, str) and k.isidentifier()}
        return sorted(set(super().__dir__()) | keys)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.items())
        return f"{self.kind}({inner})"

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
            f"<td style='text-align:left'>{_cell(v)}</td></tr>"
            for k, v in self.items()
        )
        return f"<table><caption>{html.escape(self.kind)}</caption>{rows}</table>"


def _cell(value: Any) -> str:
    if isinstance(value, Sensitive):
        return value._repr_html_()
    return html.escape(repr(value) if not isinstance(value, str) else value)
