"""The secrets engines the sandbox serves, one folder each, and their registry.

Adding an engine is one folder, ``engines/<name>/`` with ``state.py``,
``http.py``, ``demo.py`` and an ``ENGINE`` descriptor in its ``__init__.py``
(see :class:`~..backends.Engine`), and one line here. The registry's order is
the order the demo data is loaded in.
"""

from __future__ import annotations

from ..backends import Engine, EngineRegistry
from . import ad, broker, database, keymgmt, pki

__all__ = ["ENGINES", "Engine", "EngineRegistry"]

ENGINES = EngineRegistry(database.ENGINE, broker.ENGINE, pki.ENGINE, ad.ENGINE, keymgmt.ENGINE)
