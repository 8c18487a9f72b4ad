"""What one mount of the certificate engine holds, and the rules every part of it shares.

:class:`PKIState` holds the mount's issuers, keys, roles, kept certificates,
revocation lists, URL and CRL configuration and tidy status, as plain data
(PEM text, ints, strings). The concerns built on it live beside it:
:mod:`.issuers` (issuers, keys, roles), :mod:`.issuance` (issue, sign,
sign-verbatim, the kept certificates), :mod:`.authority` (CA generation,
signing and import), :mod:`.revocation` (revoke, CRLs) and :mod:`.tidy`; the
engine (:class:`~.engine.PKIEngine`) is all of them on one state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from cryptography import x509

from ...errors import InvalidRequest, SecretsError
from . import x509 as certs
from .requests import (
    CRLConfig,
    TidyRequest,
    URLConfig,
    Validity,
    go_duration,
    parse_ip,
    parse_not_after,
)

if TYPE_CHECKING:
    from ...host import EngineHost
    from ...mounts import Mount
    from .roles import Role

__all__ = [
    "USAGES",
    "Imported",
    "Issued",
    "IssuedCert",
    "NewRequest",
    "NewRoot",
    "Issuer",
    "PKIState",
    "StoredCRL",
    "StoredKey",
    "TidyRun",
    "csr_common_name",
    "csr_sans",
    "rfc3339",
    "template",
]

USAGES = ("crl-signing", "issuing-certificates", "ocsp-signing", "read-only")
_NAME = re.compile(r"^\w(([\w.-]+)?\w)?$")


@dataclass
class StoredKey:
    id: str
    name: str
    type: str
    bits: int
    pem: str = field(repr=False)


@dataclass
class Issuer:
    id: str
    name: str
    key_id: str
    certificate: str
    leaf_not_after_behavior: str = "err"
    usage: list[str] = field(default_factory=lambda: list(USAGES))
    # The algorithm CRLs are signed with: a generated root's own, else chosen by the signer.
    revocation_signature_algorithm: str = ""

    @property
    def cert(self) -> x509.Certificate:
        return certs.load_cert(self.certificate)


@dataclass(frozen=True)
class Issued:
    """A certificate just made: by ``signer``, with the private key made for it, if any.

    ``chain_from_self``: the chain answered starts with the certificate itself
    (sign-intermediate). The HTTP side renders it in the requested format.
    """

    cert: x509.Certificate
    signer: Issuer
    key: certs.PrivateKey | None = field(default=None, repr=False)
    chain_from_self: bool = False


@dataclass(frozen=True)
class NewRoot:
    """A root issuer just made, its stored key, and the private key when it is exported."""

    issuer: Issuer
    key: StoredKey
    exported: certs.PrivateKey | None = field(default=None, repr=False)


@dataclass(frozen=True)
class NewRequest:
    """An intermediate's CSR (PEM), its stored key, and the private key when exported."""

    csr_pem: str
    key: StoredKey
    exported: certs.PrivateKey | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Imported:
    """What an import did: issuers and keys added, and those the mount already had (ids).

    ``mapping`` gives each imported issuer's key id ("" when the mount has no key for it).
    """

    issuers: list[str]
    keys: list[str]
    mapping: dict[str, str]
    existing_issuers: list[str]
    existing_keys: list[str]


@dataclass
class IssuedCert:
    serial: str  # colon form, "1f:0a:..."
    certificate: str
    issuer_id: str
    revocation_time: int = 0  # unix seconds; 0: not revoked
    revocation_time_rfc3339: str = ""

    @property
    def cert(self) -> x509.Certificate:
        return certs.load_cert(self.certificate)


@dataclass
class StoredCRL:
    """The last CRL (or delta CRL) built for one issuer; times in unix seconds."""

    pem: str
    number: int
    this_update: int
    next_update: int
    serials: list[str] = field(default_factory=list)  # the revoked serials it lists


@dataclass(frozen=True)
class TidyRun:
    """The last tidy of a mount: what it was asked, when it ran, what it removed."""

    asked: TidyRequest
    started: datetime
    finished: datetime
    cert_store_deleted: int
    revoked_deleted: int


