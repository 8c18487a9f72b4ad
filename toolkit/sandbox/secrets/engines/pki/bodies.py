"""The certificate engine's request bodies, read into the typed requests of :mod:`..pki.requests`.

This is the wire side of spec 4.10: field names, lists given as JSON arrays,
comma-separated text or JSON arrays written as text, durations as text or
seconds, booleans as text. Every reader raises a 400 naming the field, before
the state is asked anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from cryptography import x509

from ... import fields
from ...errors import InvalidRequest
from . import x509 as certs
from .requests import (
    FORMATS,
    PRIVATE_KEY_FORMATS,
    SIGNATURE_BITS,
    SUBJECT_FIELDS,
    CAOptions,
    CRLConfig,
    KeyRequest,
    Output,
    RequestedNames,
    RevokedEntry,
    TidyRequest,
    URLConfig,
    Validity,
    VerbatimOptions,
    parse_ip,
    parse_not_after,
    parse_other_san,
    parse_uri,
)
from .roles import DURATIONS, INTEGERS, ROLE_DEFAULTS

__all__ = [
    "ca_options",
    "certificate",
    "crl_config",
    "csr",
    "issuer_update",
    "key_request",
    "names",
    "output",
    "revoked_entries",
    "role_values",
    "tidy_request",
    "url_config",
    "validity",
    "verbatim_options",
]

Body = Mapping[str, Any]
_DOMAIN = re.compile(r"\.?[A-Za-z0-9*]([A-Za-z0-9.-]*[A-Za-z0-9])?")


def _list(body: Body, name: str) -> list[str]:
    """A comma-separated string, a JSON array, or a JSON array written as a string."""
    value = body.get(name)
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise InvalidRequest(f"{name}: not a valid JSON array: {exc}") from None
        return fields.string_list({name: value}, name)
    return fields.string_list(body, name)


def names(body: Body) -> RequestedNames:
    """``common_name``, ``alt_names``, ``ip_sans``, ``uri_sans``, ``other_sans``, ``user_ids``, ..."""
    found = RequestedNames(
        common_name=fields.string(body, "common_name").strip(),
        alt_names=_list(body, "alt_names"),
        ip_sans=_list(body, "ip_sans"),
        uri_sans=_list(body, "uri_sans"),
        other_sans=[parse_other_san(o) for o in _list(body, "other_sans")],
        user_ids=_list(body, "user_ids"),
        exclude_cn_from_sans=fields.boolean(body, "exclude_cn_from_sans"),
        subject_serial=fields.string(body, "serial_number"),
        subject={name: _list(body, name) for name in SUBJECT_FIELDS},
    )
    for value in found.ip_sans:
        parse_ip(value)
    for value in found.uri_sans:
        parse_uri(value)
    return found


def output(body: Body, *, with_key: bool = True) -> Output:
    """``format``, ``private_key_format`` (when a key is answered), ``remove_roots_from_chain``."""
    fmt = fields.string(body, "format", "pem") or "pem"
    if fmt not in FORMATS:
        raise InvalidRequest('the "format" path parameter must be "pem", "der", or "pem_bundle"')
    key_format = "der"
    if with_key:
        key_format = fields.string(body, "private_key_format", "der") or "der"
        if key_format not in PRIVATE_KEY_FORMATS:
            raise InvalidRequest(
                f"private_key_format: must be der, pem or pkcs8, got {key_format!r}"
            )
    return Output(fmt, key_format, fields.boolean(body, "remove_roots_from_chain"))


def validity(body: Body) -> Validity:
    """``ttl`` or ``not_after`` (``YYYY-MM-ddTHH:MM:SSZ``)."""
    text = fields.string(body, "not_after")
    return Validity(
        ttl=fields.duration(body, "ttl"),
        not_after=parse_not_after(text) if text else None,
    )


def ca_options(body: Body) -> CAOptions:
    options = CAOptions(
        max_path_length=fields.integer(body, "max_path_length", -1, minimum=-1),
        permitted_dns_domains=_list(body, "permitted_dns_domains"),
        not_before_duration=fields.duration(body, "not_before_duration", 30),
        signature_bits=_signature_bits(body),
        use_pss=fields.boolean(body, "use_pss"),
        use_csr_values=fields.boolean(body, "use_csr_values"),
    )
    for domain in options.permitted_dns_domains:
        if not _DOMAIN.fullmatch(domain):
            raise InvalidRequest(f"permitted_dns_domains: {domain!r} is not a DNS domain")
    options.skid = _skid(body)
    return options


def _skid(body: Body) -> bytes | None:
    """``skid``: the subject key identifier asked for, in hex (colons allowed); None if absent."""
    text = fields.string(body, "skid").replace(":", "").strip()
    if not text:
        return None
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise InvalidRequest(
            f"skid: could not parse requested SKID value as hex: {text!r}"
        ) from None


def _signature_bits(body: Body) -> int:
    bits = fields.integer(body, "signature_bits", 0)
    if bits not in SIGNATURE_BITS:
        raise InvalidRequest(f"signature_bits: must be 0, 256, 384 or 512, got {bits}")
    return bits


def key_request(kind: str, body: Body) -> KeyRequest:
    """What a generate request says of its key: ``key_type``, ``key_bits``, ``key_name``, ``key_ref``."""
    return KeyRequest(
        kind=kind,
        key_type=fields.string(body, "key_type", None) or None,
        key_bits=fields.integer(body, "key_bits", 0) if "key_bits" in body else None,
        key_name=fields.string(body, "key_name"),
        key_ref=fields.string(body, "key_ref"),
    )


def csr(body: Body) -> x509.CertificateSigningRequest:
    return certs.read_csr(fields.string(body, "csr", need=True))


def certificate(body: Body, name: str = "certificate") -> x509.Certificate:
    """Exactly one PEM certificate in ``name``."""
    found = certs.read_certificates(fields.string(body, name, need=True), name)
    if len(found) != 1:
        raise InvalidRequest(f"{len(found)} certificates found in PEM file, expected 1")
    return found[0]


def verbatim_options(body: Body) -> VerbatimOptions:
    options = VerbatimOptions(
        signature_bits=_signature_bits(body),
        use_pss=fields.boolean(body, "use_pss"),
        ext_key_usage=_list(body, "ext_key_usage"),
        ext_key_usage_oids=_list(body, "ext_key_usage_oids"),
    )
    if "key_usage" in body:
        options.key_usage = _list(body, "key_usage")
    return options


def role_values(body: Body) -> dict[str, Any]:
    """A role write's fields as typed values (seconds, ints, booleans, lists, text)."""
    values: dict[str, Any] = {}
    for name, default in ROLE_DEFAULTS.items():
        if name not in body:
            continue
        if name in DURATIONS:
            values[name] = fields.duration(body, name, default)
        elif name in INTEGERS:
            values[name] = fields.integer(body, name, default)
        elif isinstance(default, bool):
            values[name] = fields.boolean(body, name, default)
        elif isinstance(default, tuple):
            values[name] = fields.string_list(body, name)
        else:
            values[name] = fields.string(body, name, default) or default
    return values


