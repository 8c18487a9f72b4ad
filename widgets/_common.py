"""What every form shares: a status line, its display, and how errors are shown.

ipywidgets is imported here, on first use of a form, and never by ``toolkit``.
"""

from __future__ import annotations

import html
import re
from typing import Any

from toolkit import APIError, ToolkitError

__all__ = ["Form", "error_text", "output_text", "show_frame"]


def error_text(exc: ToolkitError) -> str:
    """What the operator reads for a failure: the server's own message for an API error."""
    if isinstance(exc, APIError):
        return f"{exc.status}: {exc.message or 'no message'}"
    return str(exc)


class Form:
    """A form: ``widget`` (a VBox) to display, ``status`` (HTML) for the last outcome.

    Displaying the form displays its widget, so a form can be a cell's last
    expression.
    """

    title: str = ""

    def __init__(self) -> None:
        import ipywidgets

        self.status = ipywidgets.HTML(value="")
        self.widget: Any = None

    def _layout(self, *rows: Any) -> Any:
        import ipywidgets

        header = ipywidgets.HTML(f"<b>{html.escape(self.title)}</b>")
        self.widget = ipywidgets.VBox([header, *rows, self.status])
        return self.widget

    def show_ok(self, message: str, detail_html: str = "") -> None:
        self.status.value = (
            f"<span style='color:green'>✔ {html.escape(message)}</span>{detail_html}"
        )

    def show_note(self, message: str) -> None:
        self.status.value = f"<span>{html.escape(message)}</span>"

    def show_error(self, exc: ToolkitError) -> None:
        self.status.value = f"<span style='color:#c00'>✘ {html.escape(error_text(exc))}</span>"

    @property
    def status_text(self) -> str:
        """The status line without its markup (what the tests and a reader check)."""
        text = html.unescape(re.sub(r"<[^>]+>", " ", self.status.value))
        return " ".join(text.split())

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


def show_frame(output: Any, frame: Any) -> None:
    """Put a DataFrame (or Styler) into an Output widget as a display output.

    The output is set directly rather than through ``display`` inside the
    Output's context, so the form behaves the same with or without a kernel.
    """
    to_html = getattr(frame, "to_html", None)
    output.outputs = (
        {
            "output_type": "display_data",
            "data": {"text/plain": repr(frame), "text/html": to_html() if to_html else ""},
            "metadata": {},
        },
    )


def output_text(output: Any) -> str:
    """Everything an Output widget holds, as one string (plain text and HTML)."""
    parts: list[str] = []
    for item in output.outputs:
        parts.append(str(item.get("text", "")))
        parts.extend(str(v) for v in (item.get("data") or {}).values())
    return "\n".join(parts)
