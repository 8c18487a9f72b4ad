"""The rekey ceremony carried through in JupyterLab, and saved with nothing secret in it."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests.browser._ceremony import carry_out_ceremony
from tests.browser._page import focus_on, form, open_notebook, run_all, save_notebook, screenshot
from toolkit import Sensitive

NOTEBOOK = "04_rekey_ceremony.ipynb"


def spellings(share: str) -> list[str]:
    """A share as hex and as base64, the two ways the server hands shares out."""
    try:
        raw = bytes.fromhex(share)
    except ValueError:
        raw = base64.b64decode(share)
    return [raw.hex(), base64.b64encode(raw).decode()]


def test_the_rekey_ceremony_is_carried_through_in_jupyterlab_and_the_saved_notebook_holds_no_secret(
    page: Any,
    lab_kernels: str,
    workdir: Path,
    current_shares: list[Sensitive],
    init_secrets: list[str],
) -> None:
    open_notebook(page, lab_kernels, NOTEBOOK)
    run_all(page)

    new = carry_out_ceremony(page, current_shares, shares=3, threshold=2)
    focus_on(page, form(page, "Rekey ceremony"))
    screenshot(page, "ceremony-lab-complete")

    saved = save_notebook(page, workdir / NOTEBOOK)
    text = json.dumps(saved)
    assert "widgets" in saved["metadata"], "the widget state is saved, and so checked"
    secrets = [*init_secrets, *(s for share in new for s in spellings(share))]
    leaked = [s[:6] + "…" for s in secrets if s in text]
    assert not leaked, f"secrets in the saved notebook: {leaked}"
