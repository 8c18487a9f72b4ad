"""HTTP for the certificate engine (spec 4.10), relative to its mount; thin over :mod:`..pki`."""

from __future__ import annotations

from ._base import EngineRoute

__all__ = ["routes"]


def routes() -> list[EngineRoute]:
    return []