class PKIState:
    """One mount's state of the certificate engine (spec 4.10), and the helpers all parts use."""

    def __init__(self, service: EngineHost, mount: Mount) -> None:
        self.service = service
        self.mount = mount
        self.issuers: dict[str, Issuer] = {}
        self.keys: dict[str, StoredKey] = {}
        self.roles: dict[str, Role] = {}
        self.certs: dict[str, IssuedCert] = {}
        self.default_issuer = ""
        self.default_follows_latest_issuer = False
        self.crl_config = CRLConfig()
        self.urls = URLConfig()
        self.crls: dict[str, StoredCRL] = {}
        self.delta_crls: dict[str, StoredCRL] = {}
        # One counter for every CRL of the mount, complete and delta, as the real server numbers them.
        self.crl_number = 0
        # Revocations not yet in a complete CRL (auto_rebuild) and in no delta CRL yet.
        self.unpublished_revocations = 0
        self.last_tidy: TidyRun | None = None

    def now(self) -> datetime:
        return self.service.clock.now()

    # -- issuers -----------------------------------------------------------------------
    def resolve(self, ref: str) -> Issuer:
        """The issuer ``ref`` names: ``default``, an issuer id, or an issuer name; 400 otherwise."""
        found = self.find_issuer(ref)
        if found is None:
            if ref.strip().lower() == "default":
                raise InvalidRequest("no default issuer currently configured")
            raise InvalidRequest(f"unable to find PKI issuer for reference: {ref}")
        return found

    def find_issuer(self, ref: str) -> Issuer | None:
        if ref.strip().lower() == "default":
            return self.issuers.get(self.default_issuer)
        if ref in self.issuers:
            return self.issuers[ref]
        return next((i for i in self.issuers.values() if i.name and i.name == ref), None)

    def _signer(self, ref: str) -> tuple[Issuer, certs.PrivateKey]:
        """The issuer that signs a request, with its key; 400 as the real server words it."""
        try:
            issuer = self.resolve(ref)
            if "issuing-certificates" not in issuer.usage:
                raise InvalidRequest(
                    f"requested usage issuing-certificates for issuer {issuer.id} but only had "
                    f"usage {','.join(issuer.usage)}",
                )
            key = self.keys.get(issuer.key_id)
            if key is None:
                raise InvalidRequest(f"issuer {issuer.id} has no key in this mount and cannot sign")
        except SecretsError as exc:
            raise type(exc)(f"could not fetch the CA certificate (was one set?): {exc}") from None
        return issuer, certs.load_key(key.pem)

    def chain(self, issuer: Issuer) -> list[str]:
        """The issuer's certificate, then its parents in this mount up to a self-signed root."""
        found = [issuer.certificate]
        current = issuer.cert
        while not certs.is_self_signed(current):
            parent = next(
                (
                    i
                    for i in self.issuers.values()
                    if i.certificate not in found
                    and i.cert.subject == current.issuer
                    and certs.issued_by(current, i.cert)
                ),
                None,
            )
            if parent is None:
                break
            found.append(parent.certificate)
            current = parent.cert
        return found

    def default_chain(self) -> list[str]:
        """The default issuer's chain (PEM, issuer first); empty when there is no default."""
        return self.chain(self.issuers[self.default_issuer]) if self.default_issuer else []

    def _check_name(self, name: str, kind: str, taken: list[str]) -> None:
        if not name:
            return
        if name.lower() == "default":
            raise InvalidRequest(f"reserved keyword 'default' can not be used as {kind} name")
        if not _NAME.match(name):
            raise InvalidRequest(f"{kind} name contained invalid characters")
        if name in taken:
            raise InvalidRequest(f"{kind} name already in use")

    # -- certificates made and kept ---------------------------------------------------
    def _serial(self) -> int:
        """A serial number used by no certificate of any issuer in this mount."""
        taken = {c.serial for c in self.certs.values()}
        taken |= {certs.format_serial(i.cert.serial_number) for i in self.issuers.values()}
        while True:
            serial = certs.new_serial()
            if certs.format_serial(serial) not in taken:
                return serial

    def _keep(self, cert: x509.Certificate, issuer_id: str) -> str:
        serial = certs.format_serial(cert.serial_number)
        self.certs[serial] = IssuedCert(serial, certs.cert_pem(cert), issuer_id)
        return serial

    def _links(self, issuer_id: str) -> certs.Links:
        """The AIA and CRL distribution points ``config/urls`` gives what the issuer ``issuer_id`` signs."""
        urls = self.urls

        def fill(values: list[str]) -> list[str]:
            if not urls.enable_templating:
                return list(values)
            return [v.replace("{{issuer_id}}", issuer_id) for v in values]

        return certs.Links(**{f.name: fill(getattr(urls, f.name)) for f in fields(certs.Links)})

    # -- validity -----------------------------------------------------------------------
    def _validity(
        self,
        validity: Validity,
        signer: x509.Certificate | None,
        *,
        behavior: str = "err",
        role: Role | None = None,
        not_before_duration: int = 30,
    ) -> tuple[datetime, datetime, list[str]]:
        """NotBefore and NotAfter from ``ttl`` or ``not_after``, capped as the server does.

        ``ttl`` falls back to the role's ``ttl``, then the mount's default; above
        the role's ``max_ttl`` (else the mount's maximum) it is cut to it with a
        warning. A NotAfter past the signing issuer's follows the issuer's
        ``leaf_not_after_behavior``: ``err`` refuses, ``truncate`` cuts, ``permit`` allows.
        """
        ttl = validity.ttl
        role_not_after = role.not_after if role else ""
        fixed_end = parse_role_time(role_not_after, "not_after") or validity.not_after
        if ttl and fixed_end is not None:
            raise InvalidRequest(
                "Either ttl or not_after should be provided. Both should not be provided in "
                "the same request.",
            )
        mount_default, mount_max = self.mount.lease_ttls()
        role_ttl, role_max = (role.ttl, role.max_ttl) if role else (0, 0)
        ttl = ttl or role_ttl or mount_default
        max_ttl = role_max or mount_max
        warnings = []
        if ttl > max_ttl:
            warnings.append(
                f'TTL "{go_duration(ttl)}" is longer than permitted maxTTL '
                f'"{go_duration(max_ttl)}", so maxTTL is being used'
            )
            ttl = max_ttl
        now = self.now().replace(microsecond=0)
        not_after = fixed_end if fixed_end is not None else now + timedelta(seconds=ttl)
        if signer is not None and not_after > signer.not_valid_after_utc:
            if behavior == "truncate":
                not_after = signer.not_valid_after_utc
            elif behavior != "permit":
                raise InvalidRequest(
                    f"cannot satisfy request, as TTL would result in notAfter of "
                    f"{rfc3339(not_after)} that is beyond the expiration of the CA certificate "
                    f"at {rfc3339(signer.not_valid_after_utc)}",
                )
        fixed_start = parse_role_time(role.not_before if role else "", "not_before")
        not_before = (
            fixed_start if fixed_start is not None else now - timedelta(seconds=not_before_duration)
        )
        if not_after <= not_before:
            raise InvalidRequest(f"not_after: {rfc3339(not_after)} is not after NotBefore")
        return not_before, not_after, warnings

    # -- hooks the revocation side fills in -------------------------------------------
    def _on_revoked(self) -> None:
        """Called after a certificate is revoked (by ``revoke`` or by its lease)."""

    def _on_issuer_added(self, issuer: Issuer) -> None:
        """Called when an issuer joins the mount (its CRLs are built then, as on the real server)."""


