"""Showing large frames in Jupyter: a box that scrolls, with the header kept in view.

    from toolkit.display import scrolling
    scrolling(leases)                 # every row (up to ``limit``) in a scrolling box

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

import pandas as pd

from ._card import format_duration

__all__ = ["ScrollingFrame", "format_duration", "scrolling"]

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
