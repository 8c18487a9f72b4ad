"""Calls of the directory (AD) engine (spec 4.7), against any mount (default ``ad``)."""

from __future__ import annotations

from ._base import EngineArea

__all__ = ["Directory"]


class Directory(EngineArea):
    """The directory (AD) engine (spec 4.7); ``client.ad.at(path)`` for another mount."""

    DEFAULT_MOUNT = "ad"
