"""Seal status, seal and unseal (``sys/seal-status``, ``sys/seal``, ``sys/unseal``).

On a seal that stores the root key (auto-unseal) the shares are recovery shares:
:meth:`Seal.share_kind` says which. Unseal shares are taken as strings or :class:`~toolkit.Sensitive` and are sent
only in request bodies, never shown.
"""

from __future__ import annotations

from .._errors import InputError
from .._masking import Sensitive, hidden, reveal
from .._records import Record
from ._base import SecretsArea, unwrap

__all__ = ["Seal"]


class Seal(SecretsArea):
    """The server's seal."""

    def status(self) -> Record:
        """``GET /sys/seal-status``: ``sealed``, ``t``, ``n``, ``progress``, ``nonce``, ..."""
        return Record(unwrap(self._http.json("GET", "/sys/seal-status")), kind="seal-status")

    def share_kind(self) -> str:
        """Which shares the key holders keep: ``"recovery"`` on a seal that stores the
        root key (auto-unseal: ``recovery_seal`` in ``GET /sys/seal-status``), else
        ``"unseal"``. Recovery shares authorise rekeys and unseal a server sealed by hand."""
        return "recovery" if self.status().get("recovery_seal") else "unseal"

    def seal(self) -> None:
        """Seal the server: every client is refused until it is unsealed. ``POST /sys/seal``."""
        self._send("POST", "/sys/seal", check="read the seal status (seal.status)")

    def unseal(self, key: str | Sensitive | None = None, *, reset: bool = False) -> Record:
        """Provide one unseal share (or ``reset=True`` to drop the progress).

        ``POST /sys/unseal``; returns the seal status after the share.
        """
        body: dict[str, object] = {}
        if reset:
            body["reset"] = True
        elif key is None or not reveal(key):
            raise InputError("unseal needs a key share (or reset=True)")
        else:
            body["key"] = hidden(key, "key share")
        del key  # only the Sensitive is kept from here on
        answer = self._send("POST", "/sys/unseal", body, check="read the seal status (seal.status)")
        return Record(unwrap(answer), kind="seal-status")
