"""Calls of the certificate engine (spec 4.10), against any mount (default ``pki``)."""

from __future__ import annotations

from ._base import EngineArea

__all__ = ["PKI"]


class PKI(EngineArea):
    """The certificate engine (spec 4.10); ``client.pki.at(path)`` for another mount."""

    DEFAULT_MOUNT = "pki"
