"""What a Jupyter user sees of the objects they hold: area reprs and ``dir()`` of lazy modules.

An area's repr names the service it talks to, where (address, and an engine's
mount) and the calls it offers, so that typing ``client.pki`` in a cell is
enough to find one's way. Lazy modules (``toolkit``, ``widgets``) list the
names their ``__getattr__`` serves, so that tab completion shows them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["area_repr", "module_dir", "public_calls"]

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


def module_dir(namespace: Mapping[str, Any], lazy: Iterable[str]) -> list[str]:
    """What ``dir(module)`` should list: its public names (``__all__``), the names it
    serves lazily, its submodules and dunders; not the helpers it imported
    (``Any``, ``annotations``), which would crowd tab completion."""
    public = set(namespace.get("__all__", ())) | set(lazy)
    public |= {n for n, v in namespace.items() if n.startswith("__") or isinstance(v, ModuleType)}
    return sorted(public)
