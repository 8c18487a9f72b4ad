"""Re-execute the runbooks and save their outputs, as nbval compares them (``make notebooks``).

Each notebook runs in a fresh kernel in its own folder, with every variable that
would point it at a server removed, so that it starts its own demo sandbox as a
reader opening it does ("started in this kernel"). The outputs are saved in
place; what changes from run to run (addresses, times, random ids) is masked by
``notebooks/sanitize.cfg`` when nbval compares. Timing metadata is not kept, so
that a run changes only what the notebook shows.

    python -m tests.regenerate_notebooks                 # every runbook and rehearsal
    python -m tests.regenerate_notebooks notebooks/05_lease_audit.ipynb
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
# Variables that point a kernel at a server or a sandbox: none may leak into the run.
_POINTERS = (
    "TOOLKIT_SANDBOX_ADDRESS",
    "TOOLKIT_SANDBOX_TOKEN",
    "VAULT_ADDR",
    "VAULT_TOKEN",
    "VAULT_NAMESPACE",
    "BAO_ADDR",
    "BAO_TOKEN",
    "BAO_NAMESPACE",
    "TFE_ADDRESS",
    "TFE_TOKEN",
)
CELL_TIMEOUT = 600


def all_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + sorted(
        (NOTEBOOKS / "rehearsals").glob("*.ipynb")
    )


def regenerate(path: Path) -> None:
    """Execute ``path`` top to bottom in a fresh kernel and save it with its new outputs."""
    notebook = nbformat.read(path, as_version=4)
    for name in _POINTERS:
        os.environ.pop(name, None)
    client = NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        record_timing=False,
        store_widget_state=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(notebook, path)


def main(argv: Sequence[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or all_notebooks()
    for path in paths:
        started = time.monotonic()
        print(f"{path.relative_to(NOTEBOOKS.parent)} ...", end=" ", flush=True)
        regenerate(path)
        print(f"{time.monotonic() - started:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
