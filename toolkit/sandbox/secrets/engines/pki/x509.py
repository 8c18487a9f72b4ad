"""X.509 with the ``cryptography`` package: keys, encodings, building and checking certificates.

The engine's state keeps certificates and keys as PEM text (plain, picklable
data); the parsed objects come from the caches here, so a certificate is
parsed once per process however often it is read.
"""

from __future__ import annotations

import base64
import ipaddress
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.x509.oid import AuthorityInformationAccessOID, ExtendedKeyUsageOID, NameOID

from ....._x509 import format_serial
from ...errors import InvalidRequest

__all__ = [
    "KEY_USAGES",
    "CertTemplate",
    "Links",
    "PEM_CRL",
    "build_crl",
    "PrivateKey",
    "build_csr",
    "cert_pem",
    "encode_cert",
    "format_serial",
    "generate_key",
    "is_self_signed",
    "key_description",
    "key_pem",
    "load_cert",
    "load_key",
    "new_serial",
    "private_key_output",
    "read_certificates",
    "read_csr",
    "sign",
    "user_id_oid",
]

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey | ed25519.Ed25519PublicKey

RSA_BITS = (2048, 3072, 4096, 8192)
EC_CURVES: dict[int, type[ec.EllipticCurve]] = {
    224: ec.SECP224R1,
    256: ec.SECP256R1,
    384: ec.SECP384R1,
    521: ec.SECP521R1,
}
# Key usage names as the server spells them, and the flag of x509.KeyUsage each sets.
KEY_USAGES = {
    "DigitalSignature": "digital_signature",
    "ContentCommitment": "content_commitment",
    "KeyEncipherment": "key_encipherment",
    "DataEncipherment": "data_encipherment",
    "KeyAgreement": "key_agreement",
    "CertSign": "key_cert_sign",
    "CRLSign": "crl_sign",
    "EncipherOnly": "encipher_only",
    "DecipherOnly": "decipher_only",
}
EXT_KEY_USAGES = {
    "ServerAuth": ExtendedKeyUsageOID.SERVER_AUTH,
    "ClientAuth": ExtendedKeyUsageOID.CLIENT_AUTH,
    "CodeSigning": ExtendedKeyUsageOID.CODE_SIGNING,
    "EmailProtection": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "TimeStamping": ExtendedKeyUsageOID.TIME_STAMPING,
    "OcspSigning": ExtendedKeyUsageOID.OCSP_SIGNING,
    "Any": ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE,
    "IpsecEndSystem": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.5"),
    "IpsecTunnel": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.6"),
    "IpsecUser": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.7"),
    "MicrosoftServerGatedCrypto": x509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.3"),
    "NetscapeServerGatedCrypto": x509.ObjectIdentifier("2.16.840.1.113730.4.1"),
}
_USER_ID = x509.ObjectIdentifier("0.9.2342.19200300.100.1.1")
_HASHES: dict[int, type[hashes.HashAlgorithm]] = {
    256: hashes.SHA256,
    384: hashes.SHA384,
    512: hashes.SHA512,
}


def user_id_oid() -> x509.ObjectIdentifier:
    return _USER_ID


# -- keys --------------------------------------------------------------------------------
def generate_key(key_type: str, bits: int) -> PrivateKey:
    """A new private key: ``rsa`` (2048..8192 bits), ``ec`` (P-224..P-521) or ``ed25519``."""
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=bits)
    if key_type == "ec":
        return ec.generate_private_key(EC_CURVES[bits]())
    if key_type == "ed25519":
        return ed25519.Ed25519PrivateKey.generate()
    raise InvalidRequest(f"key_type: unknown key type {key_type}")


def key_pem(key: PrivateKey) -> str:
    """The key as PKCS#8 PEM: how the engine stores it."""
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


@lru_cache(maxsize=512)
def load_key(pem: str) -> PrivateKey:
    key = serialization.load_pem_private_key(pem.encode(), password=None)
    assert isinstance(
        key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
    )
    return key


def key_description(public_key: Any) -> tuple[str, int]:
    """``("rsa", 2048)``, ``("ec", 256)``, ``("ed25519", 0)``; ``("", 0)`` for other keys."""
    if isinstance(public_key, rsa.RSAPublicKey):
        return "rsa", public_key.key_size
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        return "ec", public_key.curve.key_size
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        return "ed25519", 0
    return "", 0