def parse_role_time(text: str, name: str) -> datetime | None:
    return parse_not_after(text, name) if text else None


def rfc3339(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- what requests and CSRs name --------------------------------------------------------------
def csr_common_name(csr: x509.CertificateSigningRequest) -> str:
    values = csr.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    return str(values[0].value) if values else ""


def csr_sans(
    csr: x509.CertificateSigningRequest,
) -> tuple[list[str], list[str], list[str], list[str]]:
    """The CSR's DNS names, e-mails, IPs and URIs."""
    try:
        san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], [], [], []
    return (
        san.get_values_for_type(x509.DNSName),
        san.get_values_for_type(x509.RFC822Name),
        [str(ip) for ip in san.get_values_for_type(x509.IPAddress)],
        san.get_values_for_type(x509.UniformResourceIdentifier),
    )


def template(
    subject: x509.Name,
    dns: list[str],
    emails: list[str],
    ips: list[str],
    uris: list[str],
    other_sans: list[tuple[str, str]] | None = None,
) -> certs.CertTemplate:
    """A template with its subject and SANs; key, times and serial are filled in on signing."""
    return certs.CertTemplate(
        subject=subject,
        public_key=None,
        not_before=datetime.min,
        not_after=datetime.min,
        serial=0,
        dns_names=dns,
        emails=emails,
        ips=[parse_ip(i) for i in ips],
        uris=list(uris),
        other_sans=list(other_sans or []),
    )
