"""Showing large frames in Jupyter: a box that scrolls, or a table to search, sort and filter.

    from toolkit.display import interactive, scrolling
    scrolling(leases)                 # every row (up to ``limit``) in a scrolling box
    interactive(leases)               # every row, searchable, sortable, a filter per column

pandas shows a long frame as its first and last rows; an audit often needs to
look through all of them. :func:`scrolling` renders the rows in a box of fixed
height with a sticky header that takes the notebook theme's background, so it
reads in light and dark themes alike. Secret values stay hidden: a
:class:`~toolkit._masking.Sensitive` cell renders as its placeholder, and the
HTML is escaped. Durations (timedelta columns) are shown as people write them
(``6h 11m``, :func:`format_duration`); the frame keeps its timedelta dtype.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from ._card import format_duration
from ._frames import safe_frame
from ._progress import use_progress

__all__ = [
    "MAX_TABLE_BYTES",
    "InteractiveFrame",
    "ScrollingFrame",
    "format_duration",
    "interactive",
    "scrolling",
    "use_interactive",
    "use_progress",
]

_STYLE = (
    "<style>"
    ".toolkit-scroll{overflow:auto;border:1px solid var(--jp-border-color2,#ccc)}"
    ".toolkit-scroll thead th{position:sticky;top:0;z-index:1;"
    "background:var(--jp-layout-color0,#fff);color:var(--jp-ui-font-color0,#000)}"
    "</style>"
)


class ScrollingFrame:
    """A frame shown in a scrolling box; its text form is the frame's own."""

    def __init__(self, frame: pd.DataFrame, height: str, limit: int) -> None:
        self.frame = frame
        self.height = height
        self.limit = limit

    def _repr_html_(self) -> str:
        if _INTERACTIVE["scrolling"]:
            return InteractiveFrame(self.frame, self.limit, None)._repr_html_()
        shown = self.frame.head(self.limit)
        durations = {
            column: format_duration
            for column in shown.columns
            if pd.api.types.is_timedelta64_dtype(shown[column].dtype)
        }
        table = shown.to_html(
            max_rows=len(shown) + 1,
            max_cols=len(shown.columns) + 1,
            escape=True,
            border=0,
            formatters=durations or None,
        )
        total = len(self.frame)
        note = (
            f"<div>{len(shown)} of {total} rows shown; slice the frame for the others.</div>"
            if total > len(shown)
            else f"<div>{total} rows</div>"
        )
        box = (
            f"<div class='toolkit-scroll' style='max-height:{html.escape(self.height)}'>"
            f"{table}</div>"
        )
        return _STYLE + box + note

    def __repr__(self) -> str:
        return repr(self.frame)


