"""Evidence: a set of audit frames filed with a header that says where they came from.

An audit that cannot be filed proves nothing later. :func:`save` writes a set of
frames in the forms auditors ask for, each carrying the same :class:`Header`:

- ``<name>.html``: one self-contained page (inline style, no script), the header
  first, then every frame;
- ``<name>.xlsx``: a ``header`` sheet, then a sheet per frame. Excel has no time
  zones, so times are written as UTC and the header says so;
- ``<name>-<frame>.csv``: a file per frame, with the header in the sidecar
  ``<name>.header.json``;
- ``<name>-<frame>.parquet``: a file per frame, the header in the file's metadata
  (``DataFrame.attrs``, which pandas stores and reads back).

The header names the server and its version, the cluster or organization, the
namespace, the token's accessor and display name (never the token), the time in
UTC, the toolkit's version, the runbook and its parameters with anything secret
left out. :func:`stamp` puts the same header into a frame's ``attrs``.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from ._errors import InputError
from ._masking import HIDDEN, Sensitive

__all__ = ["FORMATS", "Header", "LEFT_OUT", "header_of", "save", "stamp"]

FORMATS = ("html", "xlsx", "csv", "parquet")
LEFT_OUT = "<left out>"
# Parameter names whose values are secrets; `*_env` names a variable, not a value.
_SECRET_NAME = re.compile(r"token|password|passwd|secret|share|private|credential|key$", re.I)
# A frame name becomes part of a file name and a sheet name (31 characters at most).
_FRAME_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,30}$")


@dataclass(frozen=True)
class Header:
    """Where a piece of evidence came from. Holds no secret."""

    server: str
    server_version: str | None = None
    cluster: str | None = None
    namespace: str | None = None
    token_accessor: str | None = None
    token_display_name: str | None = None
    generated_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    toolkit_version: str = ""
    runbook: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    # The server's own time (its ``Date`` header) when the evidence was gathered.
    server_time: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain values only (the time as ISO 8601 UTC), ready for JSON."""
        data = asdict(self)
        data["generated_at"] = self.generated_at.astimezone(UTC).isoformat(timespec="seconds")
        if self.server_time is not None:
            data["server_time"] = self.server_time.astimezone(UTC).isoformat(timespec="seconds")
        data["parameters"] = {k: _plain(v) for k, v in self.parameters.items()}
        return data

    def rows(self) -> list[tuple[str, str]]:
        """(label, text) pairs, the order an auditor reads them in."""
        data = self.as_dict()
        params = data.pop("parameters")
        rows = [(k.replace("_", " "), "" if v is None else str(v)) for k, v in data.items()]
        rows += [(f"parameter {k}", json.dumps(v)) for k, v in params.items()]
        return rows


def header_of(
    client: Any,
    *,
    runbook: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    organization: str | None = None,
) -> Header:
    """The header for evidence gathered through ``client`` (either service's client).

    For the secrets server it reads ``GET /sys/seal-status`` (version, cluster) and
    ``GET /auth/token/lookup-self`` (accessor, display name); for the platform the
    organization is the one the audit ran on. A read that fails leaves its fields
    ``None`` rather than failing the filing: the evidence itself is what matters.
    """
    from . import __version__

    facts: dict[str, Any] = {}
    if hasattr(client, "seal") and hasattr(client, "tokens"):
        facts["namespace"] = getattr(client, "namespace", None) or None
        try:
            status = client.seal.status()
            facts["server_version"] = status.get("version")
            facts["cluster"] = status.get("cluster_name") or status.get("cluster_id")
        except Exception:  # noqa: BLE001 - a missing fact is not worth losing the evidence
            pass
        try:
            me = client.tokens.lookup_self()
            facts["token_accessor"] = me.get("accessor")
            facts["token_display_name"] = me.get("display_name")
        except Exception:  # noqa: BLE001
            pass
    else:
        facts["cluster"] = organization
    http = getattr(client, "http", None) or getattr(client, "_http", None)
    if http is not None and hasattr(http, "server_now"):
        facts["server_time"] = http.server_now()
    return Header(
        server=str(getattr(client, "address", "")),
        toolkit_version=__version__,
        runbook=runbook,
        parameters=clean_parameters(parameters or {}),
        **facts,
    )


