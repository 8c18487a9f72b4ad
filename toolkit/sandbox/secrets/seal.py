"""The seal: the root key, its unseal (or recovery) shares, sealing and unsealing.

The sandbox starts initialised and unsealed, like a development server, but
with a real root key (32 random bytes) split into ``key_shares`` unseal shares
of which ``key_threshold`` rebuild it. Only a SHA-256 digest of the root key is
kept: a share set is accepted when the key it rebuilds has that digest. The
initial shares are kept for :meth:`SealState.write_init_file` (the answer the real
server gives to ``sys/init``); shares never appear in a repr, a log line or an
error message.

Endpoints served from here (see ``http/sys_seal.py``): ``sys/seal-status``,
``sys/seal``, ``sys/unseal``, ``sys/init``, ``sys/health``, ``sys/leader``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import uuid
from collections.abc import Callable
from typing import Any

from . import shamir
from .errors import InvalidRequest, SecretsError, ServerSealed

__all__ = [
    "COMMIT_DATE",
    "ROOT_KEY_BYTES",
    "SERVER_VERSION",
    "SealState",
    "decode_key",
    "encode_shares",
    "rebuild_key",
    "sealed_error",
    "validate_share_config",
]

# The release the sandbox imitates (see the project's notes on the real server).
SERVER_VERSION = "2.7.2"
COMMIT_DATE = "2025-01-01T00:00:00Z"

ROOT_KEY_BYTES = 32
# What the real server accepts as one share: at least an AES-128 key, at most
# an AES-256 key plus the one x-coordinate byte of a Shamir share.
MIN_KEY_BYTES = 16
MAX_KEY_BYTES = ROOT_KEY_BYTES + 1


def sealed_error() -> SecretsError:
    """The answer to any call that needs an unsealed server while it is sealed."""
    return ServerSealed("Vault is sealed")


def decode_key(text: Any, field: str = "key") -> bytes:
    """One share from its hex or base64 text, as the real server reads ``key``.

    Hex is tried first; text that is not hex, or whose hex is not of a share's
    length, is read as standard base64. Refuses with 400 naming the field.
    """
    if not isinstance(text, str) or not text:
        raise InvalidRequest(f"'{field}' must be specified in request body as JSON")
    try:
        key = bytes.fromhex(text)
        if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
            raise ValueError("not of a share's length")
    except ValueError:
        try:
            key = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise InvalidRequest(f"'{field}' must be a valid hex or base64 string") from None
    if len(key) < MIN_KEY_BYTES:
        raise InvalidRequest(f"key is shorter than minimum {MIN_KEY_BYTES} bytes")
    if len(key) > MAX_KEY_BYTES:
        raise InvalidRequest(f"key is longer than maximum {MAX_KEY_BYTES} bytes")
    return key


def encode_shares(shares: list[bytes]) -> dict[str, list[str]]:
    """``keys`` (hex) and ``keys_base64`` for a list of shares, as the real server shows them."""
    return {
        "keys": [share.hex() for share in shares],
        "keys_base64": [base64.b64encode(share).decode("ascii") for share in shares],
    }


def validate_share_config(shares: Any, threshold: Any, context: str) -> tuple[int, int]:
    """Check a shares/threshold pair by the real server's rules; 400 naming the field.

    ``context`` starts the message ("invalid rekey seal configuration", ...).
    """
    for field, value in (("secret_shares", shares), ("secret_threshold", threshold)):
        if value is None:
            raise InvalidRequest(f"{context}: {field} is required")
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidRequest(f"{context}: {field} must be an integer, got {value!r}")
    reason = ""
    if shares < 1:
        reason = f"secret_shares must be at least one (got {shares})"
    elif threshold < 1:
        reason = f"secret_threshold must be at least one (got {threshold})"
    elif shares > 1 and threshold == 1:
        reason = "secret_threshold must be greater than one for multiple shares"
    elif shares > shamir.MAX_SHARES:
        reason = f"secret_shares must be less than 256 (got {shares})"
    elif threshold > shares:
        reason = f"secret_threshold ({threshold}) cannot be larger than secret_shares ({shares})"
    if reason:
        raise InvalidRequest(f"{context}: {reason}")
    return shares, threshold


def _split_key(key: bytes, shares: int, threshold: int) -> list[bytes]:
    # With one share the real server hands out the key itself (no split).
    if shares == 1:
        return [key]
    return shamir.split(key, shares, threshold)


def rebuild_key(parts: list[bytes], threshold: int) -> bytes | None:
    """The key ``parts`` rebuild, or None when they cannot be combined."""
    if threshold == 1:
        return parts[0]
    try:
        return shamir.combine(parts)
    except shamir.ShamirError:
        return None


class SealState:
    """The seal of the sandbox's secrets server: plain state, no HTTP.

    With ``recovery=True`` the seal stores the root key itself (an auto-unseal
    seal, as OpenBao's ``seal "static"``), and its shares are *recovery* shares:
    they authorise rekeys and unseal a server sealed by hand, while the root key
    never leaves the seal (spec 4.3: "stored shares"). ``shares``, ``threshold``
    and the digest then describe the recovery key.
    """

    def __init__(self, shares: int = 5, threshold: int = 3, *, recovery: bool = False) -> None:
        try:
            validate_share_config(shares, threshold, "invalid seal configuration")
        except SecretsError as exc:
            raise ValueError(str(exc)) from None
        self.recovery = recovery
        # Times the stored root key was rotated (recovery seals only: nothing else shows it).
        self.stored_key_rotations = 0
        self.shares = shares
        self.threshold = threshold
        self.sealed = False
        self.cluster_name = "sandbox-cluster-" + secrets.token_hex(4)
        self.cluster_id = str(uuid.uuid4())
        root_key = secrets.token_bytes(ROOT_KEY_BYTES)
        self._root_digest = hashlib.sha256(root_key).digest()
        self._initial_shares = _split_key(root_key, shares, threshold)
        self._progress: list[bytes] = []
        self._nonce = ""
        self._on_seal: list[Callable[[], None]] = []

    def __repr__(self) -> str:
        state = "sealed" if self.sealed else "unsealed"
        kind = " recovery" if self.recovery else ""
        return f"<SealState {state}{kind} t={self.threshold} n={self.shares}>"

    @property
    def seal_type(self) -> str:
        """What ``sys/seal-status`` calls the seal: ``shamir``, or ``static`` for stored shares."""
        return "static" if self.recovery else "shamir"

    # -- shares -----------------------------------------------------------------
    def rebuilds_root_key(self, parts: list[bytes]) -> bool:
        """Whether ``parts`` (a threshold's worth) rebuild the key the shares split.

        That is the root key on a Shamir seal, the recovery key on a recovery seal.
        """
        key = rebuild_key(parts, self.threshold)
        if key is None:
            return False
        return hmac.compare_digest(hashlib.sha256(key).digest(), self._root_digest)

    @staticmethod
    def new_root_key(shares: int, threshold: int) -> tuple[bytes, list[bytes]]:
        """A fresh root key and its split into ``shares`` with ``threshold``."""
        key = secrets.token_bytes(ROOT_KEY_BYTES)
        return key, _split_key(key, shares, threshold)

    def rotate(self, new_key: bytes, shares: int, threshold: int) -> None:
        """Make ``new_key`` the shared key: its shares count from now on, the old ones not.

        The root key on a Shamir seal; the recovery key on a recovery seal.
        """
        self._root_digest = hashlib.sha256(new_key).digest()
        self.shares = shares
        self.threshold = threshold

    def rotate_stored_key(self) -> None:
        """A recovery seal's root key is replaced inside the seal: no share changes hands."""
        if not self.recovery:
            raise ValueError("only a seal with stored shares keeps the root key itself")
        self.stored_key_rotations += 1

    # -- sealing ------------------------------------------------------------------
    def on_seal(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever the server is sealed (to drop in-memory progress)."""
        self._on_seal.append(callback)

    def seal(self) -> None:
        """Seal: authenticated calls answer 503 until enough shares are given back."""
        self.sealed = True
        self.reset_unseal()
        for callback in self._on_seal:
            callback()

    def reset_unseal(self) -> None:
        """Forget the shares given so far to ``sys/unseal``."""
        self._progress = []
        self._nonce = ""

    def unseal(self, key: bytes) -> None:
        """Give one share (``sys/unseal``); unseal once a threshold rebuilds the root key.

        A share given twice is ignored, as on the real server. A set that does
        not rebuild the root key is refused with 400 and progress starts over.
        """
        if not self.sealed:
            return
        if any(hmac.compare_digest(existing, key) for existing in self._progress):
            return
        if not self._progress:
            self._nonce = str(uuid.uuid4())
        self._progress.append(key)
        if len(self._progress) < self.threshold:
            return
        parts = self._progress
        self.reset_unseal()
        if not self.rebuilds_root_key(parts):
            raise InvalidRequest("Unseal failed, invalid key")
        self.sealed = False

    # -- what the answers show ------------------------------------------------------
    @property
    def progress(self) -> int:
        """How many unseal shares have been given towards the next unseal."""
        return len(self._progress)

    @property
    def nonce(self) -> str:
        """The nonce of the unseal in progress (empty when none is)."""
        return self._nonce

    def write_init_file(self, path: str, root_token: str) -> None:
        """Write the initial shares and root token as the real ``sys/init`` answers them.

        The file is created with mode 0600: it holds everything needed to
        unseal and to act as root.
        """
        if self.recovery:
            # The real ``sys/init`` of an auto-unseal seal: no unseal shares, recovery ones.
            recovery = encode_shares(self._initial_shares)
            payload = {
                **encode_shares([]),
                "recovery_keys": recovery["keys"],
                "recovery_keys_base64": recovery["keys_base64"],
                "root_token": root_token,
            }
        else:
            payload = {**encode_shares(self._initial_shares), "root_token": root_token}
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            json.dump(payload, handle, indent=2)
            handle.write("\n")
