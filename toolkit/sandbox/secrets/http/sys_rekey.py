"""HTTP for rekeying (spec 4.3): ``sys/rekey/*`` and ``sys/rotate/root/*``, and for a
seal with stored shares the recovery shares' ``sys/rekey-recovery-key/*`` and
``sys/rotate/recovery/*``.

The legacy ``sys/rekey/{init,update,verify}`` endpoints are unauthenticated
(as on a real server that enables them) and answer bare fields; the real
server's authenticated replacement ``sys/rotate/root/{init,update,verify}``
has the same fields and behaviour with answers under ``data``. The backups
(``sys/rekey/backup``, ``sys/rotate/root/backup``) need a token with
``sudo``. The root families drive ``service.rekey``, the recovery ones
``service.recovery_rekey`` (both a :class:`~..rekey.RekeyOperation`); the legacy
recovery family has no backup endpoint, as on OpenBao 2.7.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import InvalidRequest
from ..rekey import (
    NewShares,
    RekeyBackup,
    RekeyOperation,
    RekeyResult,
    RekeyStatus,
    VerificationStatus,
)
from ..seal import decode_key, encode_shares
from ._base import WRITE, SecretsRequest, bare, envelope, error, no_content, route

if TYPE_CHECKING:
    from ..models import SecretsService

__all__ = ["routes"]


def status_document(status: RekeyStatus) -> dict[str, Any]:
    """The legacy status shape (``sys/rekey/init``; an update below the threshold)."""
    return {
        "nonce": status.nonce,
        "started": status.started,
        "t": status.threshold,
        "n": status.shares,
        "progress": status.progress,
        "required": status.required,
        **_new_shares(status),
    }


def update_document(outcome: RekeyStatus | RekeyResult) -> dict[str, Any]:
    """An update's answer: the status below the threshold, else the new shares."""
    if isinstance(outcome, RekeyStatus):
        return status_document(outcome)
    return {
        "nonce": outcome.nonce,
        "complete": True,
        **encode_shares(outcome.shares),
        **_new_shares(outcome),
    }


def _new_shares(outcome: NewShares) -> dict[str, Any]:
    """What a status and a completed update both say of the new shares: the PGP keys
    that encrypt them, their backup, and their verification (its nonce once there is one)."""
    said: dict[str, Any] = {
        "pgp_fingerprints": outcome.pgp_fingerprints,
        "backup": outcome.backup,
        "verification_required": outcome.verification_required,
    }
    if outcome.verification_nonce:
        said["verification_nonce"] = outcome.verification_nonce
    return said


def backup_document(backup: RekeyBackup) -> dict[str, Any]:
    """``sys/rekey/backup``: the nonce, and the encrypted shares (``keys`` in hex,
    ``keys_base64``) by the fingerprint of the key that encrypts them."""
    by_key = {fp: encode_shares(shares) for fp, shares in backup.keys.items()}
    return {
        "nonce": backup.nonce,
        "keys": {fp: shares["keys"] for fp, shares in by_key.items()},
        "keys_base64": {fp: shares["keys_base64"] for fp, shares in by_key.items()},
    }


def verification_document(outcome: VerificationStatus | str) -> dict[str, Any]:
    """``sys/rekey/verify``: where the verification stands, or (a nonce) that it completed."""
    if isinstance(outcome, str):
        return {"nonce": outcome, "complete": True}
    return {
        "nonce": outcome.nonce,
        "started": outcome.started,
        "t": outcome.threshold,
        "n": outcome.shares,
        "progress": outcome.progress,
    }


def _share_and_nonce(call: SecretsRequest, *, named_fields: bool) -> tuple[bytes, Any]:
    """The ``key`` and ``nonce`` of an update or verify call.

    The replacement endpoints name a missing field; the legacy ones, like the
    real server, go on and report the nonce that was expected.
    """
    if named_fields:
        for name in ("key", "nonce"):
            if not call.body.get(name):
                raise InvalidRequest(f"missing required field '{name}'")
    return decode_key(call.body.get("key")), call.body.get("nonce", "")


def _rotate_shape(status: dict[str, Any]) -> dict[str, Any]:
    """A status as ``sys/rotate/root/*`` shows it (observed on OpenBao 2.7): idle, only
    ``started``, ``t``, ``n`` and ``required``; in progress, the nonce, progress and
    verification fields too, ``verification_nonce`` empty until the new shares exist;
    the PGP fields only for an attempt that has PGP keys. A completed update shows its
    fields with ``verification_nonce`` always there."""
    if status.get("complete"):
        return {"verification_nonce": "", **status}
    if not status.get("started"):
        return {k: status[k] for k in ("started", "t", "n", "required")}
    shaped = {
        k: status[k]
        for k in ("started", "t", "n", "required", "nonce", "progress", "verification_required")
    }
    shaped["verification_nonce"] = status.get("verification_nonce", "")
    if status.get("pgp_fingerprints"):
        shaped.update(pgp_fingerprints=status["pgp_fingerprints"], backup=status["backup"])
    return shaped