def clean_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters with every secret value replaced by ``<left out>``.

    A value is secret when it is :class:`Sensitive` or when its name says it is
    (``token``, ``password``, ``share``, ...); ``token_env`` names a variable and
    stays.
    """
    cleaned: dict[str, Any] = {}
    for name, value in parameters.items():
        secret = isinstance(value, Sensitive) or (
            _SECRET_NAME.search(name) is not None and not name.endswith("_env")
        )
        cleaned[name] = LEFT_OUT if secret else _plain(value)
    return cleaned


def stamp(frame: pd.DataFrame, header: Header) -> pd.DataFrame:
    """``frame`` with the header in ``attrs["evidence"]`` (the frame itself, changed)."""
    frame.attrs["evidence"] = header.as_dict()
    return frame


def save(
    frames: Mapping[str, pd.DataFrame],
    folder: str | Path,
    header: Header,
    *,
    name: str = "evidence",
    formats: Iterable[str] = FORMATS,
    history: str | Path | None = None,
) -> list[Path]:
    """File ``frames`` (name → frame) into ``folder`` in every format; the paths written.

    With ``history`` (or ``TOOLKIT_HISTORY`` set) the frames are also appended to
    that history (:func:`toolkit.history.append`); those files are not in the
    answer.

    Nothing is written when an argument is wrong (an unknown format, a frame
    name that cannot be a file name, an existing file of the same name).
    """
    wanted = tuple(formats)
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown:
        raise InputError(
            f"unknown evidence format {unknown[0]!r}: choose from {', '.join(FORMATS)}"
        )
    for label in (name, *frames):
        if not _FRAME_NAME.match(label):
            raise InputError(
                f"evidence name {label!r}: use letters, digits, '.', '_' or '-' (at most 31)"
            )
    out = Path(folder)
    targets = _targets(out, name, list(frames), wanted)
    existing = [p for p in targets if p.exists()]
    if existing:
        raise InputError(f"{existing[0]} exists already: file each run into its own folder")
    out.mkdir(parents=True, exist_ok=True)
    safe = {k: stamp(_safe_frame(v), header) for k, v in frames.items()}
    written: list[Path] = []
    if "html" in wanted:
        written.append(_write_html(out / f"{name}.html", safe, header))
    if "xlsx" in wanted:
        written.append(_write_xlsx(out / f"{name}.xlsx", safe, header))
    if "csv" in wanted:
        sidecar = out / f"{name}.header.json"
        sidecar.write_text(json.dumps(header.as_dict(), indent=2) + "\n")
        written.append(sidecar)
        for label, frame in safe.items():
            path = out / f"{name}-{label}.csv"
            frame.to_csv(path, index=_keeps_index(frame))
            written.append(path)
    if "parquet" in wanted:
        for label, frame in safe.items():
            path = out / f"{name}-{label}.parquet"
            ready = _parquet_ready(frame)
            ready.attrs["evidence_frame"] = label  # a fleet's history reads it back
            ready.to_parquet(path, index=_keeps_index(frame))
            written.append(path)
    keep = history or os.environ.get("TOOLKIT_HISTORY")
    if keep:
        from . import history as store

        store.append(keep, safe, header)
    return written


def _targets(out: Path, name: str, labels: list[str], formats: tuple[str, ...]) -> list[Path]:
    paths = []
    if "html" in formats:
        paths.append(out / f"{name}.html")
    if "xlsx" in formats:
        paths.append(out / f"{name}.xlsx")
    if "csv" in formats:
        paths.append(out / f"{name}.header.json")
        paths += [out / f"{name}-{label}.csv" for label in labels]
    if "parquet" in formats:
        paths += [out / f"{name}-{label}.parquet" for label in labels]
    return paths


def _plain(value: Any) -> Any:
    if isinstance(value, Sensitive):
        return LEFT_OUT
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _safe_frame(original: pd.DataFrame) -> pd.DataFrame:
    """A copy in which no cell holds a :class:`Sensitive` (each becomes ``<hidden>``), and
    whose ``attrs`` are plain JSON values (Parquet stores them as JSON)."""
    attrs: dict[Hashable, Any] = {str(k): _plain(v) for k, v in original.attrs.items()}
    kept = original.attrs
    # pandas deep-copies attrs into every copy, and a Sensitive refuses to be copied.
    original.attrs = {}
    try:
        frame = original.copy()
    finally:
        original.attrs = kept
    frame.attrs = attrs
    for column in frame.columns:
        series = frame[column]
        if series.dtype == object and series.map(lambda v: isinstance(v, Sensitive)).any():
            frame[column] = series.map(lambda v: HIDDEN if isinstance(v, Sensitive) else v)
    return frame


def _keeps_index(frame: pd.DataFrame) -> bool:
    # A named index is the record id; a range index carries nothing.
    return frame.index.name is not None or isinstance(frame.index, pd.MultiIndex)


def _parquet_ready(frame: pd.DataFrame) -> pd.DataFrame:
    # Parquet needs one type a column: object columns of mixed values become text.
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(
                lambda v: v if v is None or isinstance(v, str) else json.dumps(_plain(v))
            )
    return frame


def _utc_naive(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.DatetimeTZDtype):
            frame[column] = frame[column].dt.tz_convert("UTC").dt.tz_localize(None)
        elif frame[column].dtype == object:
            frame[column] = frame[column].map(
                lambda v: (
                    v
                    if v is None or isinstance(v, str | int | float | bool)
                    else json.dumps(_plain(v))
                )
            )
    if isinstance(frame.index, pd.DatetimeIndex) and frame.index.tz is not None:
        frame.index = frame.index.tz_convert("UTC").tz_localize(None)
    return frame


def _write_xlsx(path: Path, frames: Mapping[str, pd.DataFrame], header: Header) -> Path:
    rows = [
        *header.rows(),
        ("times", "all times in this workbook are UTC (Excel has no time zones)"),
    ]
    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        pd.DataFrame(rows, columns=["field", "value"]).to_excel(
            writer, sheet_name="header", index=False
        )
        for label, frame in frames.items():
            _utc_naive(frame).to_excel(writer, sheet_name=label, index=_keeps_index(frame))
    return path


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;color:#111}"
    "table{border-collapse:collapse;margin:0 0 2em 0}"
    "th,td{border:1px solid #bbb;padding:.25em .5em;text-align:left;vertical-align:top}"
    "th{background:#eee}caption{text-align:left;font-weight:bold;padding:.5em 0}"
)


def _write_html(path: Path, frames: Mapping[str, pd.DataFrame], header: Header) -> Path:
    title = html.escape(f"Evidence: {header.runbook or 'audit'} on {header.server}")
    head_rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in header.rows()
    )
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>",
        f"<style>{_STYLE}</style></head><body><h1>{title}</h1>",
        f"<table><caption>Header</caption>{head_rows}</table>",
    ]
    for label, frame in frames.items():
        parts.append(f"<h2>{html.escape(label)} ({len(frame)} rows)</h2>")
        parts.append(frame.to_html(escape=True, na_rep="", border=0))
    parts.append("</body></html>")
    path.write_text("".join(parts), encoding="utf-8")
    return path
