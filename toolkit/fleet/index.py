"""The fleet run's index: one self-contained page, and the same as JSON."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["write_index"]

_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;color:#111}"
    "table{border-collapse:collapse}th,td{border:1px solid #bbb;padding:.3em .6em;"
    "text-align:left;vertical-align:top}th{background:#eee}"
    ".passed{color:#05603a;font-weight:bold}.failed{color:#b42318;font-weight:bold}"
    ".incomplete{color:#b54708;font-weight:bold}.skipped{color:#555;font-weight:bold}"
)
# Failures first, then incomplete runs: what needs a look is at the top.
_ORDER = {"failed": 0, "incomplete": 1, "passed": 2, "skipped": 3}


def write_index(
    folder: Path, runbook: str, results: list[dict[str, Any]], notes: Sequence[str] = ()
) -> Path:
    """Write ``index.html`` and ``results.json`` into ``folder``; the page's path.

    ``notes`` are what the run says besides the results (a history not compacted)."""
    folder.mkdir(parents=True, exist_ok=True)
    when = datetime.now(UTC).isoformat(timespec="seconds")
    (folder / "results.json").write_text(
        json.dumps(
            {"runbook": runbook, "finished_at": when, "results": results, "notes": list(notes)},
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    ordered = sorted(results, key=lambda r: _ORDER.get(r["status"], 0))
    rows = "".join(_row(r) for r in ordered)
    counts = ", ".join(
        f"{sum(1 for r in results if r['status'] == o)} {o}"
        for o in ("passed", "incomplete", "failed", "skipped")
    )
    title = html.escape(f"Fleet run of {runbook}")
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1>"
        f"<p>{counts}; finished {html.escape(when)} UTC.</p>"
        + "".join(f"<p class='note'>{html.escape(note)}</p>" for note in notes)
        + "<table><tr><th>target</th><th>kind</th><th>address</th><th>result</th>"
        "<th>seconds</th><th>key numbers</th><th>notebook</th><th>evidence</th></tr>"
        f"{rows}</table></body></html>"
    )
    path = folder / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


def _row(result: dict[str, Any]) -> str:
    status = result["status"]
    verdict = f"<span class='{status}'>{status}</span>"
    if result.get("error"):
        verdict += f"<br>{html.escape(str(result['error']))}"
    numbers = "<br>".join(
        f"{html.escape(str(k))}: {html.escape(str(v))}" for k, v in result["summary"].items()
    )
    notebook = _link(result.get("notebook_html") or result.get("notebook_path"))
    folder = result.get("evidence_folder")
    evidence = (
        _link(folder + "/", f"{len(result.get('evidence_paths') or [])} file(s)") if folder else ""
    )
    return (
        f"<tr><td>{html.escape(result['name'])}</td><td>{html.escape(result['kind'])}</td>"
        f"<td>{html.escape(result['address'])}</td><td>{verdict}</td>"
        f"<td>{result['seconds']:.1f}</td><td>{numbers}</td><td>{notebook}</td>"
        f"<td>{evidence}</td></tr>"
    )


def _link(path: str | None, text: str | None = None) -> str:
    if not path:
        return ""
    shown = text if text is not None else Path(path).name
    return f"<a href='{html.escape(quote(path))}'>{html.escape(shown)}</a>"
