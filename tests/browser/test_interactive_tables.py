"""An interactive table in JupyterLab: search, sort and a column filter over all 10,000 rows."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.browser._page import open_notebook, run_cells, screenshot

CELL = """\
import pandas as pd
from toolkit.display import interactive

frame = pd.DataFrame({
    "lease": [f"database/creds/role-{i % 7}/{i:05d}" for i in range(10_000)],
    "n": range(10_000),
})
interactive(frame)
"""


def _notebook(folder: Path) -> str:
    name = "interactive_table_check.ipynb"
    cell = {"cell_type": "code", "metadata": {}, "source": CELL, "outputs": [],
            "execution_count": None}  # fmt: skip
    notebook = {
        "cells": [cell],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },  # fmt: skip
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (folder / name).write_text(json.dumps(notebook))
    return name


def _info(page: Any) -> str:
    return str(page.locator(".dt-info").first.inner_text())


def _first_row(page: Any) -> list[str]:
    cells = page.locator("table.dataTable tbody tr").first.locator("td")
    return [str(t) for t in cells.all_inner_texts()]


def test_a_10000_row_frame_is_searched_sorted_and_filtered_in_the_page_over_every_row(
    page: Any, lab_kernels: str, workdir: Path
) -> None:
    open_notebook(page, lab_kernels, _notebook(workdir))
    run_cells(page, "interactive(frame)")
    page.locator("table.dataTable tbody tr").first.wait_for(timeout=60_000)
    assert re.search(r"of 10,000 entries", _info(page)), _info(page)
    assert "sample" not in page.locator(".jp-OutputArea-output").first.inner_text()

    # Search: every row is in the page, so the count is over all 10,000.
    search = page.locator(".jp-OutputArea-output .dt-search input").first
    search.fill("role-3/")
    page.wait_for_function(
        "() => /filtered from 10,000/.test(document.querySelector('.dt-info').innerText)"
    )
    assert re.search(r"of 1,429 entries \(filtered from 10,000 total", _info(page)), _info(page)
    search.fill("")

    # Sort: the header of n, twice, puts the last row first.
    # (the header's text can be selected; its order icon sorts, as DataTables draws it)
    header = page.locator("table.dataTable thead th", has_text=re.compile(r"^\s*n\s*$")).first
    order = header.locator(".dt-column-order")
    order.click()
    page.wait_for_timeout(300)
    order.click()
    page.wait_for_function(
        "() => document.querySelector('table.dataTable tbody tr td:last-child')"
        ".innerText.trim() === '9999'"
    )
    assert _first_row(page)[-1] == "9999"

    # A column filter (the footer's box under "lease"): one row of 10,000.
    footer = page.locator("table.dataTable tfoot input").first
    footer.click()
    footer.press_sequentially("/04242")  # typed, as the filter listens for keys
    page.wait_for_function("() => /of 1 entr/.test(document.querySelector('.dt-info').innerText)")
    assert "filtered from 10,000" in _info(page)
    assert "database/creds/role-0/04242" in _first_row(page)
    screenshot(page, "interactive-table-filtered")