def private_key_output(key: PrivateKey, fmt: str, key_format: str) -> str:
    """The private key as answered: PEM (``pem``/``pem_bundle``) or base64 DER (``der``).

    ``key_format`` ``der`` is the key's own form (PKCS#1 for RSA, SEC 1 for EC),
    ``pkcs8`` is PKCS#8; Ed25519 keys only exist as PKCS#8.
    """
    pkcs8 = key_format == "pkcs8" or isinstance(key, ed25519.Ed25519PrivateKey)
    private_format = (
        serialization.PrivateFormat.PKCS8
        if pkcs8
        else serialization.PrivateFormat.TraditionalOpenSSL
    )
    encoding = serialization.Encoding.DER if fmt == "der" else serialization.Encoding.PEM
    raw = key.private_bytes(encoding, private_format, serialization.NoEncryption())
    return base64.b64encode(raw).decode() if fmt == "der" else raw.decode().strip()


# -- certificates --------------------------------------------------------------------------
@lru_cache(maxsize=2048)
def load_cert(pem: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem.encode())


def cert_pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode().strip()


def encode_cert(pem: str, fmt: str) -> str:
    """A certificate as answered: PEM text, or base64 DER for ``der``."""
    if fmt == "der":
        return base64.b64encode(load_cert(pem).public_bytes(serialization.Encoding.DER)).decode()
    return pem


def new_serial() -> int:
    """A random positive serial of 159 bits: always 20 octets, the most RFC 5280 allows."""
    return secrets.randbits(158) | 1 << 158


