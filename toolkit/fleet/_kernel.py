"""What the fleet runner and a runbook's kernel tell each other.

The runner sets the environment names below in every kernel it starts (the target's
name, where its token came from, the runbook's hash); the runbook reads them for its
provenance (:meth:`toolkit.runbook.Run.provenance`) and shows its key numbers with
:func:`summary`, which the runner reads back from the executed notebook. Only names
and one display call live here: the runbook imports this module, never the runner.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ENV_FLEET_TARGET",
    "ENV_FLEET_TOKEN_SOURCE",
    "ENV_RUNBOOK_SHA256",
    "SUMMARY_MIME",
    "summary",
]

# Set by the fleet runner in the kernel's environment: the target's name, where its
# token came from, and the runbook's hash as given to the runner.
ENV_FLEET_TARGET = "TOOLKIT_FLEET_TARGET"
ENV_FLEET_TOKEN_SOURCE = "TOOLKIT_FLEET_TOKEN_SOURCE"
ENV_RUNBOOK_SHA256 = "TOOLKIT_RUNBOOK_SHA256"
# The kind of output that carries a runbook's key numbers back to the runner.
SUMMARY_MIME = "application/vnd.toolkit.summary+json"


def summary(**numbers: Any) -> None:
    """Show a runbook's key numbers; a fleet run collects them into its index.

    In a notebook it shows a one-line text (``leases: 1200, expiring: 3``); the
    fleet runner reads the same values from the executed notebook.
    """
    from IPython.display import display

    text = ", ".join(f"{k}: {v}" for k, v in numbers.items())
    display({SUMMARY_MIME: numbers, "text/plain": text}, raw=True)