def scrolling(frame: pd.DataFrame, *, height: str = "24em", limit: int = 2000) -> ScrollingFrame:
    """``frame`` shown whole (its first ``limit`` rows) in a box ``height`` tall that scrolls."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    return ScrollingFrame(frame, height, limit)


# -- interactive tables (itables, offline) --------------------------------------------
# Whether scrolling() renders as an interactive table (use_interactive), and whether
# this kernel has shown the DataTables bundle yet (it goes with the first table).
_INTERACTIVE = {"scrolling": False, "loaded": False}


def use_interactive(on: bool = True) -> None:
    """Make :func:`scrolling` boxes interactive tables in this kernel (off: the plain box).

    Off by default: a runbook saved by papermill and compared by nbval keeps its
    small, stable plain tables; an operator in JupyterLab turns this on.
    """
    _INTERACTIVE["scrolling"] = bool(on)


# The most HTML one interactive table puts in the page (and so in the saved notebook),
# the DataTables bundle aside (it comes once a kernel). A frame larger than this shows
# its first rows that fit, and says so.
MAX_TABLE_BYTES = 2_000_000


class InteractiveFrame:
    """A frame shown as a DataTables table (itables, offline); its text form is the frame's."""

    def __init__(
        self,
        frame: pd.DataFrame,
        limit: int | None,
        caption: str | None,
        max_bytes: int = MAX_TABLE_BYTES,
    ) -> None:
        self.frame = frame
        self.limit = limit
        self.caption = caption
        self.max_bytes = max_bytes

    def __repr__(self) -> str:
        return repr(self.frame)

    def _repr_html_(self) -> str:
        from .extras import require

        require("notebook", "Interactive tables", "itables")
        from itables import javascript as itables_js

        total = len(self.frame)
        wanted = min(self.limit, total) if self.limit is not None else total
        table, shown = self._table_within_budget(wanted)
        if shown < wanted:
            note = (
                f"<div><b>The first {shown:,} of {total:,} rows</b>: the table's budget is "
                f"{self.max_bytes / 1e6:g} MB of page, so the rest are left out; filter or "
                "slice the frame, or pass a larger <code>max_bytes</code>.</div>"
            )
        elif wanted < total:
            note = (
                f"<div>A sample: the first {shown} of {total} rows; "
                "slice or filter the frame for the others.</div>"
            )
        else:
            note = f"<div>{total} rows, all searchable</div>"
        bundle = ""
        if not _INTERACTIVE["loaded"]:
            bundle = _offline_bundle(itables_js)
            _INTERACTIVE["loaded"] = True
        return bundle + table + note

    def _table_within_budget(self, wanted: int) -> tuple[str, int]:
        """The table of the first rows (up to ``wanted``) whose HTML fits the budget,
        and how many rows it holds (one at least, whatever its size). The size of a
        row is measured on a first slice; a guess that overshoots is cut down."""
        rows = min(wanted, 500)
        table = self._table(rows)
        if rows == wanted and len(table) <= self.max_bytes:
            return table, rows
        empty = len(self._table(0))
        per_row = max(1.0, (len(table) - empty) / max(rows, 1))
        guess = min(wanted, max(1, int((self.max_bytes - empty) / per_row * 0.98)))
        if guess != rows:
            rows, table = guess, self._table(guess)
        while len(table) > self.max_bytes and rows > 1:
            rows = max(1, min(rows - 1, int(rows * (self.max_bytes - empty) / len(table))))
            table = self._table(rows)
        return table, rows

    def _table(self, rows: int) -> str:
        import hashlib

        from itables import javascript as itables_js

        total = len(self.frame)
        shown = safe_frame(self.frame.head(rows) if rows < total else self.frame)
        shown.attrs = {}
        for column in shown.columns:
            if shown[column].dtype == object or pd.api.types.is_string_dtype(shown[column]):
                shown[column] = shown[column].map(_cut_cell)
        # A stable id: the same frame gives the same page (no random id in saved outputs).
        digest = hashlib.sha256(
            f"{total}|{list(shown.columns)}|{shown.head(3).to_json(date_format='iso')}".encode()
        ).hexdigest()[:10]
        return str(
            itables_js.to_html_datatable(
                shown,
                caption=self.caption,
                table_id=f"toolkit_{digest}",
                connected=False,
                maxBytes=0,
                maxRows=0,
                column_filters="footer",
                classes="display compact nowrap",
                allow_html=False,
            )
        )


# A cell's text is cut past this many characters (a policy, a certificate), so that
# one long cell cannot take the whole budget; the frame keeps its values.
MAX_CELL_CHARS = 2000


def _cut_cell(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_CELL_CHARS:
        return f"{value[:MAX_CELL_CHARS]}… ({len(value):,} characters; cut here)"
    return value


def _offline_bundle(itables_js: Any) -> str:
    """What itables' init_notebook_mode(connected=False) displays, as HTML here: the
    table and the code it needs arrive in one output, without a display call from
    inside a repr (itables 2.x's helpers; the version is pinned)."""
    from itables import options as itables_options

    bundle = itables_js.read_package_file("html/init_datatables.html")
    bundle = itables_js.replace_value(
        bundle,
        "import { set_or_remove_dark_class } from '"
        + itables_js.UNPKG_DT_BUNDLE_URL_NO_VERSION
        + "';",
        "const { set_or_remove_dark_class } = await window."
        + itables_js._itables_underscore_version()
        + ";",
    )
    return str(bundle + itables_js.generate_init_offline_itables_html(itables_options.dt_bundle))


def interactive(
    frame: pd.DataFrame,
    *,
    limit: int | None = None,
    caption: str | None = None,
    max_bytes: int = MAX_TABLE_BYTES,
) -> InteractiveFrame:
    """``frame`` as a table to search, sort and filter by column, every row that fits.

    Works offline (the DataTables code, about 0.9 MB, travels once a kernel, with
    its first table). Every row shown is in the page, and so in the saved
    notebook: the table takes at most ``max_bytes`` of HTML (2 MB by default),
    its first rows that fit, and says how many it left out. ``limit`` shows the
    first ``limit`` rows only, and the table says it is a sample.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a whole number of bytes, at least 1, not {max_bytes}")
    return InteractiveFrame(frame, limit, caption, max_bytes)
