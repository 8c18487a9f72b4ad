"""Calls of the key management engine (spec 4.6), against any mount (default ``keymgmt``)."""

from __future__ import annotations

from ._base import EngineArea

__all__ = ["KeyManagement"]


class KeyManagement(EngineArea):
    """The key management engine (spec 4.6); ``client.keymgmt.at(path)`` for another mount."""

    DEFAULT_MOUNT = "keymgmt"