Ceremony = Callable[[SecretsRequest], RekeyOperation]


def _root(call: SecretsRequest) -> RekeyOperation:
    return call.service.rekey


def _recovery(call: SecretsRequest) -> RekeyOperation:
    return call.service.recovery_rekey


@dataclass(frozen=True)
class _Family:
    """One family of rekey endpoints: ``prefix`` (``sys/rekey``, ``sys/rotate/root``, ...),
    whether it is a ``rotate`` family (authenticated, answers under ``data``) or a legacy
    one (bare answers), and the ceremony it drives."""

    prefix: str
    rotate: bool
    ceremony_of: Ceremony

    def answer(self, body: dict[str, Any]) -> JSONResponse:
        return envelope(body) if self.rotate else bare(body)

    def shaped(self, call: SecretsRequest, status: dict[str, Any]) -> dict[str, Any]:
        """An init or update answer as the family shows it: ``sys/rotate/*`` its own way,
        the legacy root family on a seal with stored shares with ``t`` and ``n`` at 0."""
        if self.rotate:
            return _rotate_shape(status)
        if self.ceremony_of is _root:
            return _legacy_stored_shape(call, status)
        return status

    async def init(self, call: SecretsRequest) -> Response:
        ceremony = self.ceremony_of(call)
        method = call.request.method
        if method == "DELETE":
            ceremony.cancel()
            return no_content()
        if method in ("POST", "PUT"):
            body = call.body
            status = status_document(
                ceremony.start(
                    body.get("secret_shares"),
                    body.get("secret_threshold"),
                    body.get("pgp_keys"),
                    body.get("backup", False),
                    body.get("require_verification", False),
                )
            )
        else:
            status = status_document(ceremony.status())
        return self.answer(self.shaped(call, status))

    async def update(self, call: SecretsRequest) -> Response:
        key, nonce = _share_and_nonce(call, named_fields=self.rotate)
        result = update_document(self.ceremony_of(call).update(key, nonce))
        return self.answer(self.shaped(call, result))

    async def verify(self, call: SecretsRequest) -> Response:
        ceremony = self.ceremony_of(call)
        method = call.request.method
        if method == "DELETE":
            return self.answer(verification_document(ceremony.restart_verification()))
        if method in ("POST", "PUT"):
            key, nonce = _share_and_nonce(call, named_fields=self.rotate)
            return self.answer(verification_document(ceremony.verify(key, nonce)))
        return self.answer(verification_document(ceremony.verification_status()))

    async def backup(self, call: SecretsRequest) -> Response:
        ceremony = self.ceremony_of(call)
        if call.request.method == "DELETE":
            ceremony.delete_backup()
            return no_content()
        backup = ceremony.read_backup()
        if backup is None:
            return error(400, "no backed-up keys found")
        return envelope(backup_document(backup))


def _legacy(handler: Any, *, recovery: bool = False) -> Any:
    """A legacy handler that answers as OpenBao 2.5+ does while ``legacy_rekey`` is off:
    405 for ``sys/rekey/*``, 404 ``unsupported path`` for ``sys/rekey-recovery-key/*``."""

    async def gated(call: SecretsRequest) -> Response:
        if not call.service.legacy_rekey:
            if recovery:
                return error(404, "unsupported path")
            return error(405, "unsupported operation")
        return await handler(call)

    return gated


def _legacy_stored_shape(call: SecretsRequest, status: dict[str, Any]) -> dict[str, Any]:
    """The legacy root status on a seal with stored shares shows ``t`` and ``n`` as 0
    (observed on OpenBao 2.7); ``sys/rotate/root/*`` shows the 1 of 1 kept."""
    if call.service.seal.recovery and "t" in status and not status.get("complete"):
        return {**status, "t": 0, "n": 0}
    return status


_FAMILIES = (
    _Family("sys/rekey", False, _root),
    _Family("sys/rotate/root", True, _root),
    _Family("sys/rekey-recovery-key", False, _recovery),
    _Family("sys/rotate/recovery", True, _recovery),
)


def routes(service: SecretsService) -> list[Route]:
    table: list[Route] = []
    every = ["GET", "DELETE", *WRITE]
    for family in _FAMILIES:
        recovery = family.ceremony_of is _recovery

        def gate(handler: Any, rotate: bool = family.rotate, recovery: bool = recovery) -> Any:
            return handler if rotate else _legacy(handler, recovery=recovery)

        for name, handler, methods in (
            ("init", family.init, every),
            ("update", family.update, WRITE),
            ("verify", family.verify, every),
        ):
            path = f"{family.prefix}/{name}"
            table.append(route(service, path, gate(handler), methods, authenticated=family.rotate))
        if family.prefix == "sys/rekey-recovery-key":
            continue  # OpenBao 2.7 has no backup under the legacy recovery paths (404)
        path = f"{family.prefix}/backup"
        table.append(route(service, path, gate(family.backup), ["GET", "DELETE"], sudo=True))
    return table
