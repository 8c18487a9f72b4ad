"""Running a runbook headless with papermill, as operators do: no error output, no secret saved."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import papermill

from toolkit.leakcheck import scan_notebook

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def run_runbook(
    name: str,
    tmp_path: Path,
    parameters: Mapping[str, Any],
    secrets: Sequence[str] = (),
    *,
    timeout: float | None = None,
) -> dict[str, Any]:
    """Execute ``notebooks/<name>`` with ``parameters``; the executed notebook, checked.

    ``timeout`` bounds each cell (seconds), and the kernel's start.

    It must end with no error output, and a secret scan (with ``secrets``, the
    values known to be secret in this run) must find nothing in its outputs or
    saved widget state.
    """
    source = NOTEBOOKS / name
    output = tmp_path / Path(name).name
    bounds: dict[str, Any] = {}
    if timeout is not None:
        bounds = {"execution_timeout": timeout, "start_timeout": timeout}
    papermill.execute_notebook(
        str(source),
        str(output),
        parameters=dict(parameters),
        kernel_name="python3",
        cwd=str(source.parent),
        progress_bar=False,
        **bounds,
    )
    notebook: dict[str, Any] = json.loads(output.read_text())
    errors = [
        out
        for cell in notebook["cells"]
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert errors == []
    assert scan_notebook(output, extra=secrets) == []
    return notebook
