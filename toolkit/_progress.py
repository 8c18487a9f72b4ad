"""Progress bars for operations that walk many records.

In Jupyter the bar is tqdm's notebook widget; elsewhere a text bar on stderr.
Disabled bars cost nothing, and tqdm is imported only when a bar is shown.

Two kinds. :func:`progress` is a bar a call asks for (``show_progress=True``).
:func:`fan_out_bar` is the one every fan-out of the HTTP layer reports to
(``HTTPLayer.many`` and ``map``: every call that walks a collection goes through
them), shown by default when a person is watching: in a Jupyter kernel whose
current cell came from a frontend that can answer ``input()`` (JupyterLab,
Notebook, VS Code). A notebook run by papermill, nbclient or Voila sends no
such request, so its saved outputs stay as they were. :func:`use_progress`
(``TOOLKIT_PROGRESS=1`` or ``0``) decides instead. One bar a cell: the fan-outs
of one cell (a view reads policies, then users, then groups) add to its total.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = [
    "FanOutBar",
    "fan_out_bar",
    "progress",
    "showing_fan_outs",
    "use_progress",
    "walking",
]

T = TypeVar("T")

# Fan-outs smaller than this show no bar: they end before one would say anything.
MIN_FAN_OUT = 2


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
        _ASKED.depth = getattr(_ASKED, "depth", 0) + 1
        try:
            for item in items:
                yield item
                bar.update(1)
        finally:
            _ASKED.depth -= 1
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


# -- the fan-outs' bar ------------------------------------------------------------------
# None: shown when a person is watching in Jupyter; True or False: always or never.
_SETTING: dict[str, bool | None] = {"on": None}
# The bar of the current cell (its request's id), shared by the cell's fan-outs.
_LIVE: dict[str, Any] = {"bar": None, "cell": None}
# Fan-outs under way inside a bar a call asked for (``progress``): theirs is enough.
_ASKED = threading.local()


def use_progress(on: bool | None = True) -> None:
    """Show a bar over every fan-out (True), none (False), or decide as by default
    (None: in Jupyter, when a person runs the cell; ``TOOLKIT_PROGRESS`` first)."""
    _SETTING["on"] = None if on is None else bool(on)


def showing_fan_outs() -> bool:
    """Whether a fan-out starting now shows a bar."""
    if _SETTING["on"] is not None:
        return _SETTING["on"]
    forced = os.environ.get("TOOLKIT_PROGRESS", "").strip().lower()
    if forced in {"1", "true", "yes", "on"}:
        return True
    if forced in {"0", "false", "no", "off"}:
        return False
    return _cell_of_a_person() is not None


def _cell_of_a_person() -> str | None:
    """The id of the cell being run, when a frontend a person uses sent it, else None."""
    if "ipykernel" not in sys.modules:
        return None
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    if get_parent is None:
        return None
    parent = get_parent("shell") or {}
    if parent.get("msg_type") != "execute_request":
        return None  # a widget's callback: the form says what it is doing
    if not parent.get("content", {}).get("allow_stdin"):
        return None  # papermill, nbclient, Voila: nobody to watch, outputs saved
    return str(parent.get("header", {}).get("msg_id", "")) or None


class FanOutBar:
    """What one fan-out reports to: ``update(n)`` as answers arrive, ``close()`` at the end."""

    def __init__(self, bar: Any, own: bool) -> None:
        self.bar = bar
        self.own = own  # a bar of its own (outside a cell), closed with the fan-out

    def update(self, n: int) -> None:
        self.bar.update(n)

    def close(self) -> None:
        if self.own:
            self.bar.close()
        else:
            self.bar.refresh()


def fan_out_bar(total: int, label: Callable[[], str]) -> FanOutBar | None:
    """A bar for a fan-out of ``total`` items (``label()`` says of what), or None when
    none is shown.

    In a cell, every fan-out of the cell counts on one bar; elsewhere (a script
    with ``TOOLKIT_PROGRESS=1``) each has its own on stderr. Called by the HTTP
    layer only, in the thread that reads the fan-out.
    """
    asked: int = getattr(_ASKED, "depth", 0)
    if total < MIN_FAN_OUT or asked or not showing_fan_outs():
        return None
    from tqdm.auto import tqdm

    desc = label()
    cell = _cell_of_a_person()
    if cell is None:
        return FanOutBar(tqdm(total=total, desc=desc, leave=True), own=True)
    bar = _LIVE["bar"]
    if bar is None or _LIVE["cell"] != cell:
        if bar is not None:
            bar.close()  # the last cell's, left as it ended
        bar = tqdm(total=total, desc=desc, leave=True)
        _LIVE["bar"], _LIVE["cell"] = bar, cell
    else:
        bar.total += total
        container = getattr(bar, "container", None)
        if container is not None:  # the notebook widget keeps its own maximum
            container.children[1].max = bar.total
        bar.set_description(desc, refresh=False)
    return FanOutBar(bar, own=False)


def walking(items: Iterable[T], label: str) -> Iterator[T]:
    """``items``, each counted on the fan-outs' bar: for a walk that sends its
    requests one item at a time rather than through the layer's fan-outs."""
    todo = list(items)
    bar = fan_out_bar(len(todo), lambda: label)
    if bar is None:
        yield from todo
        return
    try:
        for item in todo:
            yield item
            bar.update(1)
    finally:
        bar.close()
