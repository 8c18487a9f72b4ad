"""Progress bars for operations that walk many records.

In Jupyter the bar is tqdm's notebook widget; elsewhere a text bar on stderr.
Disabled bars cost nothing, and tqdm is imported only when a bar is shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

__all__ = ["progress"]

T = TypeVar("T")


def progress(
    items: Iterable[T], *, desc: str, total: int | None = None, enabled: bool = True
) -> Iterator[T]:
    """Iterate ``items``, showing a progress bar when ``enabled``."""
    if not enabled:
        return iter(items)  # no layer in between: fan-outs yield thousands of items
    return _with_bar(items, desc, total)


def _with_bar(items: Iterable[T], desc: str, total: int | None) -> Iterator[T]:
    from tqdm.auto import tqdm

    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with tqdm(total=total, desc=desc, leave=True) as bar:
        try:
            for item in items:
                yield item
                bar.update(1)
        finally:
            if _is_notebook_bar(bar):
                # A saved notebook keeps the bar's first text ("0%| | 0/4"); this line
                # says what was done, for a reader with no kernel (GitHub, nbviewer).
                print(summary_line(desc, bar.n, total))


def summary_line(desc: str, done: int, total: int | None) -> str:
    """The line left under a finished bar: what it was, and how many of how many."""
    return f"{desc}: {done} of {total} done" if total is not None else f"{desc}: {done} done"


def _is_notebook_bar(bar: object) -> bool:
    # tqdm.auto's class lives in tqdm.auto whichever bar it picked: ask what it is.
    from tqdm.notebook import tqdm_notebook

    return isinstance(bar, tqdm_notebook) and getattr(bar, "container", None) is not None
