"""The client's secrets engines, one line each, and all else drawn from those lines.

An engine's area is a module (``secrets/<mount>.py``, or a package of that
name) holding one :class:`~._base.EngineArea` class, and one line in
:class:`EngineAreas`::

    pki = AreaSlot(PKI)

The line's name is the engine's default mount and the client's attribute
(``client.pki``, typed ``PKI`` for type checkers, as the slot is a typed
descriptor); the client makes each area at that mount. :func:`area_slots`
lists a class's lines, its bases' included: the client's areas and the tests'
mount lists come from it, and a subclass adds an engine by one line more (the
house test's echo engine). The sandbox's registry is
``sandbox/secrets/engines``; a test holds the two to the same engines.
"""

from __future__ import annotations

from typing import Any, Generic, Protocol, Self, TypeVar, overload

from .._http import HTTPLayer
from ._base import EngineArea, unwrap
from .ad import AD
from .broker import Broker
from .database import Database
from .keymgmt import KeyManagement
from .pki import PKI

__all__ = ["ENGINE_AREAS", "AreaSlot", "EngineAreas", "area_slots", "mounted_engines"]

A = TypeVar("A", bound=EngineArea)


class _Client(Protocol):
    """What a slot needs of the object it sits on: the HTTP layer its areas call through."""

    @property
    def http(self) -> HTTPLayer: ...


class AreaSlot(Generic[A]):
    """One engine's place on a client: its area class, at the mount named by the slot's name.

    The client makes each slot's area at its start (a namespace view, its own);
    read before that, the slot makes it then.
    """

    def __init__(self, area: type[A]) -> None:
        self.area = area
        self.mount = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.mount = name

    @overload
    def __get__(self, client: None, owner: type) -> Self: ...
    @overload
    def __get__(self, client: _Client, owner: type) -> A: ...
    def __get__(self, client: _Client | None, owner: type) -> Self | A:
        if client is None:
            return self
        return self.make(client)

    def make(self, client: _Client) -> A:
        """A fresh area on ``client``'s HTTP layer at this slot's mount, kept as its attribute."""
        made = self.area(client.http, self.mount)
        # The instance's own attribute hides this slot (it has no __set__) from then on.
        vars(client)[self.mount] = made
        return made


class EngineAreas:
    """The client's engine areas: ``<default mount> = AreaSlot(<area class>)``, one line each.

    Adding an engine to the client is its module and one line here (and its
    import above); :class:`~.client.SecretsClient` takes its areas from this class.
    """

    keymgmt = AreaSlot(KeyManagement)
    ad = AreaSlot(AD)
    database = AreaSlot(Database)
    broker = AreaSlot(Broker)
    pki = AreaSlot(PKI)


def area_slots(registry: type) -> dict[str, AreaSlot[Any]]:
    """The slots ``registry`` (a class) declares, its bases' included, by default mount."""
    slots: dict[str, AreaSlot[Any]] = {}
    for owner in reversed(registry.__mro__):
        slots.update((n, s) for n, s in vars(owner).items() if isinstance(s, AreaSlot))
    return slots


# The package's engines' areas, by default mount.
ENGINE_AREAS: dict[str, type[EngineArea]] = {
    mount: slot.area for mount, slot in area_slots(EngineAreas).items()
}


def mounted_engines(http: HTTPLayer) -> dict[str, dict[str, Any]]:
    """The mounted secrets engines, by path (``secret/``, ...). ``GET /sys/mounts``."""
    data = unwrap(http.json("GET", "/sys/mounts"))
    return {k: dict(v) for k, v in data.items() if k.endswith("/") and isinstance(v, dict)}
