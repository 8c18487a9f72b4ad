"""The rekey attempt (spec part 3 "Rekey attempt", section 4.3): plain state, no HTTP.

One attempt exists at a time. It is started with the new share count and
threshold, authorised by a threshold of the *current* shares (``update``), and
then either rotates the root key at once or, with ``require_verification``,
hands out the new shares and waits for a threshold of them (``verify``) before
rotating. Cancelling at any point leaves the current shares valid. Every
refusal is decided before anything changes, except where the real server
resets on purpose: a share set that does not rebuild the key clears progress
(and, when verifying, issues a new verification nonce).

Served by ``http/sys_rekey.py`` at ``sys/rekey/*`` and ``sys/rotate/root/*``.
"""

from __future__ import annotations

import hmac
import uuid
from dataclasses import dataclass, field
from typing import Any

from . import pgp
from .errors import InvalidRequest
from .seal import SealState, rebuild_key, sealed_error, validate_share_config

__all__ = [
    "NewShares",
    "RekeyAttempt",
    "RekeyBackup",
    "RekeyOperation",
    "RekeyResult",
    "RekeyStatus",
    "VerificationStatus",
]


@dataclass(eq=False)
class RekeyAttempt:
    """The attempt under way: its settings, the shares given, the verification phase."""

    shares: int
    threshold: int
    pgp_keys: list[pgp.PublicKey]
    backup: bool
    require_verification: bool
    nonce: str = field(default_factory=lambda: str(uuid.uuid4()))
    progress: list[bytes] = field(default_factory=list)
    # Set once the current shares have authorised the attempt and verification
    # was asked for: the new key waits here until a threshold of its shares is given.
    verification_key: bytes | None = None
    verification_nonce: str = ""
    verification_progress: list[bytes] = field(default_factory=list)

    def __repr__(self) -> str:
        phase = "verification" if self.verification_key is not None else "in progress"
        return f"<RekeyAttempt {phase} t={self.threshold} n={self.shares} nonce={self.nonce}>"

    @property
    def fingerprints(self) -> list[str] | None:
        return [key.fingerprint for key in self.pgp_keys] or None


@dataclass(frozen=True)
class NewShares:
    """What a rekey's status and its completed update both say of the new shares: the
    PGP keys that encrypt them, whether they are backed up, and their verification."""

    pgp_fingerprints: list[str] | None
    backup: bool
    verification_required: bool
    # The status: "" until the new shares exist; a completed update: "" unless
    # verification was asked for.
    verification_nonce: str


@dataclass(frozen=True)
class RekeyStatus(NewShares):
    """Where a rekey stands (``sys/rekey/init``, and an update below the threshold)."""

    started: bool
    nonce: str
    threshold: int  # 0 while none is under way
    shares: int
    progress: int
    required: int  # the current seal's threshold


@dataclass(frozen=True)
class RekeyResult(NewShares):
    """A completed update: the new shares handed out (PGP-encrypted when keys were given)."""

    nonce: str
    shares: list[bytes] = field(repr=False)


@dataclass(frozen=True)
class VerificationStatus:
    """Where the verification of the new shares stands (``sys/rekey/verify``)."""

    nonce: str
    started: bool
    threshold: int
    shares: int
    progress: int


@dataclass(frozen=True)
class RekeyBackup:
    """The new shares of a rekey, PGP-encrypted, kept by the key fingerprint that encrypts
    each (``sys/rekey/backup``); stored with the state (``--state``)."""

    nonce: str
    keys: dict[str, list[bytes]] = field(repr=False)


