"""The key management engine's purposes and protections (spec 001 section 4.6), for both sides.

The spec shows ``encrypt``, ``decrypt`` and ``hsm`` and no full set; the rest is
what the engine's documentation lists. The sandbox refuses anything else and the
client's key distribution form offers these.
"""

from __future__ import annotations

__all__ = ["PROTECTIONS", "PURPOSES", "SYMMETRIC_PURPOSES"]

PURPOSES = ("encrypt", "decrypt", "sign", "verify", "wrap", "unwrap")
# A symmetric key cannot sign or verify.
SYMMETRIC_PURPOSES = frozenset({"encrypt", "decrypt", "wrap", "unwrap"})
PROTECTIONS = ("hsm", "software")
