"""Secrets engine types and their state classes: the state side of an engine mount.

An engine mount (``keymgmt/``, ``database/``, or any path enabled through
``sys/mounts``) holds one state object, made here when the mount is enabled
and kept in :attr:`.mounts.Mount.backend`. The state class is plain Python
with no HTTP in it, constructed as ``Class(service, mount)``. Which handlers
serve each type is the HTTP side's business (``http/engines.py``): nothing
here names an HTTP module.

State classes hold plain data only (no locks, open files or closures, and no
container held in two places), and the lease callbacks they register are bound
methods (or partials of them), so ``--state`` stores the whole service as data
(``.._plain``) and names each callback by its object and method.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .engines.ad.state import Directory
from .engines.broker.state import Broker
from .engines.database.state import Database
from .engines.keymgmt.state import KeyManagement
from .engines.pki import PKI
from .errors import SecretsError

if TYPE_CHECKING:
    from .models import SecretsService
    from .mounts import Mount

__all__ = ["ENGINE_TYPES", "EngineType", "attach_backend", "engine_type"]


@dataclass(frozen=True)
class EngineType:
    """One engine type: its name in ``sys/mounts``, what it is, and its state class."""

    type: str
    description: str
    state: Callable[[SecretsService, Mount], Any]

    def make_backend(self, service: SecretsService, mount: Mount) -> Any:
        return self.state(service, mount)


ENGINE_TYPES: dict[str, EngineType] = {
    kind.type: kind
    for kind in (
        EngineType("keymgmt", "key management", KeyManagement),
        EngineType("ad", "directory service accounts", Directory),
        EngineType("database", "database credentials", Database),
        EngineType("rabbitmq", "message broker credentials", Broker),
        EngineType("pki", "certificates", PKI),
    )
}


def engine_type(kind: str) -> EngineType:
    """The engine type named ``kind``; 400 as the real server answers an unknown plugin."""
    found = ENGINE_TYPES.get(kind)
    if found is None:
        raise SecretsError(400, f"plugin not found in the catalog: {kind}")
    return found


def attach_backend(service: SecretsService, mount: Mount) -> None:
    """Give ``mount`` a fresh state object of its engine type (system mounts get none)."""
    kind = ENGINE_TYPES.get(mount.type)
    if kind is not None:
        mount.backend = kind.make_backend(service, mount)
