"""Where a piece of evidence came from: the header filed with every frame.

The evidence writer (:mod:`toolkit.report`) files it beside the frames, and the history
(:mod:`toolkit.history`) keeps it with every audit, so it sits below both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from ._masking import plain

__all__ = ["Header"]


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
    # Provenance (issue 23): who, where, which runbook, when, and what it could see.
    token_entity: str | None = None
    token_owner: str | None = None
    os_user: str | None = None
    host: str | None = None
    runbook_sha256: str | None = None
    fleet_target: str | None = None
    token_source: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    coverage: Mapping[str, Any] | None = None
    # The server's own time (its ``Date`` header) when the evidence was gathered.
    server_time: datetime | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain values only (the times as ISO 8601 UTC), ready for JSON."""
        data = asdict(self)
        for key in ("generated_at", "started_at", "finished_at", "server_time"):
            when = getattr(self, key)
            data[key] = when and when.astimezone(UTC).isoformat(timespec="seconds")
        data["parameters"] = {k: plain(v) for k, v in self.parameters.items()}
        data["coverage"] = plain(self.coverage) if self.coverage is not None else None
        return data

    def rows(self) -> list[tuple[str, str]]:
        """(label, text) pairs, the order an auditor reads them in."""
        data = self.as_dict()
        params = data.pop("parameters")
        rows = [
            (
                k.replace("_", " "),
                "" if v is None else json.dumps(v) if isinstance(v, dict) else str(v),
            )
            for k, v in data.items()
        ]
        rows += [(f"parameter {k}", json.dumps(v)) for k, v in params.items()]
        return rows
