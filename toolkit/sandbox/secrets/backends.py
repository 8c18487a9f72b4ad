"""Secrets engines described once: an :class:`Engine` descriptor each, and the registry.

An engine lives in one folder, ``engines/<name>/``: its state (``state.py``,
plain Python, no HTTP), its HTTP handlers (``http.py``), its demo data
(``demo.py``), and in its ``__init__.py`` one :class:`Engine` naming them all.
``engines/__init__.py`` registers the built-in ones (:data:`~.engines.ENGINES`).
Everything that used to be a table of its own is read from the descriptors:

- the default mounts of a fresh server (:meth:`EngineRegistry.default_mounts`);
- the engine types ``sys/mounts`` may enable (:meth:`EngineRegistry.get`);
- the plugin catalog's builtin secret plugins (:meth:`EngineRegistry.catalog_names`);
- the HTTP dispatcher's handlers for a mount (``http/engines.py``);
- the demo data (``demo.py``).

An engine's state class is constructed as ``State(host, mount)`` where ``host``
is the server as an :class:`~.host.EngineHost`. State classes hold plain data
only (no locks, open files or closures, and no container held in two places),
and the lease callbacks they register are bound methods (or partials of them),
so ``--state`` stores the whole service as data (``.._plain``) and names each
callback by its object and method.

This module imports no engine: the registry is handed to the service that
mounts engines (``SecretsService(engines=...)``), so no import cycle runs
from the service through an engine back to it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import InvalidRequest

if TYPE_CHECKING:
    from .host import EngineHost
    from .mounts import Mount

__all__ = ["Engine", "EngineRegistry", "demo_at"]

_State = TypeVar("_State")


@dataclass(frozen=True)
class Engine:
    """One secrets engine, as the server knows it.

    - ``type``: its name in ``sys/mounts`` (``rabbitmq``, ``ad``: the plugin's name);
    - ``mount``: where a fresh server mounts it (``broker/``), from the spec;
    - ``description``: what ``sys/mounts`` says of the default mount;
    - ``catalog_name``: its builtin entry in the plugin catalog (``secret`` type),
      None when the real server ships no such plugin;
    - ``state``: the state class, built as ``state(host, mount)`` for each mount;
    - ``routes``: the handlers relative to the mount (``http._base.EngineRoute``
      objects), called once per server;
    - ``demo``: fills a server's default mount with the demo data (None: no demo).
    """

    type: str
    mount: str
    description: str
    catalog_name: str | None
    state: Callable[[EngineHost, Mount], Any]
    routes: Callable[[], Sequence[Any]]
    demo: Callable[[EngineHost], None] | None = None

    @classmethod
    def in_folder(
        cls,
        *,
        type: str,
        description: str,
        state: Callable[[EngineHost, Mount], Any],
        http: ModuleType,
        demo: ModuleType,
        mount: str = "",
        catalog_name: str | None = "",
    ) -> Engine:
        """The engine of a folder laid out as the house lays engines out: its handlers
        are ``http.routes``, its demo ``demo.load_demo``. Its default mount is
        ``<type>/`` and its catalog entry ``type`` unless given (None: no catalog entry)."""
        return cls(
            type=type,
            mount=mount or f"{type}/",
            description=description,
            catalog_name=type if catalog_name == "" else catalog_name,
            state=state,
            routes=http.routes,
            demo=demo.load_demo,
        )

    def make_backend(self, host: EngineHost, mount: Mount) -> Any:
        return self.state(host, mount)


class EngineRegistry:
    """The engines a server can mount, by type, in the order their demo data is loaded."""

    def __init__(self, *engines: Engine) -> None:
        self._by_type: dict[str, Engine] = {}
        for engine in engines:
            self.register(engine)

    def register(self, engine: Engine) -> None:
        """Add ``engine``; a second engine of the same type or default mount is a mistake."""
        if engine.type in self._by_type:
            raise ValueError(f"engine type {engine.type!r} is registered twice")
        if engine.mount in self.default_mounts():
            raise ValueError(f"two engines have the default mount {engine.mount!r}")
        if not engine.mount.endswith("/") or engine.mount.startswith("/"):
            raise ValueError(f"default mount {engine.mount!r}: write it as 'name/'")
        self._by_type[engine.type] = engine

    def __iter__(self) -> Iterator[Engine]:
        return iter(self._by_type.values())

    def __len__(self) -> int:
        return len(self._by_type)

    def __contains__(self, kind: object) -> bool:
        return kind in self._by_type

    def types(self) -> list[str]:
        return list(self._by_type)

    def get(self, kind: str) -> Engine:
        """The engine of type ``kind``; 400 as the real server answers an unknown plugin."""
        found = self._by_type.get(kind)
        if found is None:
            raise InvalidRequest(f"plugin not found in the catalog: {kind}")
        return found

    def default_mounts(self) -> dict[str, tuple[str, str]]:
        """Each engine's default mount path: (its type, its description)."""
        return {e.mount: (e.type, e.description) for e in self._by_type.values()}

    def catalog_names(self) -> list[str]:
        """The builtin ``secret`` plugins the engines stand for in the plugin catalog."""
        return sorted(e.catalog_name for e in self._by_type.values() if e.catalog_name)

    def attach_backend(self, host: EngineHost, mount: Mount) -> None:
        """Give ``mount`` a fresh state object of its engine type (system mounts get none)."""
        engine = self._by_type.get(mount.type)
        if engine is not None:
            mount.backend = engine.make_backend(host, mount)


def demo_at(
    path: str, kind: type[_State]
) -> Callable[[Callable[[EngineHost, _State], None]], Callable[[EngineHost], None]]:
    """Make ``load(host, state)`` an engine's ``demo``: it fills the state of the mount at
    ``path`` when that mount is there and holds a ``kind`` (else the demo does nothing)."""

    def wrap(load: Callable[[EngineHost, _State], None]) -> Callable[[EngineHost], None]:
        @functools.wraps(load)
        def demo(host: EngineHost) -> None:
            mount = host.mounts.engine(path)
            if mount is not None and isinstance(mount.backend, kind):
                load(host, mount.backend)

        return demo

    return wrap
