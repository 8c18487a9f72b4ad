"""The database engine (spec 4.8): its state, plugins, HTTP handlers and demo data, and its descriptor."""

from __future__ import annotations

from ...backends import Engine
from . import demo, http, state

__all__ = ["ENGINE"]

ENGINE = Engine.in_folder(
    type="database",
    description="database credentials",
    state=state.DatabaseEngine,
    http=http,
    demo=demo,
)
