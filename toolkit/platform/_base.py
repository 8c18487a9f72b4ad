"""What every platform API area shares: the HTTP layer, JSON:API bodies, records."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .._area import Area
from .._frames import Schema, build_frame
from .._records import Record
from .._spec.jsonapi import MEDIA_TYPE
from ._jsonapi import flatten, iter_resources, resource_of

__all__ = ["PlatformArea"]


class PlatformArea(Area):
    """One API area of the platform: its calls share the client's HTTP layer."""

    SERVICE = "platform"

    def _get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self._http.json("GET", path, params=params)

    def _send(self, method: str, path: str, body: Any = None) -> Any:
        return self._http.json(
            method, path, json=body, headers={"Content-Type": MEDIA_TYPE} if body else None
        )

    def _record(self, document: Any, kind: str) -> Record:
        return Record(resource_of(document, kind), kind=kind)

    def _frame(
        self, path: str, schema: Schema, params: Mapping[str, Any] | None = None
    ) -> pd.DataFrame:
        return build_frame([flatten(r) for r in iter_resources(self._http, path, params)], schema)
