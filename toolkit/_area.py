"""The base of every API area of both clients: the client's HTTP layer, and a repr that
names the service, its address and the calls offered.

Each service subclasses it with what its wire needs (the platform's JSON:API
documents in ``toolkit.platform._base``, the secrets server's envelopes and
LIST in ``toolkit.secrets._base``).
"""

from __future__ import annotations

from ._http import HTTPLayer
from ._reprs import area_repr

__all__ = ["Area"]


class Area:
    """One API area: its calls share the client's HTTP layer."""

    # What the repr calls the service the area talks to.
    SERVICE = "service"

    def __init__(self, http: HTTPLayer) -> None:
        self._http = http

    def __repr__(self) -> str:
        return area_repr(self, self.SERVICE, self._http.address)
