"""Facts every part of the certificate engine's calls shares: the frames' schemas,
the formats, and reading certificates and CRLs."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from ..._errors import DecodeError, InputError
from ..._frames import Schema
from ..._records import Record
from ..._x509 import format_serial

FORMATS = ("pem", "der", "pem_bundle")
PRIVATE_KEY_FORMATS = ("der", "pem", "pkcs8")

PKI_ROLES = Schema.of(
    """name issuer_ref key_type key_bits:int ttl:int max_ttl:int allowed_domains
    allow_bare_domains:bool allow_subdomains:bool allow_glob_domains:bool allow_any_name:bool
    allow_localhost:bool allow_ip_sans:bool allowed_uri_sans allowed_other_sans allowed_user_ids
    server_flag:bool client_flag:bool code_signing_flag:bool generate_lease:bool""",
    index="name",
)
PKI_ISSUERS = Schema.of(
    """issuer_id issuer_name is_default:bool subject issuer self_signed:bool max_path_length:int
    not_before:datetime not_after:datetime key_id leaf_not_after_behavior usage""",
    index="issuer_id",
)
# What a certificate itself says: the first columns of both certificate frames.
_CERTIFICATE_COLUMNS = "serial_number subject sans issuer not_before:datetime not_after:datetime"
ISSUED_CERTIFICATES = Schema.of(_CERTIFICATE_COLUMNS, "mount role operation", index="serial_number")
MOUNT_CERTIFICATES = Schema.of(
    _CERTIFICATE_COLUMNS,
    "expired:bool revoked:bool revocation_time:datetime is_ca:bool",
    index="serial_number",
)
CRL_ENTRIES = Schema.of("serial_number revocation_time:datetime", index="serial_number")
# Role fields shown as one comma-separated text in the roles frame.
_LIST_FIELDS = ("allowed_domains", "allowed_uri_sans", "allowed_other_sans", "allowed_user_ids")


def _load_certificate(text: str) -> x509.Certificate:
    """The first certificate of PEM text, or of base64 DER (the ``der`` format)."""
    if not isinstance(text, str):
        raise DecodeError("a certificate the server gave is not text")
    try:
        if "-----BEGIN CERTIFICATE-----" in text:
            return x509.load_pem_x509_certificates(text.encode())[0]
        return x509.load_der_x509_certificate(base64.b64decode(text, validate=True))
    except (ValueError, binascii.Error) as exc:
        raise InputError(f"not a PEM or base64 DER certificate: {exc}") from None


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode().strip()


def certificate_names(cert: x509.Certificate) -> list[str]:
    """The certificate's SANs as text: DNS, e-mail, IP, URI, and ``<oid>;UTF8:<value>``."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    names: list[str] = []
    for name in san:
        if isinstance(name, x509.OtherName):
            raw = name.value
            value = raw[2:].decode(errors="replace") if raw[:1] == b"\x0c" else raw.hex()
            names.append(f"{name.type_id.dotted_string};UTF8:{value}")
        else:
            names.append(str(name.value))
    return names


def _body(**params: Any) -> dict[str, Any]:
    """Request parameters without the ones left out (None); lists joined by commas."""
    body: dict[str, Any] = {}
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, list | tuple):
            value = ",".join(str(v) for v in value)
        body[name] = value
    return body


def _check_format(format: str, private_key_format: str | None = None) -> None:
    if format not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    if private_key_format is not None and private_key_format not in PRIVATE_KEY_FORMATS:
        raise InputError(
            f"private_key_format must be one of {', '.join(PRIVATE_KEY_FORMATS)}, "
            f"not {private_key_format!r}"
        )


def _listed(value: Sequence[str] | str | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


def _crl_record(pem: str, issuer: x509.Certificate) -> Record:
    """A CRL's facts as a record; its signature must verify against ``issuer``."""
    try:
        crl = x509.load_pem_x509_crl(pem.encode())
    except ValueError as exc:
        raise InputError(f"the server answered no CRL: {exc}") from None
    if not crl.is_signature_valid(issuer.public_key()):  # type: ignore[arg-type]
        raise InputError(f"the CRL is not signed by {issuer.subject.rfc4514_string()}")
    number = crl.extensions.get_extension_for_class(x509.CRLNumber).value.crl_number
    try:
        delta_of: int | None = crl.extensions.get_extension_for_class(
            x509.DeltaCRLIndicator
        ).value.crl_number
    except x509.ExtensionNotFound:
        delta_of = None
    return Record(
        {
            "issuer": crl.issuer.rfc4514_string(),
            "crl_number": number,
            "delta_of": delta_of,
            "this_update": crl.last_update_utc,
            "next_update": crl.next_update_utc,
            "revoked": [format_serial(r.serial_number) for r in crl],
            "pem": pem.strip(),
        },
        kind="pki_crl",
    )


def _stamp(value: str | datetime | None) -> str | None:
    """``not_after`` as the server reads it: ``YYYY-MM-ddTHH:MM:SSZ`` in UTC."""
    if value is None or isinstance(value, str):
        return value
    if value.tzinfo is None:
        raise InputError("not_after must be a timezone-aware datetime")
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