def is_self_signed(cert: x509.Certificate) -> bool:
    if cert.issuer != cert.subject:
        return False
    try:
        cert.verify_directly_issued_by(cert)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def issued_by(cert: x509.Certificate, parent: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(parent)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def read_certificates(text: str, field_name: str) -> list[x509.Certificate]:
    """Every certificate in a PEM text; 400 naming ``field_name`` when there is none."""
    if "-----BEGIN CERTIFICATE-----" not in text:
        raise InvalidRequest(f"{field_name}: certificate could not be PEM-decoded")
    try:
        return x509.load_pem_x509_certificates(text.encode())
    except ValueError as exc:
        raise InvalidRequest(f"{field_name}: error parsing certificate: {exc}") from None


def read_csr(text: str) -> x509.CertificateSigningRequest:
    """A PEM certificate request with a valid signature; 400 naming ``csr`` otherwise."""
    if "-----BEGIN" not in text:
        raise InvalidRequest("csr contains no data")
    try:
        csr = x509.load_pem_x509_csr(text.encode())
    except ValueError as exc:
        raise InvalidRequest(f"certificate request could not be parsed: {exc}") from None
    if not csr.is_signature_valid:
        raise InvalidRequest("csr: request signature invalid")
    return csr


def _utf8_der(value: str) -> bytes:
    """A DER UTF8String: how an other SAN's value is carried."""
    raw = value.encode()
    size = len(raw)
    if size < 0x80:
        length = bytes([size])
    else:
        octets = size.to_bytes((size.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(octets)]) + octets
    return b"\x0c" + length + raw


@dataclass
class Links:
    """Where a certificate points (``config/urls``): its issuer (AIA), OCSP, CRLs."""

    issuing_certificates: list[str] = field(default_factory=list)
    ocsp_servers: list[str] = field(default_factory=list)
    crl_distribution_points: list[str] = field(default_factory=list)
    delta_crl_distribution_points: list[str] = field(default_factory=list)


@dataclass
class CertTemplate:
    """What goes into one certificate; :func:`sign` turns it into one."""

    subject: x509.Name
    public_key: Any
    not_before: datetime
    not_after: datetime
    serial: int
    dns_names: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    ips: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = field(default_factory=list)
    uris: list[str] = field(default_factory=list)
    other_sans: list[tuple[str, str]] = field(default_factory=list)
    is_ca: bool = False
    max_path_length: int | None = None
    permitted_dns_domains: list[str] = field(default_factory=list)
    key_usage: list[str] = field(default_factory=list)
    ext_key_usage: list[x509.ObjectIdentifier] = field(default_factory=list)
    basic_constraints_for_leaf: bool = False
    skid: bytes | None = None
    links: Links = field(default_factory=Links)
    # Extensions copied from a CSR (use_csr_values), after the ones made here.
    copied: list[x509.Extension[Any]] = field(default_factory=list)

    def general_names(self) -> list[x509.GeneralName]:
        names: list[x509.GeneralName] = [x509.DNSName(n) for n in self.dns_names]
        names += [x509.RFC822Name(e) for e in self.emails]
        names += [x509.IPAddress(ip) for ip in self.ips]
        names += [x509.UniformResourceIdentifier(u) for u in self.uris]
        names += [
            x509.OtherName(x509.ObjectIdentifier(oid), _utf8_der(value))
            for oid, value in self.other_sans
        ]
        return names


def _key_usage(names: list[str]) -> x509.KeyUsage:
    flags = dict.fromkeys(KEY_USAGES.values(), False)
    by_name = {name.lower(): flag for name, flag in KEY_USAGES.items()}
    for name in names:
        flags[by_name[name.lower()]] = True
    if not flags["key_agreement"]:
        flags["encipher_only"] = flags["decipher_only"] = False
    return x509.KeyUsage(**flags)


def _algorithm(key: PrivateKey, signature_bits: int, use_pss: bool) -> tuple[Any, Any]:
    """The hash and RSA padding an issuer signs with.

    RSA issuers honour ``signature_bits`` (0 is SHA-256) and ``use_pss``; EC
    issuers use the hash matching their curve; Ed25519 has no separate hash.
    """
    if isinstance(key, rsa.RSAPrivateKey):
        digest = _HASHES[signature_bits or 256]()
        if use_pss:
            return digest, padding.PSS(padding.MGF1(digest), padding.PSS.DIGEST_LENGTH)
        return digest, padding.PKCS1v15()
    if isinstance(key, ec.EllipticCurvePrivateKey):
        size = key.curve.key_size
        return (
            hashes.SHA512() if size > 384 else hashes.SHA384() if size > 256 else hashes.SHA256()
        ), None
    return None, None


def sign(
    template: CertTemplate,
    issuer: x509.Certificate | None,
    issuer_key: PrivateKey,
    *,
    signature_bits: int = 0,
    use_pss: bool = False,
) -> x509.Certificate:
    """Sign ``template`` with ``issuer_key``; ``issuer`` None makes a self-signed certificate."""
    issuer_name = issuer.subject if issuer is not None else template.subject
    builder = (
        x509.CertificateBuilder()
        .subject_name(template.subject)
        .issuer_name(issuer_name)
        .public_key(template.public_key)
        .serial_number(template.serial)
        .not_valid_before(template.not_before)
        .not_valid_after(template.not_after)
    )
    ski = (
        x509.SubjectKeyIdentifier(template.skid)
        if template.skid
        else x509.SubjectKeyIdentifier.from_public_key(template.public_key)
    )
    builder = builder.add_extension(ski, critical=False)
    if issuer is not None:
        try:
            parent_ski = issuer.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
            aki = x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(parent_ski)
        except x509.ExtensionNotFound:
            aki = x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.public_key())  # type: ignore[arg-type]
        builder = builder.add_extension(aki, critical=False)
    else:
        # A root names itself as its authority, as the real server's roots do.
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
    made = {x509.SubjectKeyIdentifier.oid, x509.AuthorityKeyIdentifier.oid}
    if template.is_ca:
        builder = builder.add_extension(
            x509.BasicConstraints(ca=True, path_length=template.max_path_length), critical=True
        )
        made.add(x509.BasicConstraints.oid)
    elif template.basic_constraints_for_leaf:
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        made.add(x509.BasicConstraints.oid)
    if template.key_usage:
        builder = builder.add_extension(_key_usage(template.key_usage), critical=True)
        made.add(x509.KeyUsage.oid)
    if template.ext_key_usage:
        builder = builder.add_extension(x509.ExtendedKeyUsage(template.ext_key_usage), False)
        made.add(x509.ExtendedKeyUsage.oid)
    names = template.general_names()
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        made.add(x509.SubjectAlternativeName.oid)
    if template.permitted_dns_domains:
        permitted: list[x509.GeneralName] = [
            x509.DNSName(d) for d in template.permitted_dns_domains
        ]
        builder = builder.add_extension(
            x509.NameConstraints(permitted_subtrees=permitted, excluded_subtrees=None),
            critical=True,
        )
        made.add(x509.NameConstraints.oid)
    builder = _add_links(builder, template.links, made)
    for extension in template.copied:
        if extension.oid not in made:
            builder = builder.add_extension(extension.value, extension.critical)
            made.add(extension.oid)
    digest, rsa_padding = _algorithm(issuer_key, signature_bits, use_pss)
    return builder.sign(issuer_key, digest, rsa_padding=rsa_padding)


def _add_links(
    builder: x509.CertificateBuilder, links: Links, made: set[x509.ObjectIdentifier]
) -> x509.CertificateBuilder:
    """The Authority Information Access, CRL distribution points and freshest CRL extensions."""
    access = [
        x509.AccessDescription(AuthorityInformationAccessOID.CA_ISSUERS, _uri(u))
        for u in links.issuing_certificates
    ] + [
        x509.AccessDescription(AuthorityInformationAccessOID.OCSP, _uri(u))
        for u in links.ocsp_servers
    ]
    if access:
        builder = builder.add_extension(x509.AuthorityInformationAccess(access), critical=False)
        made.add(x509.AuthorityInformationAccess.oid)
    if links.crl_distribution_points:
        points = [_point(u) for u in links.crl_distribution_points]
        builder = builder.add_extension(x509.CRLDistributionPoints(points), critical=False)
        made.add(x509.CRLDistributionPoints.oid)
    if links.delta_crl_distribution_points:
        points = [_point(u) for u in links.delta_crl_distribution_points]
        builder = builder.add_extension(x509.FreshestCRL(points), critical=False)
        made.add(x509.FreshestCRL.oid)
    return builder


