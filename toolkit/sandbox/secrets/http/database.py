"""HTTP for the database engine (spec 4.8), relative to its mount; thin over :mod:`..database`."""

from __future__ import annotations

from ._base import EngineRoute

__all__ = ["routes"]


def routes() -> list[EngineRoute]:
    return []
