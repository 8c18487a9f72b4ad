"""What every form shares: a status line, its display, and how errors are shown.

ipywidgets is imported here, on first use of a form, and never by ``toolkit``.
"""

from __future__ import annotations

import atexit
import html
import re
import threading
import weakref
from collections.abc import Callable
from typing import Any

from toolkit import APIError, ToolkitError

__all__ = [
    "REVEAL_SECONDS",
    "Form",
    "RevealTimeout",
    "error_text",
    "output_text",
    "show_frame",
]

# How long a revealed share or password stays on screen when nobody hides it:
# long enough to copy it down, short enough not to outlast the key holder.
# Each form that reveals takes ``reveal_seconds`` to change it.
REVEAL_SECONDS = 60.0


def error_text(exc: ToolkitError) -> str:
    """What the operator reads for a failure: the server's own message for an API error."""
    if isinstance(exc, APIError):
        return f"{exc.status}: {exc.message or 'no message'}"
    return str(exc)


class RevealTimeout:
    """Clears a revealed secret ``seconds`` after :meth:`start`, or when the kernel exits.

    ``clear`` empties wherever the secret is shown. ``start`` (re)arms the
    timer; ``cancel`` disarms it when the secret was hidden another way. At
    interpreter exit (a kernel shut down or restarted) every armed timeout
    clears at once, so a saved notebook or a reconnecting front end does not
    find the secret in the widget state.
    """

    def __init__(self, clear: Callable[[], None], seconds: float = REVEAL_SECONDS) -> None:
        if seconds <= 0:
            raise ValueError("reveal_seconds must be positive")
        self.clear = clear
        self.seconds = seconds
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    @property
    def armed(self) -> bool:
        return self._timer is not None

    def start(self) -> None:
        timer = threading.Timer(self.seconds, self.fire)
        timer.daemon = True
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = timer
        _ARMED.add(self)
        timer.start()

    def cancel(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        _ARMED.discard(self)

    def fire(self) -> None:
        """Clear now (the timer ran out, or the kernel is exiting)."""
        self.cancel()
        self.clear()


_ARMED: weakref.WeakSet[RevealTimeout] = weakref.WeakSet()


@atexit.register
def clear_revealed_secrets() -> None:
    """Clear every secret still revealed: run when the kernel's process exits."""
    for timeout in list(_ARMED):
        timeout.fire()


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
        for control in _controls(self.widget):
            _show_whole(control)
        return self.widget

    def _button(self, action: Callable[[], Any], **options: Any) -> Any:
        """A button (``options`` as ``ipywidgets.Button`` takes them) that calls ``action``
        on each click."""
        import ipywidgets

        button = ipywidgets.Button(**options)
        button.on_click(lambda _: action())
        return button

    def _on_change(self, action: Callable[[], Any], *controls: Any) -> None:
        """Call ``action`` whenever the value of any of ``controls`` changes."""
        for control in controls:
            control.observe(lambda _: action(), names="value")

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

    def text_summary(self) -> str:
        """What the form is, in plain text: its title, fields, buttons and last outcome.

        This is the form's ``text/plain`` (what GitHub or nbviewer show of a saved
        notebook, where no kernel draws the widget), in place of ``VBox(children=...)``.
        """
        fields: list[str] = []
        buttons: list[str] = []
        for control in _controls(self.widget):
            label = str(getattr(control, "description", "") or "")
            if not label:
                continue
            (buttons if _is_button(control) else fields).append(label)
        parts = [f"{self.title or type(self).__name__} (a form; it needs a running kernel)"]
        if fields:
            parts.append(f"{len(fields)} field(s): {', '.join(fields)}")
        if buttons:
            parts.append(f"{len(buttons)} button(s): {', '.join(buttons)}")
        parts.append(f"last outcome: {self.status_text.rstrip('.') or 'nothing done yet'}")
        return ". ".join(parts) + "."

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):
            bundle = {**bundle, "text/plain": self.text_summary()}
        return bundle


def _controls(widget: Any) -> list[Any]:
    """Every widget inside ``widget`` (itself included), depth first."""
    found = [widget]
    for child in getattr(widget, "children", ()) or ():
        found.extend(_controls(child))
    return found


def _is_button(control: Any) -> bool:
    import ipywidgets

    return isinstance(control, ipywidgets.Button)


def _show_whole(control: Any) -> None:
    """Let a control's label and text take the room they need, so none is cut short.

    ipywidgets gives a description a fixed 80-odd pixels and a checkbox or
    button a fixed width; a longer label is clipped with an ellipsis. Widths
    a form set on purpose are kept.
    """
    import ipywidgets

    style = getattr(control, "style", None)
    if style is not None and hasattr(style, "description_width") and not style.description_width:
        style.description_width = "initial"
    layout = getattr(control, "layout", None)
    if layout is None:
        return
    if isinstance(control, ipywidgets.Checkbox | ipywidgets.Button | ipywidgets.ToggleButton):
        if not layout.width:
            layout.width = "auto"
        if (
            isinstance(control, ipywidgets.Button | ipywidgets.ToggleButton)
            and not layout.min_width
        ):
            # "auto" alone lets a flex row squeeze a button below its text.
            layout.min_width = "fit-content"


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
