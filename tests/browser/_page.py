"""Driving JupyterLab and the widgets in a page, as a person would.

JupyterLab runs with ``expose_app_in_browser``, so the tests can run cells
and read the notebook model the way the menus do; widgets are found and used
through what a person sees: their labels, buttons and fields.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SCREENSHOTS = ROOT / "artifacts" / "screenshots"

# What a widget looks like when its front end is missing: a text repr or an error.
WIDGET_AS_TEXT = re.compile(
    r"^(VBox|HBox|Box|Button|HTML|Output|FloatProgress|IntProgress)\(|"
    r"Error displaying widget|A Jupyter widget could not be displayed|Loading widget\.\.\.",
    re.M,
)

__all__ = [
    "NOTEBOOKS",
    "ROOT",
    "SCREENSHOTS",
    "WIDGET_AS_TEXT",
    "button",
    "cut_labels",
    "field",
    "focus_on",
    "form",
    "output_text",
    "rendered_widgets",
    "open_notebook",
    "outputs",
    "run_all",
    "run_cells",
    "save_notebook",
    "screenshot",
    "status_line",
    "wait_status",
    "wait_text",
    "type_into",
]


def screenshot(page: Any, name: str, *, full_page: bool = False) -> Path:
    """Write the page as ``artifacts/screenshots/<name>.png`` (a test's end state)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


# -- JupyterLab --------------------------------------------------------------------
_READY = """async () => {
  const app = window.jupyterapp;
  await app.started; await app.restored;
  const panel = app.shell.currentWidget;
  if (!panel || !panel.sessionContext) { return false; }
  await panel.context.ready;
  await panel.sessionContext.ready;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return !!kernel;
}"""

_IDLE = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const session = panel && panel.sessionContext && panel.sessionContext.session;
  if (!session || !session.kernel) { return false; }
  const kernel = session.kernel;
  const pending = panel.content.widgets.some(
    c => c.model.type === 'code' && c.model.executionState === 'running');
  const queued = Array.from(document.querySelectorAll('.jp-InputArea-prompt'))
    .some(p => p.textContent.includes('*'));
  return kernel.status === 'idle' && !pending && !queued;
}"""


def open_notebook(page: Any, lab: str, name: str) -> None:
    """Open ``name`` in a fresh workspace and wait until its kernel is up."""
    page.goto(f"{lab}/lab/tree/{name}?reset")
    # ?reset reloads the page once without it.
    page.wait_for_url(re.compile(r"/lab/tree/[^?]*$"), timeout=60_000)
    page.wait_for_function("() => window.jupyterapp !== undefined", timeout=60_000)
    page.locator(".jp-NotebookPanel").first.wait_for(timeout=60_000)
    page.wait_for_function(_READY, timeout=90_000, polling=500)
    page.wait_for_function(_IDLE, timeout=60_000, polling=250)


def _wait_idle(page: Any, timeout: float) -> None:
    # The kernel is briefly idle between cells: idle twice, half a second apart.
    page.wait_for_function(_IDLE, timeout=timeout, polling=250)
    page.wait_for_timeout(500)
    page.wait_for_function(_IDLE, timeout=timeout, polling=250)


def run_all(page: Any, timeout: float = 240_000) -> None:
    """Run > Run All Cells, and wait until every cell has run."""
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    _wait_idle(page, timeout)


def run_cells(page: Any, *needles: str, timeout: float = 120_000) -> list[int]:
    """Run, in order, the parameters cell and each code cell whose source holds a needle."""
    indices: list[int] = page.evaluate(
        """(needles) => {
      const cells = window.jupyterapp.shell.currentWidget.content.widgets;
      return cells.map((c, i) => [c, i]).filter(([c, i]) => c.model.type === 'code' && (
        (c.model.getMetadata('tags') || []).includes('parameters') ||
        needles.some(n => c.model.sharedModel.getSource().includes(n)))).map(([c, i]) => i);
    }""",
        list(needles),
    )
    for index in indices:
        page.evaluate(
            """async (i) => {
          const panel = window.jupyterapp.shell.currentWidget;
          panel.content.activeCellIndex = i;
          panel.content.deselectAll();
          await window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
            index,
        )
        _wait_idle(page, timeout)
    return indices


