"""What a write or a single read returns: a plain mapping that displays safely.

A :class:`Record` is a ``dict`` with snake_case keys. Values that are secrets are
:class:`~toolkit._masking.Sensitive`, so neither ``repr`` nor the HTML shown in
Jupyter carries them.
"""

from __future__ import annotations

import html
from typing import Any

from ._masking import Sensitive

__all__ = ["Record"]


class Record(dict[str, Any]):
    """A record from the server, keyed in snake_case."""

    kind: str = "record"

    def __init__(self, *args: Any, kind: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if kind:
            self.kind = kind

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