def _uri(value: str) -> x509.UniformResourceIdentifier:
    return x509.UniformResourceIdentifier(value)


def _point(value: str) -> x509.DistributionPoint:
    return x509.DistributionPoint([_uri(value)], None, None, None)


# -- revocation lists ---------------------------------------------------------------------
PEM_CRL = "-----BEGIN X509 CRL-----"


def build_crl(
    issuer: x509.Certificate,
    key: PrivateKey,
    revoked: list[tuple[int, datetime]],
    *,
    number: int,
    this_update: datetime,
    next_update: datetime,
    delta_of: int | None = None,
) -> str:
    """A CRL signed by ``issuer`` listing ``revoked`` (serial, revocation time), as PEM.

    ``delta_of`` makes it a delta CRL on the complete CRL of that number.
    """
    builder = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(issuer.subject)
        .last_update(this_update)
        .next_update(next_update)
    )
    try:
        ski = issuer.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
    except x509.ExtensionNotFound:
        pass
    builder = builder.add_extension(x509.CRLNumber(number), critical=False)
    if delta_of is not None:
        builder = builder.add_extension(x509.DeltaCRLIndicator(delta_of), critical=True)
    for serial, when in revoked:
        builder = builder.add_revoked_certificate(
            x509.RevokedCertificateBuilder().serial_number(serial).revocation_date(when).build()
        )
    digest, _ = _algorithm(key, 0, False)
    crl = builder.sign(key, digest)
    return crl.public_bytes(serialization.Encoding.PEM).decode().strip()


def build_csr(subject: x509.Name, key: PrivateKey, names: list[x509.GeneralName]) -> str:
    """A PEM certificate request for ``subject`` with ``names`` as its SANs."""
    builder = x509.CertificateSigningRequestBuilder().subject_name(subject)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    digest, _ = _algorithm(key, 256, False)
    csr = builder.sign(key, digest)
    return csr.public_bytes(serialization.Encoding.PEM).decode().strip()


def subject_name(common_name: str, fields: dict[str, list[str]], user_ids: list[str]) -> x509.Name:
    """The subject DN: country, province, locality, street, postal code, O, OU, CN, serial."""
    attrs: list[x509.NameAttribute[Any]] = []
    for key, oid in (
        ("country", NameOID.COUNTRY_NAME),
        ("province", NameOID.STATE_OR_PROVINCE_NAME),
        ("locality", NameOID.LOCALITY_NAME),
        ("street_address", NameOID.STREET_ADDRESS),
        ("postal_code", NameOID.POSTAL_CODE),
        ("organization", NameOID.ORGANIZATION_NAME),
        ("ou", NameOID.ORGANIZATIONAL_UNIT_NAME),
    ):
        for value in fields.get(key, []):
            attrs.append(_attribute(oid, value, key))
    if common_name:
        attrs.append(_attribute(NameOID.COMMON_NAME, common_name, "common_name"))
    for value in fields.get("serial_number", []):
        attrs.append(_attribute(NameOID.SERIAL_NUMBER, value, "serial_number"))
    for value in user_ids:
        attrs.append(_attribute(_USER_ID, value, "user_ids"))
    return x509.Name(attrs)


def _attribute(oid: x509.ObjectIdentifier, value: str, name: str) -> x509.NameAttribute[Any]:
    try:
        return x509.NameAttribute(oid, value)
    except ValueError as exc:
        raise InvalidRequest(f"{name}: {exc}") from None


def signature_algorithm_name(cert: x509.Certificate) -> str:
    """A self-signed certificate's signature algorithm as the server names it (``ECDSAWithSHA384``)."""
    digest = cert.signature_hash_algorithm
    bits = digest.digest_size * 8 if digest is not None else 0
    oid = cert.signature_algorithm_oid
    if oid == x509.oid.SignatureAlgorithmOID.ED25519:
        return "PureEd25519"
    if oid == x509.oid.SignatureAlgorithmOID.RSASSA_PSS:
        return f"SHA{bits}WithRSAPSS"
    if isinstance(cert.public_key(), ec.EllipticCurvePublicKey):
        return f"ECDSAWithSHA{bits}"
    return f"SHA{bits}WithRSA"
