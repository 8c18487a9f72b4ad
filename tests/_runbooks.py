"""Running a runbook headless with papermill, as operators do: no error output, no secret saved."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import papermill

from toolkit.leakcheck import scan_notebook

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
# The runbooks, as the package ships them: numbered notebooks in notebooks/.
RUNBOOKS = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def runbook_code(name: str) -> str:
    """The code cells of ``notebooks/<name>``, joined."""
    cells = json.loads((NOTEBOOKS / name).read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def services_of(name: str) -> set[str]:
    """Which services a runbook connects to: ``platform``, ``secrets`` or both."""
    code = runbook_code(name)
    return {s for s in ("platform", "secrets") if f"connect_{s}(" in code}


def engines_of(name: str) -> set[str]:
    """The secrets engines a runbook calls, by the client's attribute (its default mount)."""
    from toolkit.secrets.engines import ENGINE_AREAS

    code = runbook_code(name)
    return {mount for mount in ENGINE_AREAS if re.search(rf"\.{mount}\.", code)}


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
