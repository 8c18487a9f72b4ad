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
        yield from items
        return
    from tqdm.auto import tqdm

    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with tqdm(total=total, desc=desc, leave=True) as bar:
        for item in items:
            yield item
            bar.update(1)
