"""An interactive table in JupyterLab: search, sort and a column filter over all 10,000 rows;
a frame past the page budget shows the rows that fit and says so, and the DataTables
bundle is in the saved notebook once."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.browser._page import open_notebook, outputs, run_cells, save_notebook, screenshot
from toolkit.display import MAX_TABLE_BYTES

CELL = """\
import pandas as pd
from toolkit.display import interactive

frame = pd.DataFrame({
    "lease": [f"database/creds/role-{i % 7}/{i:05d}" for i in range(10_000)],
    "n": range(10_000),
})
interactive(frame)
"""


def _notebook(folder: Path, *sources: str, name: str = "interactive_table_check.ipynb") -> str:
    cells = [
        {
            "cell_type": "code",
            "metadata": {},
            "source": source,
            "outputs": [],
            "execution_count": None,
        }  # fmt: skip
        for source in sources or (CELL,)
    ]
    notebook = {
        "cells": cells,
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


BIG = """\
import pandas as pd
from toolkit.display import interactive

rows = 122_000
big = pd.DataFrame({
    "lease": [f"database/creds/role-{i % 7}/{i:06d}" for i in range(rows)],
    "ttl": pd.to_timedelta(range(rows), unit="s"),
    "n": range(rows),
})
interactive(big)
"""
SMALL = "interactive(big.head(7))"


def test_a_122000_row_frame_stays_within_the_budget_and_the_bundle_is_saved_once(
    page: Any, lab_kernels: str, workdir: Path
) -> None:
    name = _notebook(workdir, BIG, SMALL, name="interactive_table_budget.ipynb")
    open_notebook(page, lab_kernels, name)
    run_cells(page, "interactive(big)", SMALL)
    tables = page.locator("table.dataTable")
    tables.nth(1).locator("tbody tr").first.wait_for(timeout=60_000)

    # What each table put in the page: the first carries the bundle, the second not.
    # (The bundle is about 0.97 MB; it holds the one definition of injectCSS.)
    first, second = (o["data"]["text/html"] for o in outputs(page) if "data" in o)
    assert len(first) <= MAX_TABLE_BYTES + 1_000_000 and len(second) < 50_000
    assert "function injectCSS(" in first and "function injectCSS(" not in second

    # The big one shows the rows that fit, and its note says how many of how many.
    note = page.get_by_text(re.compile(r"The first [\d,]+ of 122,000 rows")).first
    note.wait_for(timeout=30_000)
    shown = int(re.search(r"The first ([\d,]+)", note.inner_text())[1].replace(",", ""))
    infos = page.locator(".dt-info").all_inner_texts()
    assert re.search(rf"of {shown:,} entries", infos[0]), infos
    # The second is a DataTable too (small: no info line), drawn from the one bundle.
    assert tables.count() == 2 and tables.nth(1).locator("tbody tr").count() == 7

    saved = save_notebook(page, workdir / name)
    assert json.dumps(saved).count("function injectCSS(") == 1
    size = (workdir / name).stat().st_size
    assert size < 2 * (MAX_TABLE_BYTES + 1_000_000), size  # not the 22 MB of every row
    screenshot(page, "interactive-table-budget")
