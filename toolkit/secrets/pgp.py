"""Key holders' PGP public keys for a rekey (``pgp_keys``): read a key file, name its fingerprint.

The server wants each key as base64 of the binary public key, one per new
share and in the shares' order. :func:`read_public_key` takes what a key holder
hands over (a binary key or an ASCII-armored one), checks it is a public key
that can receive messages, and returns its fingerprint, its user ids and the
base64 text to send. A file holding a private key is refused: it must never
reach a notebook. The pysequoia steps are :mod:`toolkit._openpgp`'s, shared
with the sandbox.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from dataclasses import dataclass, field

from .._errors import InputError
from .._openpgp import KeyUnusable, holds_private_key, load_certificate, probe_encryption

__all__ = ["PGPPublicKey", "read_public_key"]


@dataclass(frozen=True)
class PGPPublicKey:
    """One key holder's public key, ready for ``pgp_keys``."""

    fingerprint: str  # lower-case hex, as the server reports ``pgp_fingerprints``
    user_ids: tuple[str, ...]
    key_base64: str = field(repr=False)

    @property
    def label(self) -> str:
        """``fingerprint (first user id)`` for a list a reader checks by eye."""
        who = f" ({self.user_ids[0]})" if self.user_ids else ""
        return f"{self.fingerprint}{who}"


def read_public_key(data: bytes | str, name: str = "key") -> PGPPublicKey:
    """Parse one public key (binary, ASCII-armored, or base64 of binary).

    Raises :class:`~toolkit.InputError` naming ``name`` when the data is not a
    public key, holds a private key, or cannot be encrypted to.
    """
    raw = data.encode("ascii", "replace") if isinstance(data, str) else bytes(data)
    stripped = raw.strip()
    if stripped and not stripped.startswith(b"-----BEGIN PGP"):
        # base64 of a binary key, as ``pgp_keys`` takes it; else a binary key file
        with contextlib.suppress(binascii.Error, ValueError):
            raw = base64.b64decode(stripped, validate=True)
    if not raw.strip():
        raise InputError(f"{name}: the key file is empty")
    try:
        cert = load_certificate(raw)
    except KeyUnusable as exc:
        raise InputError(f"{name}: not an OpenPGP key ({exc})") from None
    if holds_private_key(cert):
        raise InputError(
            f"{name}: the file holds a private key; upload the public key only "
            "(gpg --export, not --export-secret-keys)"
        )
    try:
        probe_encryption(cert)
    except KeyUnusable as exc:
        raise InputError(f"{name}: the key cannot encrypt ({exc})") from None
    return PGPPublicKey(
        fingerprint=cert.fingerprint.lower(),
        user_ids=tuple(str(u) for u in cert.user_ids),
        key_base64=base64.b64encode(bytes(cert)).decode("ascii"),
    )
