"""Writes shown before they are sent, and rehearsals that refuse a live target.

A runbook pointed at production reads only. Each write it could make is first
shown as a plan: one row per request, in the operator's words, with the method
and the path it would go to and the body with secrets left out; whether it is
sent is the runbook's ``apply`` parameter (and, for what cannot be undone, a
parameter of its own). A rehearsal notebook, which exists to show writes,
refuses anything but the sandbox before it sends a byte::

    plan([Write("rotate the static role", "POST", "database/rotate-role/orders")], apply=apply)
    refuse_live(target, "the key lifecycle rehearsal")
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ._coverage import PlanFrame
from ._errors import InputError
from ._masking import clean_parameters

__all__ = ["PLAN_COLUMNS", "Write", "plan", "refuse_live"]

PLAN_COLUMNS = ["action", "method", "path", "body", "status"]
SANDBOX = "sandbox"


@dataclass(frozen=True)
class Write:
    """One request a runbook would send: what it does, ``METHOD path``, and its body."""

    action: str
    method: str
    path: str
    body: Mapping[str, Any] = field(default_factory=dict)


def plan(writes: Iterable[Write], *, apply: bool, held_by: str = "apply is False") -> PlanFrame:
    """The writes as a frame (``action``, ``method``, ``path``, ``body``, ``status``).

    ``status`` is ``will send`` when ``apply`` is true, else ``not sent: <held_by>``.
    The body is JSON with every secret value (by type or by name, as in filed
    evidence) replaced by ``<left out>``, so a plan can be saved with the notebook.
    """
    status = "will send" if apply else f"not sent: {held_by}"
    rows = [
        {
            "action": w.action,
            "method": w.method.upper(),
            "path": w.path.lstrip("/"),
            "body": json.dumps(clean_parameters(w.body), sort_keys=True) if w.body else "",
            "status": status,
        }
        for w in writes
    ]
    return pd.DataFrame(rows, columns=PLAN_COLUMNS).astype("string")


def refuse_live(target: str, what: str) -> None:
    """Raise :class:`InputError` unless ``target`` is the sandbox: ``what`` writes on purpose."""
    if target != SANDBOX:
        raise InputError(
            f"{what} writes on purpose and runs against the sandbox only; "
            f"target is {target!r}. Use the runbook (read-only unless apply=True) on a live server."
        )
