"""Record ids of the platform sandbox: stable, derived from what a record is."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

__all__ = ["IdSource"]

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@dataclass
class IdSource:
    """Every id handed out so far, and a sequence for records the API creates."""

    sequence: int = 0
    issued: set[str] = field(default_factory=set, repr=False)

    def new(self, prefix: str, *parts: str, unique: bool = False) -> str:
        """A stable id derived from ``parts`` (the demo loads alike every time);
        ``unique`` adds the sequence, so records created through the API never collide."""
        if unique:
            self.sequence += 1
            parts = (*parts, str(self.sequence))
        salt = 0
        while True:
            seed = "\x1f".join((prefix, *parts, str(salt) if salt else "")).encode()
            number = int.from_bytes(hashlib.sha256(seed).digest()[:12], "big")
            chars = []
            for _ in range(16):
                number, digit = divmod(number, 62)
                chars.append(_ALPHABET[digit])
            candidate = prefix + "".join(chars)
            if candidate not in self.issued:
                self.issued.add(candidate)
                return candidate
            salt += 1