def issuer_update(body: Body) -> dict[str, Any]:
    """``issuer_name``, ``leaf_not_after_behavior``, ``usage``: the ones given."""
    return {
        "name": fields.string(body, "issuer_name", None),
        "leaf_not_after_behavior": fields.string(body, "leaf_not_after_behavior", None),
        "usage": fields.string_list(body, "usage") if "usage" in body else None,
    }


def crl_config(body: Body, current: CRLConfig) -> CRLConfig:
    """``config/crl``: the fields given replace the current ones."""
    return CRLConfig(
        expiry=fields.duration(body, "expiry", current.expiry),
        disable=fields.boolean(body, "disable", current.disable),
        ocsp_disable=fields.boolean(body, "ocsp_disable", current.ocsp_disable),
        ocsp_expiry=fields.duration(body, "ocsp_expiry", current.ocsp_expiry),
        auto_rebuild=fields.boolean(body, "auto_rebuild", current.auto_rebuild),
        auto_rebuild_grace_period=fields.duration(
            body, "auto_rebuild_grace_period", current.auto_rebuild_grace_period
        ),
        enable_delta=fields.boolean(body, "enable_delta", current.enable_delta),
        delta_rebuild_interval=fields.duration(
            body, "delta_rebuild_interval", current.delta_rebuild_interval
        ),
        allow_expired_cert_revocation=fields.boolean(
            body, "allow_expired_cert_revocation", current.allow_expired_cert_revocation
        ),
    )


def url_config(body: Body, current: URLConfig) -> URLConfig:
    """``config/urls``: the lists given replace the current ones."""

    def listed(name: str) -> list[str]:
        return _list(body, name) if name in body else list(getattr(current, name))

    return URLConfig(
        issuing_certificates=listed("issuing_certificates"),
        crl_distribution_points=listed("crl_distribution_points"),
        delta_crl_distribution_points=listed("delta_crl_distribution_points"),
        ocsp_servers=listed("ocsp_servers"),
        enable_templating=fields.boolean(body, "enable_templating", current.enable_templating),
    )


def revoked_entries(body: Body) -> list[RevokedEntry]:
    """``revoked_certs``: objects of ``serial_number`` (hex, colons allowed) and ``revocation_time``."""
    given = body.get("revoked_certs")
    if given in (None, "", []):
        return []
    if not isinstance(given, list) or not all(isinstance(e, Mapping) for e in given):
        raise InvalidRequest("revoked_certs: expected a list of objects")
    entries = []
    for index, entry in enumerate(given):
        text = fields.string(entry, "serial_number").replace(":", "").replace("-", "")
        try:
            serial = int(text, 16)
        except ValueError:
            raise InvalidRequest(
                f"revoked_certs: failed parsing serial_number from entry {index}: {text!r} is "
                "not hex",
            ) from None
        when = entry.get("revocation_time")
        if when in (None, ""):
            raise InvalidRequest(
                f"revoked_certs: failed parsing revocation_time from entry {index}: "
                "missing 'revocation_time' field",
            )
        entries.append(RevokedEntry(serial, _time(when, index)))
    return entries


def _time(value: Any, index: int) -> datetime:
    """Unix seconds, or RFC 3339 text."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        if value.isdigit():
            return datetime.fromtimestamp(int(value), UTC)
        return parse_not_after(value, f"revoked_certs: entry {index} revocation_time")
    raise InvalidRequest(
        f"revoked_certs: entry {index} revocation_time: expected a time, got {value!r}"
    )


def tidy_request(body: Body) -> TidyRequest:
    flags = {
        name: fields.boolean(body, name)
        for name in (
            "tidy_cert_store",
            "tidy_revoked_certs",
            "tidy_revoked_cert_issuer_associations",
            "tidy_expired_issuers",
            "tidy_invalid_certs",
            "tidy_move_legacy_ca_bundle",
            "tidy_acme",
        )
    }
    return TidyRequest(
        **flags,
        safety_buffer=fields.duration(body, "safety_buffer", 72 * 3600),
        issuer_safety_buffer=fields.duration(body, "issuer_safety_buffer", 365 * 24 * 3600),
        pause_duration=fields.string(body, "pause_duration", "0s") or "0s",
    )
