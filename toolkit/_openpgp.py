"""The OpenPGP steps both key readers take (the rekey client's and the sandbox's), on pysequoia.

Each side checks a key holder's public key in its own words (the client an
:class:`~toolkit.InputError`, the sandbox a 400), but the library calls and the
way to read its errors are one: parse the certificate, and encrypt once to prove
it can receive a share. pysequoia is imported inside the functions so
``import toolkit`` stays fast.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["KeyUnusable", "encrypt_to", "holds_private_key", "load_certificate", "probe_encryption"]


class KeyUnusable(ValueError):
    """pysequoia refused a key; ``str()`` is its message's first line."""


def _first_line(exc: Exception) -> str:
    # pysequoia's messages carry a Rust backtrace after the first line.
    return (str(exc).strip().splitlines() or ["unreadable key"])[0]


def load_certificate(data: bytes) -> Any:
    """The ``pysequoia.Cert`` in ``data`` (binary or armored); :class:`KeyUnusable` if none."""
    import pysequoia

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return pysequoia.Cert.from_bytes(data)
    except Exception as exc:  # pysequoia raises plain RuntimeError/ValueError
        raise KeyUnusable(_first_line(exc)) from None


def holds_private_key(cert: Any) -> bool:
    """Whether ``cert`` carries secret key material (a key file that must not be used)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return bool(cert.has_secret_keys)


def encrypt_to(cert: Any, data: bytes) -> bytes:
    """``data`` as a binary OpenPGP message to ``cert``; :class:`KeyUnusable` if it cannot be."""
    import pysequoia

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return bytes(pysequoia.encrypt(data, [cert], armor=False))
    except Exception as exc:
        raise KeyUnusable(_first_line(exc)) from None


def probe_encryption(cert: Any) -> None:
    """Encrypt once to ``cert``, so a key that cannot receive a share is refused up front."""
    encrypt_to(cert, b"probe")
