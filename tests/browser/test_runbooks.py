"""Every runbook, opened in JupyterLab and run with Run All: no error, live widgets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.browser._page import (
    NOTEBOOKS,
    WIDGET_AS_TEXT,
    cut_labels,
    focus_on,
    open_notebook,
    output_text,
    outputs,
    rendered_widgets,
    run_all,
    screenshot,
)

RUNBOOKS = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
# The index of the first code cell whose outputs hold a picture (-1: none).
FIRST_CHART = """() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  for (let i = 0; i < cells.length; i++) {
    const outputs = cells.get(i).outputs;
    if (!outputs) continue;
    for (let j = 0; j < outputs.length; j++) {
      if ((outputs.get(j).data || {})["image/png"]) return i;
    }
  }
  return -1;
}"""


def widget_outputs(cell_outputs: list[dict[str, Any]]) -> int:
    return sum(1 for o in cell_outputs if WIDGET_MIME in (o.get("data") or {}))


def stored_widget_outputs(name: str) -> int:
    notebook = json.loads((NOTEBOOKS / name).read_text())
    return widget_outputs([o for c in notebook["cells"] for o in c.get("outputs", [])])


@pytest.mark.parametrize("name", RUNBOOKS)
def test_a_runbook_runs_in_jupyterlab_without_errors_and_its_widgets_render(
    page: Any, lab_kernels: str, sandbox: Any, name: str
) -> None:
    open_notebook(page, lab_kernels, name)
    run_all(page)

    produced = outputs(page)
    errors = [o for o in produced if o.get("output_type") == "error"]
    assert not errors, [f"{e['ename']}: {e['evalue']}" for e in errors]
    stderr = [o["text"] for o in produced if o.get("name") == "stderr"]
    assert not stderr, stderr
    executed = page.evaluate(
        """() => window.jupyterapp.shell.currentWidget.content.widgets
          .filter(c => c.model.type === 'code').map(c => c.model.executionCount)"""
    )
    assert executed and all(isinstance(n, int) for n in executed), executed

    live = widget_outputs(produced)
    assert live >= stored_widget_outputs(Path(name).name)
    page.wait_for_function(
        f"() => document.querySelectorAll('.jp-OutputArea-output > .jupyter-widgets').length >= {live}",
        timeout=30_000,
    )
    assert rendered_widgets(page) >= live
    assert cut_labels(page) == []
    shown = output_text(page)
    assert not WIDGET_AS_TEXT.search(shown), WIDGET_AS_TEXT.search(shown)
    # The end state worth a look: the runbook's first chart. JupyterLab keeps only the
    # cells near the view in the page, so the notebook is first scrolled to that cell.
    first_chart = page.evaluate(FIRST_CHART)
    if first_chart >= 0:
        page.evaluate(
            "i => window.jupyterapp.shell.currentWidget.content.scrollToItem(i, 'center')",
            first_chart,
        )
        chart = page.locator(".jp-RenderedImage img").first
        chart.wait_for(timeout=10_000)
        focus_on(page, chart)
        # Whole, mid-picture, the cell that drew it above (not cut at the bottom edge).
        chart.evaluate("e => e.scrollIntoView({block: 'center'})")
    screenshot(page, f"runbook-{Path(name).stem}")
