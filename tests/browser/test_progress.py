"""A view that walks a collection shows one progress bar in JupyterLab, without asking."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.browser._page import open_notebook, output_text, outputs, run_cells, screenshot
from toolkit.sandbox import Sandbox

CELL = """\
import toolkit

bao = toolkit.connect_secrets(sandbox=True)
holders = bao.access.who_can("read", "secret/data/app")
"""

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def test_a_cell_that_walks_the_server_shows_one_bar_that_ends_full(
    page: Any, lab_kernels: str, workdir: Path, sandbox: Sandbox
) -> None:
    name = "progress_check.ipynb"
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
    (workdir / name).write_text(json.dumps(notebook))
    open_notebook(page, lab_kernels, name)
    run_cells(page, "who_can")
    bars = [o for o in outputs(page) if WIDGET_MIME in o.get("data", {})]
    assert len(bars) == 1, outputs(page)  # the cell's eight fan-outs on one bar
    progress = page.locator(".jp-OutputArea-output progress, .jp-OutputArea-output .progress-bar")
    progress.first.wait_for(timeout=30_000)
    text = output_text(page)
    found = re.search(r"(\d+)/(\d+)\s*\[", text)  # tqdm spaces with U+2007
    assert found and int(found[1]) == int(found[2]) > 1, text
    screenshot(page, "progress-bar")
