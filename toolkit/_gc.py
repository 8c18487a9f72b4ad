"""Pausing the cyclic garbage collector while a view builds many records.

Decoding ten thousand JSON documents and framing them allocates hundreds of
thousands of dicts and lists, none of them part of a reference cycle (plain
reference counting frees them). The cyclic collector runs on allocation counts
regardless, and walks the growing heap again and again: measured, it took
about half the client's CPU time of an agent inventory of 10,000 agents. Views
that decode in bulk run inside :func:`collector_paused`; the collector runs
again as soon as the outermost of them ends (and only if it was on before).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside (nested and thread-safe: the outermost exit resumes it)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
