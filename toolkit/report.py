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
left out; for a runbook's run also the token's entity or the platform user, the
operating-system user and host, the runbook's SHA-256, the fleet target and where
its token came from, start and end, and what the views could see (its coverage).
``MANIFEST.json`` lists every file filed with its SHA-256. :func:`stamp` puts the
same header into a frame's ``attrs``.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import io
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ._errors import InputError
from ._frames import keeps_index, parquet_ready, safe_frame
from ._masking import LEFT_OUT, clean_parameters, plain
from ._provenance import Header
from ._version import __version__

__all__ = [
    "FORMATS",
    "Header",
    "LEFT_OUT",
    "MANIFEST",
    "clean_parameters",
    "header_of",
    "save",
    "stamp",
    "verify",
]

FORMATS = ("html", "xlsx", "csv", "parquet")
# A frame name becomes part of a file name and a sheet name (31 characters at most).
_FRAME_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,30}$")


def header_of(
    client: Any,
    *,
    runbook: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    organization: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> Header:
    """The header for evidence gathered through ``client`` (either service's client).

    For the secrets server it reads ``GET /sys/seal-status`` (version, cluster) and
    ``GET /auth/token/lookup-self`` (accessor, display name); for the platform the
    organization is the one the audit ran on. A read that fails leaves its fields
    ``None`` rather than failing the filing: the evidence itself is what matters.
    The token's entity is read with its accessor; on the platform, the token's
    owner (a user, or the kind of token) from ``GET /account/details``.
    ``provenance`` adds the run's own facts (operating-system user, host, the
    runbook's hash, the fleet target, start and end, coverage: see
    :meth:`toolkit.runbook.Run.provenance`).
    """
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
            facts["token_entity"] = me.get("entity_id") or None
        except Exception:  # noqa: BLE001
            pass
    else:
        facts["cluster"] = organization
        facts.update(_platform_facts(client))
    facts.update({k: v for k, v in (provenance or {}).items() if k in _PROVENANCE})
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


_PROVENANCE = frozenset(
    {
        "os_user",
        "host",
        "runbook_sha256",
        "fleet_target",
        "token_source",
        "started_at",
        "finished_at",
        "coverage",
    }
)


def _platform_facts(client: Any) -> dict[str, Any]:
    """The platform's version and the token's owner (a user, or the kind of token)."""
    try:
        card = client.connection()
    except Exception:  # noqa: BLE001 - a missing fact is not worth losing the evidence
        return {}
    return {
        "server_version": card.get("version") or card.get("api_version"),
        "token_owner": card.get("token_owner"),
    }


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
    existing = [p for p in targets if os.path.lexists(p)]
    if existing:
        raise InputError(f"{existing[0]} exists already: file each run into its own folder")
    safe = {k: stamp(safe_frame(v), header) for k, v in frames.items()}
    rendered: dict[str, bytes] = {}
    if "html" in wanted:
        rendered[f"{name}.html"] = _html_bytes(safe, header)
    if "xlsx" in wanted:
        rendered[f"{name}.xlsx"] = _xlsx_bytes(safe, header)
    if "csv" in wanted:
        rendered[f"{name}.header.json"] = (json.dumps(header.as_dict(), indent=2) + "\n").encode()
        for label, frame in safe.items():
            text = frame.to_csv(index=keeps_index(frame))
            rendered[f"{name}-{label}.csv"] = text.encode("utf-8")
    if "parquet" in wanted:
        for label, frame in safe.items():
            ready = parquet_ready(frame)
            ready.attrs["evidence_frame"] = label  # a fleet's history reads it back
            buffer = io.BytesIO()
            ready.to_parquet(buffer, index=keeps_index(frame))
            rendered[f"{name}-{label}.parquet"] = buffer.getvalue()
    rendered[MANIFEST] = _manifest(rendered)
    with _evidence_folder(out) as folder_fd:
        for file_name, blob in rendered.items():
            _write_inside(folder_fd, out, file_name, blob)
        os.fsync(folder_fd)
    written = [out / file_name for file_name in rendered]
    keep = history or os.environ.get("TOOLKIT_HISTORY")
    if keep:
        from . import history as store

        store.append(keep, safe, header)
    return written


MANIFEST = "MANIFEST.json"


def _manifest(files: Mapping[str, bytes]) -> bytes:
    """``MANIFEST.json``: every file filed with its size and SHA-256, so a change shows."""
    listing = [
        {"file": file_name, "bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}
        for file_name, blob in sorted(files.items())
    ]
    return (json.dumps({"files": listing}, indent=2) + "\n").encode("utf-8")


@contextlib.contextmanager
def _evidence_folder(out: Path) -> Iterator[int]:
    """The evidence folder, created if missing, opened without following a symbolic link."""
    if out.is_symlink():
        raise InputError(f"{out} is a symbolic link: name the folder itself for the evidence")
    if os.path.lexists(out) and not out.is_dir():
        raise InputError(f"{out} is a file, not a folder: name a folder for the evidence")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except (NotADirectoryError, FileExistsError):
        raise InputError(
            f"{out} cannot be a folder (a folder above it is a file): name a folder for the evidence"
        ) from None
    except OSError as exc:
        raise InputError(f"cannot file evidence into {out}: {exc.strerror}") from None
    try:
        yield fd
    finally:
        os.close(fd)


def _write_inside(folder_fd: int, out: Path, file_name: str, blob: bytes) -> None:
    # O_EXCL | O_NOFOLLOW: a file planted since the check, or a symbolic link (even a
    # dangling one), is refused rather than written through.
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(file_name, flags, 0o644, dir_fd=folder_fd)
    except FileExistsError:
        raise InputError(
            f"{out / file_name} exists already (a file or a symbolic link): "
            "file each run into its own folder"
        ) from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(blob)
        handle.flush()
        os.fsync(handle.fileno())


def verify(folder: str | Path) -> list[str]:
    """What no longer matches the evidence's ``MANIFEST.json`` in ``folder``: one line each.

    Every file the manifest lists is read again and its SHA-256 compared: a file
    changed, missing or not listed (an extra) is named. An empty list: every
    digest matches. A folder without a readable manifest is an :class:`InputError`.
    """
    out = Path(folder)
    if not out.is_dir():
        raise InputError(f"{out} is not a folder of evidence: name the folder report.save wrote")
    try:
        listing = json.loads((out / MANIFEST).read_bytes())["files"]
        expected = {str(e["file"]): str(e["sha256"]) for e in listing}
    except FileNotFoundError:
        raise InputError(f"{out} has no {MANIFEST}: it is not a folder report.save wrote") from None
    except (ValueError, KeyError, TypeError):
        raise InputError(
            f"{out / MANIFEST} is not a manifest report.save wrote: it cannot be read"
        ) from None
    problems = []
    for file_name, digest in sorted(expected.items()):
        path = out / file_name
        if path.is_symlink() or not path.is_file():
            problems.append(f"missing: {file_name}")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            problems.append(f"changed: {file_name}")
    extras = sorted(p.name for p in out.iterdir() if p.name not in expected and p.name != MANIFEST)
    problems += [f"extra: {file_name}" for file_name in extras]
    return problems


def _targets(out: Path, name: str, labels: list[str], formats: tuple[str, ...]) -> list[Path]:
    paths = [out / MANIFEST]
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
                    else json.dumps(plain(v))
                )
            )
    if isinstance(frame.index, pd.DatetimeIndex) and frame.index.tz is not None:
        frame.index = frame.index.tz_convert("UTC").tz_localize(None)
    return frame


