"""OpenPGP encryption of new unseal shares (``pgp_keys`` of a rekey), with pysequoia.

As on the real server, ``pgp_keys`` are base64 of binary public keys (armored
keys are accepted too), one per share and in the shares' order. Each share is
encrypted, as its hex text, to its key; the result is a binary OpenPGP message,
shown hex (``keys``) and base64 (``keys_base64``). Fingerprints are lower-case
hex. The pysequoia calls are :mod:`toolkit._openpgp`'s, shared with the client's
key reader.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..._openpgp import KeyUnusable, encrypt_to, load_certificate, probe_encryption
from .errors import InvalidRequest

__all__ = ["PublicKey", "encrypt_shares", "parse_public_keys"]


@dataclass(frozen=True)
class PublicKey:
    """One parsed ``pgp_keys`` entry."""

    fingerprint: str
    cert: Any  # pysequoia.Cert

    def __repr__(self) -> str:
        return f"<PublicKey {self.fingerprint}>"


def _parse_one(text: Any, index: int) -> PublicKey:
    field = f"pgp_keys[{index}]"
    if not isinstance(text, str) or not text.strip():
        raise InvalidRequest(f"{field}: must be a non-empty string")
    stripped = text.strip()
    if stripped.startswith("-----BEGIN PGP"):
        data = stripped.encode("ascii", "replace")
    else:
        try:
            data = base64.b64decode(stripped, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidRequest(
                f"{field}: error decoding given PGP key: not valid base64"
            ) from None
    try:
        cert = load_certificate(data)
    except KeyUnusable as exc:
        raise InvalidRequest(f"{field}: error parsing given PGP key: {exc}") from None
    # Encrypt once now so a key that cannot receive messages is refused when
    # the rekey starts, not after the current shares have been given.
    try:
        probe_encryption(cert)
    except KeyUnusable as exc:
        raise InvalidRequest(
            f"{field}: PGP key {cert.fingerprint.lower()} cannot encrypt: {exc}"
        ) from None
    return PublicKey(cert.fingerprint.lower(), cert)


def parse_public_keys(keys: Any) -> list[PublicKey]:
    """Parse every ``pgp_keys`` entry; 400 naming the entry that is not a public key."""
    if keys is None:
        return []
    if not isinstance(keys, list):
        raise InvalidRequest("pgp_keys must be an array of strings")
    return [_parse_one(text, index) for index, text in enumerate(keys)]


def encrypt_shares(shares: Sequence[bytes], keys: Sequence[PublicKey]) -> list[bytes]:
    """Each share's hex text encrypted to the key at the same position (binary messages)."""
    if len(shares) != len(keys):
        raise InvalidRequest("incorrect number of PGP keys for rekey")
    encrypted = []
    for share, key in zip(shares, keys, strict=True):
        try:
            encrypted.append(encrypt_to(key.cert, share.hex().encode("ascii")))
        except KeyUnusable as exc:
            raise InvalidRequest(
                f"pgp key {key.fingerprint} cannot encrypt the share: {exc}"
            ) from None
    return encrypted
