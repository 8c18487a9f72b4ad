"""In a kernel, a toolkit error is shown as its last line (issue 23), and papermill
still fails the run on it with that line as the error's value."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill
import pytest

CELL = (
    "import toolkit\n"
    "raise toolkit.PermissionDenied(403, ['permission denied'], method='GET', url='http://x/v1/a')"
)


def test_papermill_fails_on_a_toolkit_error_shown_in_one_line(tmp_path: Path) -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(CELL)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    source, output = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nbformat.write(notebook, source)
    with pytest.raises(papermill.PapermillExecutionError) as caught:
        papermill.execute_notebook(str(source), str(output), progress_bar=False)
    assert caught.value.evalue == "GET http://x/v1/a answered 403: permission denied"
    (error,) = [
        o
        for o in json.loads(output.read_text())["cells"][-1]["outputs"]
        if o["output_type"] == "error"
    ]
    shown = "\n".join(error["traceback"])
    assert "raise toolkit.PermissionDenied" not in shown  # no frames: one line
    assert error["traceback"][-1].endswith("permission denied")
