"""The key management engine (spec 4.6): its state, HTTP handlers and demo data, and its descriptor."""

from __future__ import annotations

from ...backends import Engine
from . import demo, http, state

__all__ = ["ENGINE"]

ENGINE = Engine.in_folder(
    type="keymgmt",
    description="key management",
    # OpenBao ships no key management plugin: the sandbox serves the spec's engine.
    catalog_name=None,
    state=state.KeyManagementEngine,
    http=http,
    demo=demo,
)
