"""HTTP for the message-broker engine (spec 4.9), relative to its mount; thin over :mod:`..broker`."""

from __future__ import annotations

from ._base import EngineRoute

__all__ = ["routes"]


def routes() -> list[EngineRoute]:
    return []
