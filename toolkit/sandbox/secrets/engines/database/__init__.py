"""The database engine (spec 4.8): its state, plugins, HTTP handlers and demo data, and its descriptor."""

from __future__ import annotations

from ...backends import Engine
from . import demo, http, state

__all__ = ["ENGINE"]

ENGINE = Engine(
    type="database",
    mount="database/",
    description="database credentials",
    catalog_name="database",
    state=state.DatabaseEngine,
    routes=http.routes,
    demo=demo.load_demo,
)
