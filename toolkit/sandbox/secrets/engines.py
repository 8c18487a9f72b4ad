"""Secrets engine kinds: for each engine type, its state class and its HTTP handlers.

An engine mount (``keymgmt/``, ``database/``, or any path enabled through
``sys/mounts``) holds one state object, made here when the mount is enabled
and kept in :attr:`.mounts.Mount.backend`. The state class is plain Python
with no HTTP in it, constructed as ``Class(service, mount)``; the handlers are
declared relative to the mount by a ``routes()`` function in the engine's
module under ``http/`` and dispatched by ``http/engines.py``.

State classes hold plain data only (no locks, open files or closures, and no
container held in two places), and the lease callbacks they register are bound
methods (or partials of them), so ``--state`` stores the whole service as data
(``.._plain``) and names each callback by its object and method.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import SecretsError

if TYPE_CHECKING:
    from .http._base import EngineRoute
    from .models import SecretsService
    from .mounts import Mount

__all__ = ["ENGINE_KINDS", "EngineKind", "attach_backend", "engine_kind"]


@dataclass(frozen=True)
class EngineKind:
    type: str
    description: str
    backend: str  # "module:Class", relative to this package
    handlers: str  # "module:function" returning the engine's routes

    def _load(self, ref: str) -> Any:
        module, _, name = ref.partition(":")
        return getattr(importlib.import_module(module, __package__), name)

    def make_backend(self, service: SecretsService, mount: Mount) -> Any:
        return self._load(self.backend)(service, mount)

    def routes(self) -> list[EngineRoute]:
        return list(self._load(self.handlers)())


ENGINE_KINDS: dict[str, EngineKind] = {
    kind.type: kind
    for kind in (
        EngineKind("keymgmt", "key management", ".keymgmt:KeyManagement", ".http.keymgmt:routes"),
        EngineKind(
            "ad", "directory service accounts", ".directory:Directory", ".http.directory:routes"
        ),
        EngineKind(
            "database", "database credentials", ".database:Database", ".http.database:routes"
        ),
        EngineKind(
            "rabbitmq", "message broker credentials", ".broker:Broker", ".http.broker:routes"
        ),
        EngineKind("pki", "certificates", ".pki:PKI", ".http.pki:routes"),
    )
}


def engine_kind(kind: str) -> EngineKind:
    """The engine type named ``kind``; 400 as the real server answers an unknown plugin."""
    found = ENGINE_KINDS.get(kind)
    if found is None:
        raise SecretsError(400, f"plugin not found in the catalog: {kind}")
    return found


def attach_backend(service: SecretsService, mount: Mount) -> None:
    """Give ``mount`` a fresh state object of its engine type (system mounts get none)."""
    kind = ENGINE_KINDS.get(mount.type)
    if kind is not None:
        mount.backend = kind.make_backend(service, mount)
