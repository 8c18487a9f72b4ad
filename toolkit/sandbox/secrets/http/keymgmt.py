"""HTTP for the key management engine (spec 4.6, part 2 'Managed key', 'KMS provider', part 3 'Key distribution'), relative to its mount; thin over :mod:`..keymgmt`."""

from __future__ import annotations

from ._base import EngineRoute

__all__ = ["routes"]


def routes() -> list[EngineRoute]:
    return []
