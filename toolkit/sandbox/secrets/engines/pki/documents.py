"""What the certificate engine answers: the ``data`` documents of :mod:`.http`'s handlers.

Plain dictionaries built from the engine's typed results (:mod:`.state`), shaped
as the real server shapes them; no request, no response. The handlers in
:mod:`.http` read a request (with :mod:`.bodies`), call the engine, and wrap one
of these in an envelope.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from .engine import PKIEngine
from .requests import CRLConfig, Output, URLConfig, short_duration
from .revocation import URL_FIELDS
from .roles import Role
from .state import (
    Imported,
    Issued,
    IssuedCert,
    Issuer,
    NewRequest,
    NewRoot,
    StoredKey,
    TidyRun,
    rfc3339,
)
from .x509 import (
    cert_pem,
    encode_cert,
    format_serial,
    is_self_signed,
    key_description,
    load_cert,
    private_key_output,
)

__all__ = [
    "cert_document",
    "config_issuers_document",
    "crl_config_document",
    "imported_document",
    "intermediate_document",
    "issued_document",
    "issuer_document",
    "key_document",
    "revoked_document",
    "role_document",
    "root_document",
    "tidy_status_document",
    "urls_document",
]


def issuer_document(engine: PKIEngine, issuer: Issuer) -> dict[str, Any]:
    """An issuer as ``GET issuer/:ref`` answers it."""
    return {
        "issuer_id": issuer.id,
        "issuer_name": issuer.name,
        "key_id": issuer.key_id,
        "certificate": issuer.certificate,
        "ca_chain": engine.chain(issuer),
        "manual_chain": None,
        "leaf_not_after_behavior": issuer.leaf_not_after_behavior,
        "usage": ",".join(sorted(issuer.usage)),
        "revocation_signature_algorithm": issuer.revocation_signature_algorithm,
        "revoked": False,
        "issuing_certificates": [],
        "crl_distribution_points": [],
        "delta_crl_distribution_points": [],
        "ocsp_servers": [],
    }


def key_document(key: StoredKey) -> dict[str, Any]:
    """A key as ``GET key/:ref`` answers it (never the key itself)."""
    return {"key_id": key.id, "key_name": key.name, "key_type": key.type, "key_bits": key.bits}


def crl_config_document(c: CRLConfig) -> dict[str, Any]:
    """``config/crl``: durations written as the server writes them (``72h``, ``15m``)."""
    return {
        "expiry": short_duration(c.expiry),
        "disable": c.disable,
        "ocsp_disable": c.ocsp_disable,
        "ocsp_expiry": short_duration(c.ocsp_expiry),
        "auto_rebuild": c.auto_rebuild,
        "auto_rebuild_grace_period": short_duration(c.auto_rebuild_grace_period),
        "enable_delta": c.enable_delta,
        "delta_rebuild_interval": short_duration(c.delta_rebuild_interval),
        "allow_expired_cert_revocation": c.allow_expired_cert_revocation,
    }


def urls_document(u: URLConfig) -> dict[str, Any]:
    """``config/urls``."""
    return {name: list(getattr(u, name)) for name in URL_FIELDS} | {
        "enable_templating": u.enable_templating
    }


def issued_document(engine: PKIEngine, issued: Issued, output: Output) -> dict[str, Any]:
    """A certificate just made, as ``data``: certificate, issuing CA, chain, serial, and the
    key if one was made, in the requested format.

    ``ca_chain`` is the signer's chain (the new certificate first for
    sign-intermediate, ``chain_from_self``); it is left out when empty, as
    when ``remove_roots_from_chain`` drops the only (root) issuer.
    """
    cert, signer, key = issued.cert, issued.signer, issued.key
    pem = cert_pem(cert)
    chain = ([pem] if issued.chain_from_self else []) + engine.chain(signer)
    if output.remove_roots_from_chain:
        chain = [c for c in chain if not is_self_signed(load_cert(c))]
    fmt = output.format
    data: dict[str, Any] = {
        "certificate": encode_cert(pem, fmt),
        "issuing_ca": encode_cert(signer.certificate, fmt),
        "serial_number": format_serial(cert.serial_number),
        "not_before": int(cert.not_valid_before_utc.timestamp()),
        "expiration": int(cert.not_valid_after_utc.timestamp()),
    }
    if chain:
        data["ca_chain"] = [encode_cert(c, fmt) for c in chain]
    if fmt == "pem_bundle":
        parts = [pem]
        if key is not None:
            parts.insert(0, private_key_output(key, "pem", "der"))
        if signer.certificate != pem and not is_self_signed(signer.cert):
            parts.append(signer.certificate)
        data["certificate"] = "\n".join(parts)
    if key is not None:
        key_fmt = "pem" if fmt == "pem_bundle" else fmt
        data["private_key"] = private_key_output(key, key_fmt, output.private_key_format)
        data["private_key_type"] = key_description(key.public_key())[0]
    return data


def imported_document(done: Imported) -> dict[str, Any]:
    """An import's answer: each list null when empty, as the real server answers."""
    return {
        "imported_issuers": done.issuers or None,
        "imported_keys": done.keys or None,
        "mapping": done.mapping,
        "existing_issuers": done.existing_issuers or None,
        "existing_keys": done.existing_keys or None,
    }


def config_issuers_document(engine: PKIEngine) -> dict[str, Any]:
    """``config/issuers``: the default issuer and whether it follows the latest."""
    return {
        "default": engine.default_issuer,
        "default_follows_latest_issuer": engine.default_follows_latest_issuer,
    }


def role_document(role: Role) -> dict[str, Any]:
    """A role as the server reads it back: every field, lists as lists."""
    return {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in role.values().items()
    }


