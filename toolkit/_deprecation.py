"""Old method names kept for one release after a rename, each warning with its new name.

The toolkit's naming rule (docs/decisions.md, "Names"): ``list_<things>()``
returns names, ``<things>_frame()`` a DataFrame, and views have their own nouns.
Methods renamed to follow it keep their old name for one release:
:func:`keep_old_names` installs each old name as a :class:`RenamedMethod`, which
warns ``DeprecationWarning`` naming the new call, then makes it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, Self, overload

__all__ = ["RenamedMethod", "keep_old_names"]

# The release that drops the old names.
REMOVED_IN = "0.3"
# The warning names the caller's line, so that Python shows it in a notebook (where
# only deprecations raised from ``__main__`` show by default): the user sees which of
# their own calls to change. The runbooks use the new names.
_STACKLEVEL = 2  # 2: the caller's line; 1 would be this module


class RenamedMethod:
    """A method's old name: reading it from an instance gives the new method, warning."""

    def __init__(self, owner: str, old: str, new: str) -> None:
        self.owner = owner
        self.old = old
        self.new = new

    @property
    def message(self) -> str:
        return (
            f"{self.owner}.{self.old}() is deprecated and will be removed in {REMOVED_IN}: "
            f"use {self.owner}.{self.new}()"
        )

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> Self: ...
    @overload
    def __get__(self, obj: object, objtype: type | None = None) -> Callable[..., Any]: ...
    def __get__(self, obj: object | None, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        method = getattr(obj, self.new)

        @functools.wraps(method)
        def renamed(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(self.message, DeprecationWarning, stacklevel=_STACKLEVEL)
            return method(*args, **kwargs)

        return renamed


def keep_old_names(cls: type, **old_to_new: str) -> None:
    """Install each ``old=new`` pair on ``cls`` as a :class:`RenamedMethod`.

    Called after the class body, so that an old name such as ``list`` does not
    shadow the builtin inside the class (its annotations say ``list[str]``).
    """
    for old, new in old_to_new.items():
        if not callable(getattr(cls, new, None)):
            raise AttributeError(f"{cls.__name__}.{new} is not a method; cannot alias {old}")
        setattr(cls, old, RenamedMethod(cls.__name__, old, new))
