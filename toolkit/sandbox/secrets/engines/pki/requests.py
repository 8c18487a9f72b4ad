"""The typed requests of the certificate engine (spec 4.10): what the state methods take.

The HTTP side (:mod:`toolkit.sandbox.secrets.engines.pki.bodies`) reads request
bodies into these; the state never sees a wire document. Issue, sign,
sign-verbatim, sign-intermediate and root generation share :class:`RequestedNames`,
:class:`Validity` and :class:`Output`; the CA requests add :class:`CAOptions`;
key generation takes a :class:`KeyRequest`. The revocation side has
:class:`CRLConfig`, :class:`URLConfig`, :class:`RevokedEntry` and
:class:`TidyRequest`. The small parsers here take one value, not a body.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

from ....._spec import certificate_names as policy
from ...errors import InvalidRequest
from .x509 import Links

__all__ = [
    "FORMATS",
    "PRIVATE_KEY_FORMATS",
    "SIGNATURE_BITS",
    "SUBJECT_FIELDS",
    "CAOptions",
    "CRLConfig",
    "KeyRequest",
    "RequestedNames",
    "Output",
    "RevokedEntry",
    "TidyRequest",
    "URLConfig",
    "Validity",
    "VerbatimOptions",
    "go_duration",
    "parse_ip",
    "parse_not_after",
    "parse_other_san",
    "parse_uri",
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
class RequestedNames:
    """The names asked for in one request, before any policy is applied.

    ``subject`` holds the subject fields of a CA request (``ou``, ``organization``, ...);
    a leaf takes them from its role instead.
    """

    common_name: str = ""
    alt_names: list[str] = field(default_factory=list)
    ip_sans: list[str] = field(default_factory=list)
    uri_sans: list[str] = field(default_factory=list)
    other_sans: list[tuple[str, str]] = field(default_factory=list)
    user_ids: list[str] = field(default_factory=list)
    exclude_cn_from_sans: bool = False
    subject_serial: str = ""
    subject: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Output:
    format: str = "pem"
    private_key_format: str = "der"
    remove_roots_from_chain: bool = False


@dataclass
class Validity:
    """``ttl`` in seconds (0: not given) or a fixed ``not_after``; never both."""

    ttl: int = 0
    not_after: datetime | None = None


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


@dataclass
class KeyRequest:
    """A key to make (``internal``/``exported``) or reuse (``existing``, by ``key_ref``).

    ``key_type``/``key_bits`` None: not given in the request (issue uses the role's then).
    """

    kind: str = "internal"
    key_type: str | None = None
    key_bits: int | None = None
    key_name: str = ""
    key_ref: str = ""


@dataclass
class VerbatimOptions:
    """What sign-verbatim sets itself: the CSR gives the names, the request the usages."""

    key_usage: list[str] = field(
        default_factory=lambda: ["DigitalSignature", "KeyAgreement", "KeyEncipherment"]
    )
    ext_key_usage: list[str] = field(default_factory=list)
    ext_key_usage_oids: list[str] = field(default_factory=list)
    signature_bits: int = 0
    use_pss: bool = False


@dataclass
class CRLConfig:
    """``config/crl``: durations in seconds."""

    expiry: int = 72 * 3600
    disable: bool = False
    ocsp_disable: bool = False
    ocsp_expiry: int = 12 * 3600
    auto_rebuild: bool = False
    auto_rebuild_grace_period: int = 12 * 3600
    enable_delta: bool = False
    delta_rebuild_interval: int = 15 * 60
    allow_expired_cert_revocation: bool = False


@dataclass
class URLConfig(Links):
    """``config/urls``: where issued certificates point for their issuer and revocation,
    and whether ``{{issuer_id}}`` in those addresses is filled in."""

    enable_templating: bool = False


@dataclass
class RevokedEntry:
    """One entry of ``sign-revocation-list``: a serial and when it was revoked."""

    serial: int
    revoked_at: datetime


@dataclass
class TidyRequest:
    """``tidy``: which stores to clean, and how long past expiry a certificate is kept."""

    tidy_cert_store: bool = False
    tidy_revoked_certs: bool = False
    tidy_revoked_cert_issuer_associations: bool = False
    tidy_expired_issuers: bool = False
    tidy_invalid_certs: bool = False
    tidy_move_legacy_ca_bundle: bool = False
    tidy_acme: bool = False
    safety_buffer: int = 72 * 3600
    issuer_safety_buffer: int = 365 * 24 * 3600
    pause_duration: str = "0s"

    @property
    def anything(self) -> bool:
        return any(
            (
                self.tidy_cert_store,
                self.tidy_revoked_certs,
                self.tidy_revoked_cert_issuer_associations,
                self.tidy_expired_issuers,
                self.tidy_invalid_certs,
                self.tidy_move_legacy_ca_bundle,
                self.tidy_acme,
            )
        )


def parse_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise InvalidRequest(f"ip_sans: the value {value!r} is not a valid IP address") from None


def parse_uri(value: str) -> str:
    parts = urlsplit(value)
    if not parts.scheme or " " in value:
        raise InvalidRequest(
            f"uri_sans: the provided URI Subject Alternative Name {value!r} is not a valid URI"
        )
    return value


def parse_not_after(text: str, name: str = "not_after") -> datetime:
    """``YYYY-MM-ddTHH:MM:SSZ`` (RFC 3339) as an aware UTC datetime; 9999-12-31T23:59:59Z works."""
    if not _RFC3339.match(text):
        raise InvalidRequest(f"{name}: expected a UTC time as YYYY-MM-ddTHH:MM:SSZ, got {text!r}")
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise InvalidRequest(f"{name}: {exc}") from None
    return parsed.astimezone(UTC)


def go_duration(seconds: int) -> str:
    """``720h0m0s``: how the server writes a duration in its messages."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def short_duration(seconds: int) -> str:
    """``72h``, ``15m``, ``90s``: how ``config/crl`` reads its durations back."""
    if seconds and seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds and seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def parse_other_san(text: str, name: str = "other_sans") -> tuple[str, str]:
    """``<oid>;UTF8:<value>`` as ``(oid, value)``; 400 naming ``name`` when malformed."""
    try:
        return policy.parse_other_san(text)
    except ValueError as exc:
        raise InvalidRequest(f"{name}: {exc}") from None