def root_document(made: NewRoot, output: Output) -> dict[str, Any]:
    """A new root issuer as ``POST root/generate/:type`` answers it, with its key when exported."""
    issuer, stored, fmt = made.issuer, made.key, output.format
    data: dict[str, Any] = {
        "certificate": encode_cert(issuer.certificate, fmt),
        "issuing_ca": encode_cert(issuer.certificate, fmt),
        "serial_number": format_serial(issuer.cert.serial_number),
        "expiration": int(issuer.cert.not_valid_after_utc.timestamp()),
        "issuer_id": issuer.id,
        "issuer_name": issuer.name,
        "key_id": stored.id,
        "key_name": stored.name,
    }
    if made.exported is not None:
        key_fmt = "pem" if fmt == "pem_bundle" else fmt
        data["private_key"] = private_key_output(made.exported, key_fmt, output.private_key_format)
        data["private_key_type"] = stored.type
        if fmt == "pem_bundle":
            data["certificate"] = "\n".join(
                [private_key_output(made.exported, "pem", "der"), issuer.certificate]
            )
    return data


def intermediate_document(made: NewRequest, output: Output) -> dict[str, Any]:
    """A new intermediate's CSR as ``POST intermediate/generate/:type`` answers it."""
    csr = made.csr_pem
    if output.format == "der":
        der = x509.load_pem_x509_csr(csr.encode()).public_bytes(Encoding.DER)
        csr = base64.b64encode(der).decode()
    data: dict[str, Any] = {"csr": csr, "key_id": made.key.id, "key_name": made.key.name}
    if made.exported is not None:
        key_fmt = "der" if output.format == "der" else "pem"
        data["private_key"] = private_key_output(made.exported, key_fmt, output.private_key_format)
        data["private_key_type"] = made.key.type
    return data


def cert_document(kept: IssuedCert) -> dict[str, Any]:
    """A kept certificate as ``GET cert/:serial`` answers it.

    ``issuer_id`` is answered for a revoked certificate only, as on the real server.
    """
    data: dict[str, Any] = {
        "certificate": kept.certificate,
        "revocation_time": kept.revocation_time,
        "revocation_time_rfc3339": "",
    }
    if kept.revocation_time:
        data["revocation_time_rfc3339"] = kept.revocation_time_rfc3339 or rfc3339(
            datetime.fromtimestamp(kept.revocation_time, UTC)
        )
        data["issuer_id"] = kept.issuer_id
    return data


def revoked_document(kept: IssuedCert) -> dict[str, Any]:
    """``POST revoke``'s answer."""
    return {
        "revocation_time": kept.revocation_time,
        "revocation_time_rfc3339": kept.revocation_time_rfc3339,
        "state": "revoked",
    }


# What tidy-status answers before any tidy ran: every field, null, and the state.
_TIDY_FIELDS = (
    "acme_account_deleted_count",
    "acme_account_revoked_count",
    "acme_account_safety_buffer",
    "acme_orders_deleted_count",
    "cert_store_deleted_count",
    "current_cert_store_count",
    "current_revoked_cert_count",
    "error",
    "issuer_safety_buffer",
    "message",
    "missing_issuer_cert_count",
    "page_size",
    "pause_duration",
    "revoked_cert_deleted_count",
    "revoked_safety_buffer",
    "safety_buffer",
    "tidy_acme",
    "tidy_cert_store",
    "tidy_expired_issuers",
    "tidy_invalid_certs",
    "tidy_move_legacy_ca_bundle",
    "tidy_revoked_cert_issuer_associations",
    "tidy_revoked_certs",
    "time_finished",
    "time_started",
    "total_acme_account_count",
)


def tidy_status_document(run: TidyRun | None, backend_uuid: str) -> dict[str, Any]:
    """``GET tidy-status``: the last run, or ``Inactive`` with every field null."""
    status: dict[str, Any] = dict.fromkeys(_TIDY_FIELDS)
    status["internal_backend_uuid"] = backend_uuid
    if run is None:
        status["state"] = "Inactive"
        return status
    asked = run.asked
    return status | {
        "state": "Finished",
        "error": None,
        "message": None,
        "time_started": rfc3339(run.started),
        "time_finished": rfc3339(run.finished),
        "last_auto_tidy_finished": rfc3339(run.finished),
        "safety_buffer": asked.safety_buffer,
        "revoked_safety_buffer": asked.safety_buffer,
        "issuer_safety_buffer": asked.issuer_safety_buffer,
        "acme_account_safety_buffer": 30 * 24 * 3600,
        "pause_duration": asked.pause_duration,
        "page_size": 1000,
        "tidy_cert_store": asked.tidy_cert_store,
        "tidy_revoked_certs": asked.tidy_revoked_certs,
        "tidy_revoked_cert_issuer_associations": asked.tidy_revoked_cert_issuer_associations,
        "tidy_expired_issuers": asked.tidy_expired_issuers,
        "tidy_invalid_certs": asked.tidy_invalid_certs,
        "tidy_move_legacy_ca_bundle": asked.tidy_move_legacy_ca_bundle,
        "tidy_acme": asked.tidy_acme,
        "cert_store_deleted_count": run.cert_store_deleted,
        "revoked_cert_deleted_count": run.revoked_deleted,
        "missing_issuer_cert_count": 0,
        "current_cert_store_count": None,
        "current_revoked_cert_count": None,
        "acme_account_deleted_count": 0,
        "acme_account_revoked_count": 0,
        "acme_orders_deleted_count": 0,
        "total_acme_account_count": 0,
    }
