"""Response wrapping (``sys/wrapping/*``): a value kept behind a single-use token.

``sys/wrapping/wrap`` keeps the request's data behind a new wrapping token for the
time the caller asked (``X-Vault-Wrap-TTL``); ``lookup`` shows when and where it was
made; ``unwrap`` answers the data once and forgets it; ``rewrap`` moves it behind a
new token. An expired or spent token is "not valid or does not exist", as on OpenBao.
Plain state, no HTTP.
"""

from __future__ import annotations

import secrets
import string
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .._clock import Clock
from .errors import InvalidRequest

__all__ = ["Wrapped", "WrappingStore"]

_ALPHABET = string.ascii_letters + string.digits
_INVALID = "wrapping token is not valid or does not exist"


def _random(length: int = 24) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


@dataclass
class Wrapped:
    token: str = field(repr=False)
    accessor: str
    data: dict[str, Any] = field(repr=False)
    creation_time: datetime
    ttl: int
    creation_path: str

    def expired(self, now: datetime) -> bool:
        return now >= self.creation_time + timedelta(seconds=self.ttl)


class WrappingStore:
    """The live wrapping tokens, by token."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._wrapped: dict[str, Wrapped] = {}

    def __repr__(self) -> str:
        return f"<WrappingStore {len(self._wrapped)} wrapped>"

    def wrap(self, data: dict[str, Any], ttl: int, creation_path: str) -> Wrapped:
        if ttl <= 0:
            raise InvalidRequest("endpoint requires response wrapping to be used")
        wrapped = Wrapped(
            "s." + _random(), _random(), dict(data), self.clock.now(), ttl, creation_path
        )
        self._wrapped[wrapped.token] = wrapped
        return wrapped

    def find(self, token: str) -> Wrapped | None:
        found = self._wrapped.get(token)
        if found is not None and found.expired(self.clock.now()):
            del self._wrapped[token]
            return None
        return found

    def lookup(self, token: str) -> Wrapped:
        found = self.find(token)
        if found is None:
            raise InvalidRequest(_INVALID)
        return found

    def unwrap(self, token: str) -> dict[str, Any]:
        found = self.lookup(token)
        del self._wrapped[token]
        return found.data

    def rewrap(self, token: str) -> Wrapped:
        found = self.lookup(token)
        del self._wrapped[token]
        return self.wrap(found.data, found.ttl, found.creation_path)
