"""The toolkit's optional parts: what each extra needs, the error that says how to install
it, and what a package that serves its parts lazily lists in ``dir()``.

Public, so that the forms (``widgets``) and other packages built on the toolkit
use these without reaching into its private modules.

A client-only install (``pip install operator-toolkit``) has the clients, frames and
masking. The forms and charts need ``[notebook]``, the sandbox ``[sandbox]``; importing
one without its extra raises :class:`MissingExtra`, naming the command to run.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["MissingExtra", "module_dir", "require"]

DISTRIBUTION = "operator-toolkit"


class MissingExtra(ImportError):
    """A part of the toolkit was imported without the extra that brings its libraries."""

    def __init__(self, what: str, extra: str, missing: list[str]) -> None:
        self.extra = extra
        self.missing = missing
        super().__init__(
            f"{what} need{'s' if not what.endswith('s') else ''} "
            f"{', '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} not installed: "
            f"pip install '{DISTRIBUTION}[{extra}]'",
            name=missing[0],
        )


def _installed(module: str) -> bool:
    # find_spec locates the package without importing it, so that checking for
    # ipywidgets does not load it (``import widgets`` stays light).
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(extra: str, what: str, *modules: str) -> None:
    """Raise :class:`MissingExtra` unless every one of ``modules`` is installed."""
    missing = [m for m in modules if not _installed(m)]
    if missing:
        raise MissingExtra(what, extra, missing)


def module_dir(namespace: Mapping[str, Any], lazy: Iterable[str]) -> list[str]:
    """What ``dir(module)`` should list: its public names (``__all__``), the names it
    serves lazily, its submodules and dunders; not the helpers it imported
    (``Any``, ``annotations``), which would crowd tab completion."""
    public = set(namespace.get("__all__", ())) | set(lazy)
    public |= {n for n, v in namespace.items() if n.startswith("__") or isinstance(v, ModuleType)}
    return sorted(public)
