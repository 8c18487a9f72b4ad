"""Rekeying the unseal shares (spec section 4.3), on either API flavour.

``target="root"`` (the default) rekeys the root key: new unseal shares on a
Shamir seal; on a seal with stored shares (auto-unseal, ``recovery_seal`` in the
seal status) the recovery shares authorise it and no share is handed out.
``target="recovery"`` rekeys those recovery shares (``sys/rekey-recovery-key/*``
or ``sys/rotate/recovery/*``).

The spec's ``sys/rekey/*`` endpoints answer bare fields. OpenBao 2.5 and later
disable them by default (405 ``unsupported operation``) and offer the
authenticated ``sys/rotate/root/{init,update,verify,backup}`` with the same
fields under ``data``. :class:`Rekey` finds out on first use which one the
server speaks (legacy status first; on 405 the other) and remembers it;
:attr:`Rekey.api_flavour` says which.

New shares come back as :class:`~toolkit.Sensitive`; shares sent are taken as
strings or Sensitive and appear only in request bodies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import InputError, MethodNotAllowed, NotFound
from .._http import HTTPLayer
from .._masking import Sensitive, hidden, reveal
from .._records import Record
from .._reprs import area_repr
from ._base import SecretsArea, hide, unwrap

__all__ = ["FLAVOURS", "Rekey"]

FLAVOURS = ("legacy", "rotate-root")
TARGETS = ("root", "recovery")
# The endpoints' prefix by (target, flavour); "rotate-root" names the authenticated family.
_PREFIX = {
    ("root", "legacy"): "/sys/rekey",
    ("root", "rotate-root"): "/sys/rotate/root",
    ("recovery", "legacy"): "/sys/rekey-recovery-key",
    ("recovery", "rotate-root"): "/sys/rotate/recovery",
}
# Fields of an answer that are shares of the new set (hex, base64, or PGP-encrypted).
SHARE_FIELDS = ("keys", "keys_base64")


class Rekey(SecretsArea):
    """The rekey endpoints: ``sys/rekey/*`` (legacy) or ``sys/rotate/root/*``."""

    def __init__(
        self, http: HTTPLayer, flavour: str | None = None, *, target: str = "root"
    ) -> None:
        super().__init__(http)
        if flavour is not None and flavour not in FLAVOURS:
            raise InputError(f"rekey flavour must be one of {FLAVOURS}, not {flavour!r}")
        if target not in TARGETS:
            raise InputError(f"rekey target must be one of {TARGETS}, not {target!r}")
        self._flavour = flavour
        self.target = target

    def __repr__(self) -> str:
        # The shared area repr, with which shares and which endpoints in the service's place.
        flavour = self._flavour or "flavour not yet detected"
        return area_repr(
            self, f"secrets server ({self.target} shares, {flavour})", self._http.address
        )

    @property
    def _prefix(self) -> str:
        return _PREFIX[(self.target, self.api_flavour)]

    @property
    def api_flavour(self) -> str:
        """``"legacy"`` (``sys/rekey/*``) or ``"rotate-root"`` (``sys/rotate/root/*``).

        Detected on first use: ``GET /sys/rekey/init`` (``/sys/rekey-recovery-key/init``
        for the recovery shares), and on 405 (404 for the recovery paths) the
        authenticated endpoints. Set it to force one.
        """
        if self._flavour is None:
            try:
                self._http.json("GET", f"{_PREFIX[(self.target, 'legacy')]}/init")
                self._flavour = "legacy"
            except MethodNotAllowed:
                self._flavour = "rotate-root"
            except NotFound:
                # OpenBao 2.7 answers 404 for the legacy recovery paths it disabled.
                if self.target != "recovery":
                    raise
                self._flavour = "rotate-root"
        return self._flavour

    @api_flavour.setter
    def api_flavour(self, value: str) -> None:
        if value not in FLAVOURS:
            raise InputError(f"rekey flavour must be one of {FLAVOURS}, not {value!r}")
        self._flavour = value

    def _call(self, method: str, op: str, body: Any = None) -> Record:
        payload = self._http.json(
            method,
            f"{self._prefix}/{op}",
            json=body,
            check="read the attempt's progress (rekey.status)",
        )
        data = unwrap(payload)
        return Record(hide(data, *SHARE_FIELDS, label="key share"), kind=f"rekey-{op}")

    # -- the attempt -----------------------------------------------------------
    def status(self) -> Record:
        """The attempt's status: ``started``, ``nonce``, ``t``, ``n``, ``progress``,
        ``required``, ``pgp_fingerprints``, ``backup``, ``verification_required``.

        ``GET /sys/rekey/init`` (or ``/sys/rotate/root/init``).
        """
        return self._call("GET", "init")

    def init(
        self,
        secret_shares: int,
        secret_threshold: int,
        *,
        pgp_keys: Sequence[str] | None = None,
        backup: bool = False,
        require_verification: bool = False,
    ) -> Record:
        """Start an attempt. ``POST /sys/rekey/init`` (or ``/sys/rotate/root/init``).

        Checked before sending: ``1 <= secret_threshold <= secret_shares``;
        ``pgp_keys`` (base64 of binary public keys) one per share; ``backup``
        only with PGP keys. Returns the status, with the new ``nonce``.
        """
        if secret_shares < 1:
            raise InputError(f"secret_shares must be at least 1, not {secret_shares}")
        if not 1 <= secret_threshold <= secret_shares:
            raise InputError(
                f"secret_threshold must be between 1 and secret_shares ({secret_shares}), "
                f"not {secret_threshold}"
            )
        if secret_shares > 1 and secret_threshold < 2:
            raise InputError("secret_threshold must be at least 2 when there are several shares")
        body: dict[str, Any] = {
            "secret_shares": secret_shares,
            "secret_threshold": secret_threshold,
            "backup": backup,
            "require_verification": require_verification,
        }
        if pgp_keys is not None:
            keys = [reveal(k) for k in pgp_keys]
            if len(keys) != secret_shares:
                raise InputError(
                    f"pgp_keys holds {len(keys)} keys; it must hold one per share "
                    f"(secret_shares={secret_shares})"
                )
            body["pgp_keys"] = keys
        elif backup:
            raise InputError("backup needs pgp_keys: it stores the PGP-encrypted shares")
        return self._call("POST", "init", body)

    def cancel(self) -> None:
        """Cancel the attempt; the current shares stay valid. ``DELETE /sys/rekey/init``."""
        self._http.json("DELETE", f"{self._prefix}/init")

    def update(self, key: str | Sensitive, nonce: str) -> Record:
        """Provide one current share. ``POST /sys/rekey/update`` (or rotate-root).

        While below the threshold: the status. At the threshold: ``complete``,
        ``keys`` and ``keys_base64`` (Sensitive), ``verification_nonce`` when
        verification was asked for.
        """
        share = hidden(key, "key share")
        del key  # only the Sensitive is kept from here on
        return self._call("POST", "update", {"key": share, "nonce": nonce})

    # -- verification ------------------------------------------------------------
    def verify_status(self) -> Record:
        """``GET /sys/rekey/verify``: ``nonce``, ``t``, ``n``, ``progress``."""
        return self._call("GET", "verify")

    def verify_update(self, key: str | Sensitive, nonce: str) -> Record:
        """Provide one share of the new set. ``POST /sys/rekey/verify``.

        At the threshold the root key is rotated: ``complete`` true.
        """
        share = hidden(key, "key share")
        del key
        return self._call("POST", "verify", {"key": share, "nonce": nonce})

    def verify_cancel(self) -> Record:
        """Reset verification progress and get a new nonce. ``DELETE /sys/rekey/verify``."""
        return self._call("DELETE", "verify")

    # -- backup ----------------------------------------------------------------
    def backup(self) -> Record:
        """The stored backup: ``nonce`` and ``keys`` (fingerprint -> encrypted shares).

        ``GET /sys/rekey/backup``. The encrypted shares are Sensitive too.
        """
        record = self._call("GET", "backup")
        for name in SHARE_FIELDS:
            keys = record.get(name)
            if isinstance(keys, dict):
                record[name] = {
                    fp: hide({"v": v}, "v", label="encrypted key share")["v"]
                    for fp, v in keys.items()
                }
        return record

    def delete_backup(self) -> None:
        """Delete the stored backup. ``DELETE /sys/rekey/backup``."""
        self._http.json("DELETE", f"{self._prefix}/backup")
