"""The parameters of a certificate request (spec 4.10), read and checked before anything is made.

Issue, sign, sign-intermediate and root generation share these: the names
(``common_name``, ``alt_names``, ``ip_sans``, ``uri_sans``, ``other_sans``,
``user_ids``), the validity (``ttl`` or ``not_after``), the output
(``format``, ``private_key_format``, ``remove_roots_from_chain``) and the
CA options (``max_path_length``, ``permitted_dns_domains``, subject fields,
``signature_bits``, ``use_pss``, ``skid``, ``not_before_duration``). Every
reader raises a 400 naming the field.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from .... import _certificate_policy as policy
from .. import fields
from ..errors import SecretsError

__all__ = [
    "FORMATS",
    "SUBJECT_FIELDS",
    "Names",
    "Output",
    "go_duration",
    "parse_ca_options",
    "parse_names",
    "parse_not_after",
    "parse_other_san",
    "parse_output",
    "subject_fields",
]

FORMATS = ("pem", "der", "pem_bundle")
PRIVATE_KEY_FORMATS = ("der", "pem", "pkcs8")  # "pem" is the same as "der"
SUBJECT_FIELDS = (
    "ou",
    "organization",
    "country",
    "locality",
    "province",
    "street_address",
    "postal_code",
)
SIGNATURE_BITS = (0, 256, 384, 512)
OID = re.compile(r"^[0-9]+(\.[0-9]+)+$")
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


@dataclass
class Names:
    """The names asked for in one request, before any policy is applied."""

    common_name: str = ""
    alt_names: list[str] = field(default_factory=list)
    ip_sans: list[str] = field(default_factory=list)
    uri_sans: list[str] = field(default_factory=list)
    other_sans: list[tuple[str, str]] = field(default_factory=list)
    user_ids: list[str] = field(default_factory=list)
    exclude_cn_from_sans: bool = False
    subject_serial: str = ""


@dataclass
class Output:
    format: str = "pem"
    private_key_format: str = "der"
    remove_roots_from_chain: bool = False


def _list(body: Mapping[str, Any], name: str) -> list[str]:
    """A comma-separated string, a JSON array, or a JSON array written as a string."""
    value = body.get(name)
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise SecretsError(400, f"{name}: not a valid JSON array: {exc}") from None
        return fields.string_list({name: value}, name)
    return fields.string_list(body, name)


def parse_names(body: Mapping[str, Any]) -> Names:
    names = Names(
        common_name=fields.string(body, "common_name").strip(),
        alt_names=_list(body, "alt_names"),
        ip_sans=_list(body, "ip_sans"),
        uri_sans=_list(body, "uri_sans"),
        other_sans=[parse_other_san(o) for o in _list(body, "other_sans")],
        user_ids=_list(body, "user_ids"),
        exclude_cn_from_sans=fields.boolean(body, "exclude_cn_from_sans"),
        subject_serial=fields.string(body, "serial_number"),
    )
    for value in names.ip_sans:
        parse_ip(value)
    for value in names.uri_sans:
        parse_uri(value)
    return names


def parse_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise SecretsError(400, f"ip_sans: the value {value!r} is not a valid IP address") from None


def parse_uri(value: str) -> str:
    parts = urlsplit(value)
    if not parts.scheme or " " in value:
        raise SecretsError(
            400, f"uri_sans: the provided URI Subject Alternative Name {value!r} is not a valid URI"
        )
    return value


def parse_output(body: Mapping[str, Any], *, with_key: bool = True) -> Output:
    fmt = fields.string(body, "format", "pem") or "pem"
    if fmt not in FORMATS:
        raise SecretsError(400, 'the "format" path parameter must be "pem", "der", or "pem_bundle"')
    key_format = "der"
    if with_key:
        key_format = fields.string(body, "private_key_format", "der") or "der"
        if key_format not in PRIVATE_KEY_FORMATS:
            raise SecretsError(
                400, f"private_key_format: must be der, pem or pkcs8, got {key_format!r}"
            )
    return Output(fmt, key_format, fields.boolean(body, "remove_roots_from_chain"))


def parse_not_after(text: str, name: str = "not_after") -> datetime:
    """``YYYY-MM-ddTHH:MM:SSZ`` (RFC 3339) as an aware UTC datetime; 9999-12-31T23:59:59Z works."""
    if not _RFC3339.match(text):
        raise SecretsError(
            400, f"{name}: expected a UTC time as YYYY-MM-ddTHH:MM:SSZ, got {text!r}"
        )
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise SecretsError(400, f"{name}: {exc}") from None
    return parsed.astimezone(UTC)


def subject_fields(body: Mapping[str, Any]) -> dict[str, list[str]]:
    """The subject values of a CA request (``ou``, ``organization``, ... as lists)."""
    return {name: _list(body, name) for name in SUBJECT_FIELDS}


@dataclass
class CAOptions:
    """What sign-intermediate and root generation take beyond the names."""

    max_path_length: int = -1
    permitted_dns_domains: list[str] = field(default_factory=list)
    not_before_duration: int = 30
    signature_bits: int = 0
    use_pss: bool = False
    skid: bytes | None = None
    use_csr_values: bool = False


def parse_ca_options(body: Mapping[str, Any]) -> CAOptions:
    options = CAOptions(
        max_path_length=fields.integer(body, "max_path_length", -1, minimum=-1),
        permitted_dns_domains=_list(body, "permitted_dns_domains"),
        not_before_duration=fields.duration(body, "not_before_duration", 30),
        signature_bits=fields.integer(body, "signature_bits", 0),
        use_pss=fields.boolean(body, "use_pss"),
        use_csr_values=fields.boolean(body, "use_csr_values"),
    )
    if options.signature_bits not in SIGNATURE_BITS:
        raise SecretsError(
            400, f"signature_bits: must be 0, 256, 384 or 512, got {options.signature_bits}"
        )
    for domain in options.permitted_dns_domains:
        if not re.fullmatch(r"\.?[A-Za-z0-9*]([A-Za-z0-9.-]*[A-Za-z0-9])?", domain):
            raise SecretsError(400, f"permitted_dns_domains: {domain!r} is not a DNS domain")
    skid = fields.string(body, "skid").replace(":", "").strip()
    if skid:
        try:
            options.skid = bytes.fromhex(skid)
        except ValueError:
            raise SecretsError(
                400, f"skid: could not parse requested SKID value as hex: {skid!r}"
            ) from None
    return options


def go_duration(seconds: int) -> str:
    """``720h0m0s``: how the server writes a duration in its messages."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def parse_other_san(text: str, name: str = "other_sans") -> tuple[str, str]:
    """``<oid>;UTF8:<value>`` as ``(oid, value)``; 400 naming ``name`` when malformed."""
    try:
        return policy.parse_other_san(text)
    except ValueError as exc:
        raise SecretsError(400, f"{name}: {exc}") from None