def _flag(value: Any, name: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidRequest(f"{name} must be a boolean, got {value!r}")
    return value


def _already_given(parts: list[bytes], key: bytes) -> bool:
    return any(hmac.compare_digest(existing, key) for existing in parts)


class RekeyOperation:
    """Rekeying the shares of one :class:`~.seal.SealState`.

    ``recovery=False`` rekeys the root key (``sys/rekey/*``, ``sys/rotate/root/*``).
    On a Shamir seal that hands out new unseal shares. On a seal with stored shares
    (``seal.recovery``) the recovery shares authorise it, the new root key stays in
    the seal, and the share settings are coerced to 1 of 1 as OpenBao 2.7 does (the
    spec asks them to be 1), with no shares returned.

    ``recovery=True`` rekeys the recovery shares of such a seal
    (``sys/rekey-recovery-key/*``, ``sys/rotate/recovery/*``); on a Shamir seal
    it is refused.
    """

    def __init__(self, seal: SealState, *, recovery: bool = False) -> None:
        self.seal = seal
        self.recovery = recovery
        self.attempt: RekeyAttempt | None = None
        self._backup: RekeyBackup | None = None
        # The real server forgets an attempt when it seals.
        seal.on_seal(self._forget)

    def __repr__(self) -> str:
        return f"<RekeyOperation {self.attempt!r}>"

    def _forget(self) -> None:
        self.attempt = None

    def _unsealed(self) -> None:
        if self.seal.sealed:
            raise sealed_error()
        if self.recovery and not self.seal.recovery:
            raise InvalidRequest(
                "recovery keys are not supported by this seal: it is a shamir seal"
            )

    @property
    def _stored_shares(self) -> bool:
        """Whether this rekeys a root key the seal keeps (no shares handed out)."""
        return self.seal.recovery and not self.recovery

    # -- GET/POST/DELETE sys/rekey/init --------------------------------------------
    def status(self) -> RekeyStatus:
        """Where the rekey stands (``GET sys/rekey/init``)."""
        self._unsealed()
        attempt = self.attempt
        return RekeyStatus(
            started=attempt is not None,
            nonce=attempt.nonce if attempt else "",
            threshold=attempt.threshold if attempt else 0,
            shares=attempt.shares if attempt else 0,
            progress=len(attempt.progress) if attempt else 0,
            required=self.seal.threshold,
            pgp_fingerprints=attempt.fingerprints if attempt else None,
            backup=bool(attempt and attempt.pgp_keys and attempt.backup),
            verification_required=bool(attempt and attempt.require_verification),
            verification_nonce=attempt.verification_nonce if attempt else "",
        )

    def start(
        self,
        secret_shares: Any,
        secret_threshold: Any,
        pgp_keys: Any = None,
        backup: Any = False,
        require_verification: Any = False,
    ) -> RekeyStatus:
        """Start an attempt (``POST sys/rekey/init``); returns its status.

        Refused with 400 when the settings are invalid or an attempt is already
        under way (its settings then stay as they were).
        """
        self._unsealed()
        wants_backup = _flag(backup, "backup")
        verification = _flag(require_verification, "require_verification")
        if pgp_keys is not None and not isinstance(pgp_keys, list):
            raise InvalidRequest("pgp_keys must be an array of strings")
        if self._stored_shares:
            return self._start_stored(pgp_keys, wants_backup, verification)
        context = (
            "invalid recovery configuration"
            if self.recovery
            else ("invalid rekey seal configuration")
        )
        shares, threshold = validate_share_config(secret_shares, secret_threshold, context)
        if wants_backup and not pgp_keys:
            raise InvalidRequest(
                "cannot request a backup of the new keys without providing PGP keys for encryption",
            )
        if pgp_keys and len(pgp_keys) != shares:
            raise InvalidRequest(
                f"incorrect number of PGP keys for rekey: pgp_keys has {len(pgp_keys)} "
                f"entries, secret_shares is {shares}",
            )
        keys = pgp.parse_public_keys(pgp_keys or None)
        if self.attempt is not None:
            raise InvalidRequest("rekey already in progress")
        self.attempt = RekeyAttempt(shares, threshold, keys, wants_backup, verification)
        return self.status()

    def _start_stored(
        self, pgp_keys: list[Any] | None, backup: bool, verification: bool
    ) -> RekeyStatus:
        """Start rotating a root key the seal keeps: whatever share settings were asked
        are coerced to 1 of 1 (as OpenBao 2.7 does); nothing that needs shares is allowed."""
        if pgp_keys:
            raise InvalidRequest("PGP key encryption not supported when using stored keys")
        if backup:
            raise InvalidRequest("key backup not supported when using stored keys")
        if verification:
            raise InvalidRequest(
                "requiring verification not supported when rotating the barrier key with "
                "recovery keys",
            )
        if self.attempt is not None:
            raise InvalidRequest("rekey already in progress")
        self.attempt = RekeyAttempt(1, 1, [], False, False)
        return self.status()

    def cancel(self) -> None:
        """Drop the attempt (``DELETE sys/rekey/init``); the current shares stay valid."""
        self._unsealed()
        self.attempt = None

    # -- POST sys/rekey/update -------------------------------------------------------
    def update(self, key: bytes, nonce: Any) -> RekeyStatus | RekeyResult:
        """Give one current share; at the threshold, make the new shares.

        Below the threshold the answer is the status. At the threshold
        the shares must rebuild the current root key (else 400 and progress
        starts over); then the new shares are returned and, unless
        verification was asked for, the root key is rotated at once.
        """
        self._unsealed()
        attempt = self.attempt
        if attempt is None:
            raise InvalidRequest("no barrier rekey in progress")
        if attempt.verification_key is not None:
            raise InvalidRequest(
                "rekey operation already finished; verification must be performed; "
                f'nonce for the verification operation is "{attempt.verification_nonce}"',
            )
        if nonce != attempt.nonce:
            raise InvalidRequest(
                f'incorrect nonce supplied; nonce for this rekey operation is "{attempt.nonce}"',
            )
        if _already_given(attempt.progress, key):
            raise InvalidRequest("given key has already been provided during this rekey operation")
        attempt.progress.append(key)
        if len(attempt.progress) < self.seal.threshold:
            return self.status()

        parts, attempt.progress = attempt.progress, []
        if not self.seal.rebuilds_root_key(parts):
            raise InvalidRequest(
                "root key verification failed: the shares given do not rebuild the current "
                "root key; rekey progress has been reset",
            )
        if self._stored_shares:
            # The seal makes and keeps the new root key: no share is handed out.
            self.seal.rotate_stored_key()
            self.attempt = None
            return RekeyResult(
                nonce=attempt.nonce,
                shares=[],
                pgp_fingerprints=None,
                backup=False,
                verification_required=False,
                verification_nonce="",
            )
        new_key, new_shares = SealState.new_root_key(attempt.shares, attempt.threshold)
        handed_out = new_shares
        if attempt.pgp_keys:
            handed_out = pgp.encrypt_shares(new_shares, attempt.pgp_keys)
            if attempt.backup:
                self._store_backup(attempt, handed_out)

        if attempt.require_verification:
            attempt.verification_key = new_key
            attempt.verification_nonce = str(uuid.uuid4())
        else:
            self.seal.rotate(new_key, attempt.shares, attempt.threshold)
            self.attempt = None
        return RekeyResult(
            nonce=attempt.nonce,
            shares=handed_out,
            pgp_fingerprints=attempt.fingerprints,
            backup=attempt.backup,
            verification_required=attempt.require_verification,
            verification_nonce=attempt.verification_nonce if attempt.require_verification else "",
        )

    # -- GET/POST/DELETE sys/rekey/verify ------------------------------------------------
    def _attempt_for_verification(self) -> RekeyAttempt:
        self._unsealed()
        if self.attempt is None:
            raise InvalidRequest("no rekey configuration found")
        return self.attempt

    def verification_status(self) -> VerificationStatus:
        """Where the verification stands (``GET sys/rekey/verify``)."""
        attempt = self._attempt_for_verification()
        return VerificationStatus(
            attempt.verification_nonce,
            attempt.verification_key is not None,
            attempt.threshold,
            attempt.shares,
            len(attempt.verification_progress),
        )

    def restart_verification(self) -> VerificationStatus:
        """``DELETE sys/rekey/verify``: progress back to 0 and a new nonce; the attempt stays."""
        attempt = self._attempt_for_verification()
        if attempt.verification_key is not None:
            attempt.verification_progress = []
            attempt.verification_nonce = str(uuid.uuid4())
        return self.verification_status()

    def verify(self, key: bytes, nonce: Any) -> VerificationStatus | str:
        """Give one *new* share; at the new threshold, rotate the root key.

        Below the threshold the answer is the verification status; at it, the
        nonce of the verification that completed. A set that
        does not rebuild the new key is refused with 400, progress goes back
        to 0 and a new verification nonce is issued.
        """
        self._unsealed()
        attempt = self.attempt
        if attempt is None:
            raise InvalidRequest("no rekey in progress")
        if attempt.verification_key is None:
            raise InvalidRequest("no rekey verification in progress")
        if nonce != attempt.verification_nonce:
            raise InvalidRequest(
                "incorrect nonce supplied; nonce for this verify operation is "
                f'"{attempt.verification_nonce}"',
            )
        if _already_given(attempt.verification_progress, key):
            raise InvalidRequest("given key has already been provided during this verify operation")
        attempt.verification_progress.append(key)
        if len(attempt.verification_progress) < attempt.threshold:
            return self.verification_status()

        parts, attempt.verification_progress = attempt.verification_progress, []
        rebuilt = rebuild_key(parts, attempt.threshold)
        if rebuilt is None or not hmac.compare_digest(rebuilt, attempt.verification_key):
            attempt.verification_nonce = str(uuid.uuid4())
            raise InvalidRequest(
                "rekey verification failed; incorrect key shares supplied; progress has been "
                f'reset and the new verification nonce is "{attempt.verification_nonce}"',
            )
        self.seal.rotate(attempt.verification_key, attempt.shares, attempt.threshold)
        self.attempt = None
        return attempt.verification_nonce

    # -- GET/DELETE sys/rekey/backup --------------------------------------------------
    def _store_backup(self, attempt: RekeyAttempt, encrypted: list[bytes]) -> None:
        keys: dict[str, list[bytes]] = {}
        for public_key, message in zip(attempt.pgp_keys, encrypted, strict=True):
            keys.setdefault(public_key.fingerprint, []).append(message)
        self._backup = RekeyBackup(attempt.nonce, keys)

    def read_backup(self) -> RekeyBackup | None:
        """The stored backup, or None."""
        self._unsealed()
        return self._backup

    def delete_backup(self) -> None:
        """Delete the stored backup of PGP-encrypted shares."""
        self._unsealed()
        self._backup = None
