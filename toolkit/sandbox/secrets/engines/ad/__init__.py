"""The directory (AD) engine (spec 4.7): its state, library, HTTP handlers and demo data, and its descriptor."""

from __future__ import annotations

from ...backends import Engine
from . import demo, http, state

__all__ = ["ENGINE"]

ENGINE = Engine.in_folder(
    type="ad",
    description="directory service accounts",
    state=state.ADEngine,
    http=http,
    demo=demo,
)
