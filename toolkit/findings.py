"""Findings: what an audit found wrong, one row each, in one shape for every area.

An inventory lists objects; an operator at 3 a.m. needs to know which of them
are a problem. Every audit's findings are a frame with the columns
``severity`` (an ordered category, worst first), ``area``, ``object`` (what the
finding is about, in the service's own naming) and ``reason`` (a sentence).
Frames from several audits concatenate with :func:`combine`, which keeps the
order: worst first, then by area and object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from ._coverage import BuiltFrame, carries_coverage

__all__ = ["FINDING_COLUMNS", "SEVERITIES", "Finding", "combine", "findings_frame"]

SEVERITIES = ("critical", "high", "medium", "low", "info")
FINDING_COLUMNS = ("severity", "area", "object", "reason")
_SEVERITY = pd.CategoricalDtype(list(SEVERITIES), ordered=True)


@dataclass(frozen=True)
class Finding:
    """One thing an audit found: how bad, where, about what, and why."""

    severity: str
    area: str
    object: str
    reason: str

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")


def findings_frame(findings: Iterable[Finding]) -> BuiltFrame:
    """The findings as a frame: worst first, then by area and object; a range index."""
    rows = list(findings)
    frame = pd.DataFrame(
        {
            "severity": pd.Series([f.severity for f in rows], dtype=_SEVERITY),
            "area": pd.Series([f.area for f in rows], dtype="string"),
            "object": pd.Series([f.object for f in rows], dtype="string"),
            "reason": pd.Series([f.reason for f in rows], dtype="string"),
        }
    )
    return _ordered(frame)


@carries_coverage("findings.combine")
def combine(*frames: pd.DataFrame) -> pd.DataFrame:
    """Several audits' findings as one frame, in the same order as :func:`findings_frame`."""
    parts = [f.loc[:, list(FINDING_COLUMNS)] for f in frames]
    if not parts:
        return findings_frame([])
    frame = pd.concat(parts, ignore_index=True)
    frame["severity"] = frame["severity"].astype(_SEVERITY)
    return _ordered(frame)


def _ordered(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["severity", "area", "object"], kind="stable").reset_index(drop=True)