def _xlsx_bytes(frames: Mapping[str, pd.DataFrame], header: Header) -> bytes:
    rows = [
        *header.rows(),
        ("times", "all times in this workbook are UTC (Excel has no time zones)"),
    ]
    buffer = io.BytesIO()
    with pd.ExcelWriter(buffer, engine="openpyxl") as writer:
        pd.DataFrame(rows, columns=["field", "value"]).to_excel(
            writer, sheet_name="header", index=False
        )
        for label, frame in frames.items():
            _utc_naive(frame).to_excel(writer, sheet_name=label, index=keeps_index(frame))
    return buffer.getvalue()


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em;color:#111}"
    "table{border-collapse:collapse;margin:0 0 2em 0}"
    "th,td{border:1px solid #bbb;padding:.25em .5em;text-align:left;vertical-align:top}"
    "th{background:#eee}caption{text-align:left;font-weight:bold;padding:.5em 0}"
)


def _html_bytes(frames: Mapping[str, pd.DataFrame], header: Header) -> bytes:
    verdict = (header.coverage or {}).get("verdict")
    marked = f" ({str(verdict).upper()})" if verdict and verdict != "complete" else ""
    title = html.escape(f"Evidence: {header.runbook or 'audit'} on {header.server}{marked}")
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
    return "".join(parts).encode("utf-8")
