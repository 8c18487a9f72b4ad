"""Calls of the database engine (spec 4.8), against any mount (default ``database``)."""

from __future__ import annotations

from ._base import EngineArea

__all__ = ["Database"]


class Database(EngineArea):
    """The database engine (spec 4.8); ``client.database.at(path)`` for another mount."""

    DEFAULT_MOUNT = "database"
