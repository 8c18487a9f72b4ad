"""A pytest plugin for mutation runs: every per-process cache of the toolkit starts empty.

mutmut forks each mutant's test run from a process that has imported (and may have
run) the toolkit with no mutant active; a value an ``lru_cache`` kept from then would
answer for the mutated function without calling it. So before each test every
``functools`` cache in a loaded ``toolkit`` module (module functions and class
attributes) is cleared: before a mutant's first test, and before each later one, since
mutmut's stats run, which finds the functions each test calls, would otherwise see a later
test answered from what an earlier one cached (a policy text parsed twice) and never run
that test against the mutants of the functions behind the cache. Loaded with ``-p tests.mutation.fresh_caches``
by run.py.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any


def toolkit_caches() -> Iterator[Any]:
    """Every object with ``cache_clear`` in the loaded ``toolkit`` modules, once each."""
    seen: set[int] = set()
    for cached in _found():
        if id(cached) not in seen:
            seen.add(id(cached))
            yield cached


def _found() -> Iterator[Any]:
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "toolkit" or name.startswith("toolkit.")):
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)):
                yield value
            elif isinstance(value, type) and value.__module__ == name:
                for attribute in vars(value).values():
                    inner = getattr(attribute, "fget", attribute)
                    if callable(getattr(inner, "cache_clear", None)):
                        yield inner


def clear_toolkit_caches() -> int:
    """Clear them all; how many there were."""
    count = 0
    for cached in toolkit_caches():
        cached.cache_clear()
        count += 1
    return count


def pytest_runtest_setup(item: Any) -> None:
    clear_toolkit_caches()
