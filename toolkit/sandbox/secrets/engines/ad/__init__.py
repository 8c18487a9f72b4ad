"""The directory (AD) engine (spec 4.7): its state, library, HTTP handlers and demo data, and its descriptor."""

from __future__ import annotations

from ...backends import Engine
from . import demo, http, state

__all__ = ["ENGINE"]

ENGINE = Engine(
    type="ad",
    mount="ad/",
    description="directory service accounts",
    catalog_name="ad",
    state=state.ADEngine,
    routes=http.routes,
    demo=demo.load_demo,
)