def outputs(page: Any) -> list[dict[str, Any]]:
    """Every output of every code cell, as the notebook model holds them now."""
    return list(
        page.evaluate(
            """() => window.jupyterapp.shell.currentWidget.content.widgets
          .filter(c => c.model.type === 'code')
          .flatMap(c => c.model.outputs.toJSON())"""
        )
    )


def save_notebook(page: Any, path: Path) -> dict[str, Any]:
    """File > Save from the page; the notebook as written on disk."""
    before = path.stat().st_mtime_ns
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(
        "() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000
    )
    for _ in range(100):
        if path.stat().st_mtime_ns != before:
            break
        page.wait_for_timeout(100)
    return dict(json.loads(path.read_text()))


def rendered_widgets(page: Any) -> int:
    """How many outputs the page shows as live widgets."""
    return int(page.locator(".jp-OutputArea-output > .jupyter-widgets").count())


# Every label, button text and checkbox description a widget shows; one whose text is
# wider than its box is clipped (ipywidgets ends it with an ellipsis).
_CUT_LABELS = """() => Array.from(document.querySelectorAll(
    '.jupyter-widgets .widget-label, .jupyter-widgets .widget-label-basic, '
    + '.jupyter-widgets .widget-label-basic span, .jupyter-widgets button'))
  .filter(e => e.getClientRects().length && e.textContent.trim())
  .filter(e => e.scrollWidth > e.clientWidth)
  .map(e => `${e.textContent.trim()} (${e.scrollWidth}px in ${e.clientWidth}px)`)"""


def cut_labels(page: Any) -> list[str]:
    """The widget labels, buttons and checkbox descriptions on the page whose text does
    not fit its box (``scrollWidth > clientWidth``), each with both widths."""
    return list(page.evaluate(_CUT_LABELS))


def output_text(page: Any) -> str:
    """Everything the page shows in its output areas, as text."""
    return "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())


def focus_on(page: Any, locator: Any) -> None:
    """Fold the side panels away and scroll ``locator`` into view, for a screenshot."""
    page.evaluate("() => window.jupyterapp && window.jupyterapp.shell.collapseLeft()")
    locator.scroll_into_view_if_needed()


# -- widgets -------------------------------------------------------------------------
def form(page: Any, title: str) -> Any:
    """The form (a VBox under its bold title) titled ``title``."""
    return page.locator(
        f"div.widget-vbox:has(> div.widget-html b:text-is({json.dumps(title)}))"
    ).first


def field(scope: Any, label: str, css: str = "input, select, textarea") -> Any:
    """The input of the widget whose description is exactly ``label`` (checkboxes too)."""
    text = json.dumps(label)
    labelled = (
        f".widget-inline-hbox:has(> label.widget-label:text-is({text})), "
        f".widget-checkbox:has(label.widget-label-basic > span:text-is({text}))"
    )
    return scope.locator(f":is({labelled}) :is({css})").first


def type_into(page: Any, box: Any, value: str) -> None:
    """Type ``value`` into a widget field and leave it, as a person does.

    The widget manager may hold a value update back while an earlier message is
    in flight, and a click is sent at once: the pause lets the value arrive first.
    """
    box.fill(value)
    box.press("Tab")
    page.wait_for_timeout(1000)


def button(scope: Any, name: str) -> Any:
    """The widget button whose text is ``name``."""
    return scope.locator("button.jupyter-button").filter(
        has_text=re.compile(f"^\\s*{re.escape(name)}\\s*$")
    )


def status_line(form: Any) -> str:
    """The form's last line: its status (what the form says happened)."""
    text = form.locator(":scope > .widget-html").last.inner_text()
    return " ".join(str(text).split())


def wait_text(page: Any, locator: Any, pattern: str, timeout: float = 30_000) -> re.Match[str]:
    """Wait until the text of ``locator`` matches ``pattern``; return the match."""
    left = timeout
    while True:
        text = str(locator.inner_text())
        found = re.search(pattern, text)
        if found:
            return found
        if left <= 0:
            raise AssertionError(f"{pattern!r} never showed; the page shows {text!r}")
        page.wait_for_timeout(200)
        left -= 200


def wait_status(page: Any, form: Any, pattern: str, timeout: float = 30_000) -> str:
    """Wait until the form's status line matches ``pattern``; return it."""
    left = timeout
    while True:
        text = status_line(form)
        if re.search(pattern, text):
            return text
        if left <= 0:
            raise AssertionError(f"the form's status never matched {pattern!r}; it says {text!r}")
        page.wait_for_timeout(200)
        left -= 200
