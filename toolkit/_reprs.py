"""What a Jupyter user sees of the areas they hold: a repr naming service, address and calls.

An area's repr names the service it talks to, where (address, and an engine's
mount) and the calls it offers, so that typing ``client.pki`` in a cell is
enough to find one's way.
"""

from __future__ import annotations

import textwrap

__all__ = ["area_repr", "public_calls"]

# Wide enough for a notebook cell, narrow enough to read at a glance.
_WIDTH = 100


def public_calls(obj: object) -> list[str]:
    """The public methods of ``obj``'s class, sorted (properties and tables left out)."""
    cls = type(obj)
    names = []
    for name in dir(cls):
        if name.startswith("_"):
            continue
        attr = getattr(cls, name, None)
        if isinstance(attr, property | type) or not callable(attr):
            continue
        names.append(name)
    return sorted(names)


def area_repr(obj: object, service: str, address: str, mount: str | None = None) -> str:
    """``<Name: service at address, mount 'm'`` then the calls, wrapped, and ``>``."""
    where = f"{service} at {address}" + (f", mount {mount!r}" if mount is not None else "")
    calls = ", ".join(public_calls(obj))
    body = textwrap.fill(
        f"calls: {calls}", width=_WIDTH, initial_indent="  ", subsequent_indent="         "
    )
    return f"<{type(obj).__name__}: {where}\n{body}>"
