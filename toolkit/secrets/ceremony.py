"""The rekey ceremony as a state machine: plain Python, no widgets.

    ceremony = RekeyCeremony(client)
    ceremony.start(shares=5, threshold=3, verify=True)
    for share in current_shares:          # from the key holders
        ceremony.submit_share(share)
    new = ceremony.new_shares             # Sensitive; hand them out
    for share in new[:3]:
        ceremony.verify_share(share)      # the root key rotates at the threshold
    ceremony.phase                        # "complete"

Every step re-reads the server (:meth:`RekeyCeremony.status`) instead of
trusting what it saw before, and re-reads it after every error too, so the
nonce used is always the server's current one and another operator's cancel
is noticed. Shares are checked for shape before anything is sent, and never
appear in a repr, an exception or a log line.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._errors import APIError, InputError
from .._masking import Sensitive, reveal
from .._records import Record, integer
from .rekey import Rekey
from .seal import Seal

if TYPE_CHECKING:
    from .client import SecretsClient

__all__ = ["PHASES", "RekeyCeremony", "check_share"]

PHASES = ("idle", "collecting", "verifying", "complete")

# A share's size in bytes, as the real server bounds ``key``: a root key of up
# to 32 bytes and one index byte.
SHARE_BYTES = (16, 33)
_HEX = re.compile(r"[0-9a-fA-F]+")


def check_share(share: str | Sensitive, *, expected_bytes: int | None = None) -> str:
    """The share as text to send, after checking it is hex or base64 of a share's size.

    As the server reads ``key``: hex first, and text that is not hex of a
    share's size as base64. Raises :class:`~toolkit.InputError` naming what is
    wrong, never the value.
    """
    if not isinstance(share, str | Sensitive):
        raise InputError(f"a key share must be a string, not {type(share).__name__}")
    text = "".join(reveal(share).split())
    if not text:
        raise InputError("the key share is empty")
    low, high = SHARE_BYTES
    is_hex = _HEX.fullmatch(text) and len(text) % 2 == 0 and low <= len(text) // 2 <= high
    try:
        raw = bytes.fromhex(text) if is_hex else base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InputError(
            f"the key share ({len(text)} characters) is neither hex nor base64 "
            f"of a {low}- to {high}-byte share"
        ) from None
    if not low <= len(raw) <= high:
        raise InputError(f"the key share decodes to {len(raw)} bytes; a share has {low} to {high}")
    if expected_bytes is not None and len(raw) != expected_bytes:
        raise InputError(
            f"the key share decodes to {len(raw)} bytes; the shares of this set have "
            f"{expected_bytes}"
        )
    return text


class RekeyCeremony:
    """One rekey ceremony against a server, through :class:`~toolkit.secrets.rekey.Rekey`.

    :attr:`phase` is ``"idle"`` (no attempt), ``"collecting"`` (current shares
    being provided), ``"verifying"`` (new shares being proven before the root
    key rotates) or ``"complete"`` (the new shares are in force).
    """

    def __init__(
        self, client: SecretsClient | Rekey, seal: Seal | None = None, *, target: str = "root"
    ) -> None:
        if isinstance(client, Rekey):
            self._rekey = client
            self._seal = seal or Seal(client._http)
        else:
            self._rekey = client.recovery_rekey if target == "recovery" else client.rekey
            self._seal = seal or client.seal
        if target not in ("root", "recovery") or self._rekey.target != target:
            raise InputError(
                f"target must be 'root' or 'recovery' and match the Rekey given, not {target!r}"
            )
        self.target = target
        # Whether the seal stores the root key (read once: a seal's kind does not change).
        self._recovery_seal: bool | None = None
        self._params: dict[str, Any] | None = None
        self._new_shares: list[Sensitive] | None = None
        self._new_shares_base64: list[Sensitive] | None = None
        self._pgp_fingerprints: list[str] = []
        self._complete = False
        self._phase = "idle"
        self._progress = 0
        self._required: int | None = None
        self._last: Record = Record(kind="rekey-ceremony")
        # What the ceremony record shows: one entry a step, never a share.
        self._journal: list[dict[str, Any]] = []

    def __repr__(self) -> str:
        need = "" if self._required is None else f" {self._progress}/{self._required}"
        which = ", recovery shares" if self.target == "recovery" else ""
        return f"<RekeyCeremony {self._phase}{need} ({self._rekey.api_flavour}{which})>"

    @property
    def recovery_seal(self) -> bool:
        """Whether the seal stores the root key (auto-unseal); the key holders then
        hold recovery shares. From ``GET /sys/seal-status`` (``recovery_seal``), read once."""
        if self._recovery_seal is None:
            self._recovery_seal = self._seal.share_kind() == "recovery"
        return self._recovery_seal

    @property
    def share_kind(self) -> str:
        """The shares the key holders give: ``"recovery"`` or ``"unseal"``."""
        return "recovery" if self.recovery_seal else "unseal"

    @property
    def new_share_kind(self) -> str:
        """What the ceremony hands out: ``"unseal"`` or ``"recovery"`` shares, or ``""``
        when the seal keeps the new root key itself (a root rekey on a recovery seal)."""
        if self.target == "recovery":
            return "recovery"
        return "" if self.recovery_seal else "unseal"

    # -- what the server says --------------------------------------------------
    @property
    def phase(self) -> str:
        """The phase seen at the latest :meth:`status` (every step ends with one)."""
        return self._phase

    @property
    def progress(self) -> int:
        """Shares provided so far in the current phase."""
        return self._progress

    @property
    def required(self) -> int | None:
        """Shares the current phase needs (current threshold, or the new one when verifying)."""
        return self._required

    @property
    def api_flavour(self) -> str:
        """The rekey endpoints in use: ``"legacy"`` or ``"rotate-root"``."""
        return self._rekey.api_flavour

    def status(self) -> Record:
        """Re-read the attempt from the server and return the ceremony's view of it.

        Fields: ``phase``, ``progress``, ``required``, ``nonce`` (the nonce the
        next share goes with), ``t``, ``n``, ``pgp_fingerprints``, ``backup``,
        ``verification_required``, and what the shares are: ``share_kind`` (the
        key holders': ``recovery`` or ``unseal``), ``new_share_kind`` (handed
        out: ``unseal``, ``recovery``, or empty when the seal keeps the key).
        Never contains a share.
        """
        st = self._rekey.status()
        verify: Record | None = None
        if st.get("started") and st.get("verification_required"):
            try:
                verify = self._rekey.verify_status()
            except APIError:
                verify = None
            if verify is not None and not verify.get("nonce"):
                verify = None
        if verify is not None:
            phase, nonce = "verifying", verify.get("nonce")
            progress, required = integer(verify.get("progress"), "progress"), verify.get("t")
        elif st.get("started"):
            phase, nonce = "collecting", st.get("nonce")
            progress, required = integer(st.get("progress"), "progress"), st.get("required")
            self._complete = False
        else:
            phase = "complete" if self._complete else "idle"
            nonce, progress, required = None, 0, None
        self._phase, self._progress = phase, progress
        self._required = None if required is None else int(required)
        self._last = Record(
            {
                "phase": phase,
                "progress": progress,
                "required": self._required,
                "nonce": nonce,
                "t": st.get("t"),
                "n": st.get("n"),
                "pgp_fingerprints": st.get("pgp_fingerprints") or self._pgp_fingerprints,
                "backup": bool(st.get("backup")),
                "verification_required": bool(st.get("verification_required")),
                "share_kind": self.share_kind,
                "new_share_kind": self.new_share_kind,
            },
            kind="rekey-ceremony",
        )
        return self._last

    # -- steps -------------------------------------------------------------------
    def start(
        self,
        shares: int,
        threshold: int,
        pgp_keys: Sequence[str] | None = None,
        backup: bool = False,
        verify: bool = False,
    ) -> Record:
        """Start an attempt for ``shares`` new shares, any ``threshold`` of which unseal.

        ``pgp_keys`` (base64 public keys, one per share) encrypt the new shares;
        ``backup`` keeps a copy of the encrypted shares on the server;
        ``verify`` requires the new shares to be proven before the root key
        rotates. Returns the status.
        """
        self._params = {
            "shares": shares,
            "threshold": threshold,
            "pgp_keys": list(pgp_keys) if pgp_keys is not None else None,
            "backup": backup,
            "verify": verify,
        }
        self._forget()
        try:
            self._rekey.init(
                shares,
                threshold,
                pgp_keys=pgp_keys,
                backup=backup,
                require_verification=verify,
            )
        except APIError:
            self.status()
            raise
        return self._note("started", new_attempt=True)

    def submit_share(self, share: str | Sensitive) -> Record:
        """Provide one current share (unseal, or recovery on a recovery seal), with the
        server's current nonce.

        The share is checked first (hex or base64, of a share's size). When the
        threshold is reached the new shares are kept (:attr:`new_shares`) and the
        phase becomes ``verifying`` or ``complete``. Returns the status.
        """
        status, result = self._send_share(
            "collecting", "collecting shares", self._rekey.update, check_share(share)
        )
        if result.get("complete"):
            self._new_shares = list(result.get("keys") or [])
            self._new_shares_base64 = list(result.get("keys_base64") or [])
            self._pgp_fingerprints = list(result.get("pgp_fingerprints") or [])
            if not result.get("verification_required") and not result.get("verification_nonce"):
                self._complete = True
        return self._note("current share entered", nonce=status["nonce"])

    def verify_share(self, share: str | Sensitive) -> Record:
        """Provide one share of the new set while verifying; at ``t`` shares the key rotates."""
        expected = None
        if self._new_shares and not self._pgp_fingerprints:
            expected = len(bytes.fromhex(self._new_shares[0].reveal()))
        status, result = self._send_share(
            "verifying",
            "verifying new shares",
            self._rekey.verify_update,
            check_share(share, expected_bytes=expected),
        )
        if result.get("complete"):
            self._complete = True
        return self._note("new share verified", nonce=status["nonce"])

    def _send_share(
        self, phase: str, doing: str, send: Callable[[str, str], Record], text: str
    ) -> tuple[Record, Record]:
        """Send one checked share with the server's current nonce, in ``phase`` only;
        a refusal reads the status again before it is raised. Returns the status
        read before sending and the server's answer."""
        status = self.status()
        if self._phase != phase:
            raise InputError(f"no rekey attempt is {doing} (phase: {self._phase})")
        try:
            result = send(text, str(status["nonce"]))
        except APIError:
            self.status()
            raise
        return status, result

    def cancel(self) -> Record:
        """Cancel the attempt on the server; the current shares stay valid."""
        try:
            self._rekey.cancel()
        finally:
            self._forget()
            self.status()
        return self._last

    def restart(self) -> Record:
        """Cancel and start again with the same parameters (a new nonce, progress 0)."""
        if self._params is None:
            raise InputError("nothing to restart: start() was never called")
        params = self._params
        self._rekey.cancel()
        return self.start(**params)

    @property
    def new_shares(self) -> list[Sensitive]:
        """The new shares (hex, or PGP-encrypted when PGP keys were given), as Sensitive.

        Available once the update phase has completed.
        """
        if self._new_shares is None:
            raise InputError(
                f"the new shares exist once the current shares reach the threshold "
                f"(phase: {self._phase})"
            )
        # Empty when the seal keeps the new root key (a root rekey on a recovery seal).
        return list(self._new_shares)

    @property
    def new_shares_base64(self) -> list[Sensitive]:
        """The new shares in base64 (``keys_base64``), as Sensitive."""
        if self._new_shares_base64 is None:
            raise InputError(f"the new shares are not available yet (phase: {self._phase})")
        return list(self._new_shares_base64)

    def prove_unseal(
        self, new_shares: Sequence[str | Sensitive] | None = None, *, allow_remote: bool = False
    ) -> Record:
        """SEAL the server, then unseal it with ``new_shares`` (default :attr:`new_shares`).

        This seals the server: every client is refused until the unseal
        finishes. It proves the new shares open the server, and is meant for a
        sandbox or a test server: it refuses a server that is not on this machine
        (loopback) unless ``allow_remote=True``. PGP-encrypted shares must be
        decrypted first. Returns the seal status after the last share.
        """
        shares = list(new_shares) if new_shares is not None else self.new_shares
        if not allow_remote and not _is_loopback(self._seal._http.address):
            raise InputError(
                "prove_unseal seals the server; it runs against a server on this machine "
                "only, unless allow_remote=True"
            )
        texts = [check_share(s) for s in shares]
        if not texts:
            raise InputError("prove_unseal needs the new shares")
        self._seal.seal()
        status = self._seal.status()
        for text in texts:
            status = self._seal.unseal(text)
            if not status.get("sealed"):
                break
        if status.get("sealed"):
            raise InputError(
                f"the server is still sealed after {len(texts)} shares "
                f"(progress {status.get('progress')}/{status.get('t')}); "
                "provide the remaining shares with client.seal.unseal()"
            )
        return status

    # -- after the ceremony: live verification, the record, the checklist ---------------
    def verify_live(self) -> Record:
        """Check on the server that the ceremony took effect.

        Reads the rekey status (no attempt may be left in progress) and
        ``GET /sys/seal-status`` (its ``n`` and ``t`` must be the new share
        count and threshold). Returns ``ok`` with ``rekey_complete``,
        ``seal_n``, ``seal_t``, ``expected_n``, ``expected_t``, ``sealed`` and
        ``problems`` (sentences; empty when ``ok``). Reads only.
        """
        if self._params is None:
            raise InputError("nothing to verify: start() was never called by this ceremony")
        status = self.status()
        seal = self._seal.status()
        expected_n, expected_t = self._params["shares"], self._params["threshold"]
        problems = []
        if status["phase"] != "complete":
            problems.append(f"the rekey is not complete (phase: {status['phase']})")
        if seal.get("n") != expected_n or seal.get("t") != expected_t:
            problems.append(
                f"the seal reports {seal.get('t')} of {seal.get('n')} shares, "
                f"not the new {expected_t} of {expected_n}"
            )
        return Record(
            {
                "ok": not problems,
                "rekey_complete": status["phase"] == "complete",
                "seal_n": seal.get("n"),
                "seal_t": seal.get("t"),
                "expected_n": expected_n,
                "expected_t": expected_t,
                "sealed": seal.get("sealed"),
                "problems": problems,
            },
            kind="rekey-verification",
        )

    def record(self) -> Record:
        """The ceremony record to file: what was done and when, never a share.

        ``server``, ``api_flavour``, ``shares`` and ``threshold`` asked for,
        ``pgp_fingerprints`` (of the holders' keys, empty without PGP),
        ``backup``, ``verification_required``, ``nonces`` (of the attempt and of
        its verification), ``phase`` and ``steps``: one entry a step with
        ``event`` (``started``, ``current share entered``, ``new share
        verified``), ``at`` (UTC, the server's clock, ISO 8601), ``nonce``,
        ``progress`` and ``required`` after the step.
        """
        params = self._params or {}
        nonces = list(dict.fromkeys(e["nonce"] for e in self._journal if e.get("nonce")))
        fingerprints = self._pgp_fingerprints or self._last.get("pgp_fingerprints") or []
        return Record(
            {
                "server": self._rekey._http.address,
                "api_flavour": self._rekey.api_flavour,
                "shares": params.get("shares"),
                "threshold": params.get("threshold"),
                "pgp_fingerprints": list(fingerprints),
                "backup": bool(params.get("backup")),
                "verification_required": bool(params.get("verify")),
                "nonces": nonces,
                "phase": self._phase,
                "steps": [dict(e) for e in self._journal],
            },
            kind="rekey-ceremony-record",
        )

    def record_json(self) -> str:
        """:meth:`record` as indented JSON text."""
        return json.dumps(dict(self.record()), indent=2)

    def save_record(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`record_json` to ``path``, readable by its owner only (mode 0600).

        The file is created 0600 (or an existing one is set to 0600 before it
        is written), so no other user can read it at any moment. Returns the path.
        """
        target = Path(path)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, self.record_json().encode())
        finally:
            os.close(fd)
        return target

    def checklist(self) -> list[Record]:
        """What to do once the ceremony is over, each item with ``item``, ``why`` and ``how``.

        Always: retire the old shares, confirm each new holder stored theirs,
        file the ceremony record; when a backup was kept, delete it first.
        """
        items = []
        if (self._params or {}).get("backup"):
            items.append(
                (
                    "Delete the backup of the encrypted shares",
                    "the server keeps a copy of every new share (PGP-encrypted) until told not to",
                    "client.rekey.delete_backup()  (DELETE sys/rekey/backup, sudo)",
                )
            )
        items += [
            (
                "Retire the old shares",
                "the old shares no longer unseal this server; a copy left around only misleads",
                "each former holder destroys their old share and confirms it",
            ),
            (
                "Confirm each new holder stored their share",
                "a share not stored before the session ends is lost",
                "ask each holder, out of band, to confirm where their share is stored",
            ),
            (
                "File the ceremony record",
                "auditors ask who was there, when, and which keys encrypted the shares",
                "ceremony.save_record(path)  (written 0600)",
            ),
        ]
        return [
            Record({"item": item, "why": why, "how": how}, kind="checklist-item")
            for item, why, how in items
        ]

    def _note(self, event: str, *, nonce: Any = None, new_attempt: bool = False) -> Record:
        """The status after a step, read again; the step goes into the journal with it
        (``nonce``, when given, is the one the step was sent with)."""
        status = self.status()
        if new_attempt:
            self._journal = []
        self._journal.append(
            {
                "event": event,
                "at": self._rekey._http.server_now().isoformat(),
                "nonce": nonce if nonce is not None else status.get("nonce"),
                "progress": status.get("progress"),
                "required": status.get("required"),
                "phase": status.get("phase"),
            }
        )
        return status

    def _forget(self) -> None:
        self._new_shares = None
        self._new_shares_base64 = None
        self._pgp_fingerprints = []
        self._complete = False


def _is_loopback(address: str) -> bool:
    host = urlsplit(address).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
