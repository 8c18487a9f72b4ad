"""HTTP for the directory (AD) engine (spec 4.7, part 3 'Library service account'), relative to its mount; thin over :mod:`..directory`."""

from __future__ import annotations

from ._base import EngineRoute

__all__ = ["routes"]


def routes() -> list[EngineRoute]:
    return []
