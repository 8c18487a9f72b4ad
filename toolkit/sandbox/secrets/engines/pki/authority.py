"""CA certificates (spec 4.10): generating roots and intermediates, signing CAs, importing them.

No role policy applies here. A root is self-signed with a new or existing
key; an intermediate is a key and its CSR, signed by an issuer of this mount
or elsewhere and imported with ``intermediate/set-signed``; a bundle of CA
certificates (and keys) becomes issuers with ``issuers/import/bundle``.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from ....._spec import certificate_names as policy
from ....._x509 import path_length
from ...errors import InvalidRequest
from . import x509 as certs
from .issuers import IssuerAdmin
from .requests import CAOptions, KeyRequest, RequestedNames, Validity
from .state import Imported, Issued, NewRequest, NewRoot, csr_sans, template

__all__ = ["Authority"]


class Authority(IssuerAdmin):
    """Root and intermediate generation, sign-intermediate, sign-self-issued, imports."""

    def _ca_names(
        self,
        names: RequestedNames,
        options: CAOptions,
        csr: x509.CertificateSigningRequest | None,
    ) -> certs.CertTemplate:
        """The subject and SANs of a CA certificate: no role policy; from the CSR with use_csr_values."""
        if csr is not None and options.use_csr_values:
            dns, emails, ips, uris = csr_sans(csr)
            made = template(csr.subject, dns, emails, ips, uris)
            made.copied = [e for e in csr.extensions]
            for extension in csr.extensions:
                if isinstance(extension.value, x509.KeyUsage):
                    made.key_usage = _key_usage_names(extension.value)
            return made
        cn = names.common_name
        if not cn:
            raise InvalidRequest("missing common_name")
        dns, emails = policy.split_alt_names(names.alt_names)
        if not names.exclude_cn_from_sans:
            policy.add_common_name(cn, dns, emails)
        values = {k: list(v) for k, v in names.subject.items()}
        values["serial_number"] = [names.subject_serial] if names.subject_serial else []
        subject = certs.subject_name(cn, values, names.user_ids)
        return template(subject, dns, emails, names.ip_sans, names.uri_sans, names.other_sans)

    def sign_intermediate(
        self,
        csr: x509.CertificateSigningRequest,
        names: RequestedNames,
        *,
        options: CAOptions,
        validity: Validity,
        issuer_ref: str = "default",
    ) -> tuple[Issued, list[str]]:
        """``POST root/sign-intermediate`` (or ``issuer/:ref/sign-intermediate``): a CA certificate.

        No role policy applies; the result may outlast the signing issuer (with a warning).
        """
        signer, signer_key = self._signer(issuer_ref)
        made = self._ca_names(names, options, csr)
        not_before, not_after, warnings = self._validity(
            validity,
            signer.cert,
            behavior="permit",
            not_before_duration=options.not_before_duration,
        )
        made.public_key = csr.public_key()
        made.links = self._links(signer.id)
        cert = self._sign_ca(made, options, not_before, not_after, signer.cert, signer_key)
        self._keep(cert, signer.id)
        if cert.not_valid_after_utc > signer.cert.not_valid_after_utc:
            warnings.append(
                "The expiration time for the signed certificate is after the CA's expiration "
                "time. If the new certificate is not treated as a root, validation paths with "
                "the certificate past the issuing CA's expiration time will fail."
            )
        warnings += self._ca_warnings(cert, "signed")
        return Issued(cert, signer, chain_from_self=True), warnings

    def _sign_ca(
        self,
        made: certs.CertTemplate,
        options: CAOptions,
        not_before: datetime,
        not_after: datetime,
        parent: x509.Certificate | None,
        signer_key: certs.PrivateKey,
    ) -> x509.Certificate:
        made.is_ca = True
        made.max_path_length = _new_ca_path_length(options.max_path_length, parent)
        made.permitted_dns_domains = options.permitted_dns_domains
        made.key_usage = sorted(set(made.key_usage) | {"CertSign", "CRLSign"})
        made.skid = options.skid
        made.not_before, made.not_after = not_before, not_after
        made.serial = self._serial()
        return certs.sign(
            made,
            parent,
            signer_key,
            signature_bits=options.signature_bits,
            use_pss=options.use_pss,
        )

    def sign_self_issued(
        self,
        submitted: x509.Certificate,
        *,
        require_matching_certificate_algorithms: bool = False,
        issuer_ref: str = "default",
    ) -> Issued:
        """``POST root/sign-self-issued`` (or ``issuer/:ref/sign-self-issued``).

        The submitted certificate must be a self-issued CA certificate; it keeps
        its subject, key, serial, validity and extensions, and gets the signing
        issuer's name as issuer and its key id as authority key id.
        """
        try:
            is_ca = submitted.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            is_ca = False
        if not is_ca:
            raise InvalidRequest("given certificate is not a CA certificate")
        if submitted.issuer != submitted.subject:
            raise InvalidRequest("given certificate is not self-issued")
        signer, signer_key = self._signer(issuer_ref)
        ours = certs.key_description(signer.cert.public_key())[0]
        theirs = certs.key_description(submitted.public_key())[0]
        if require_matching_certificate_algorithms and ours != theirs:
            raise InvalidRequest(
                f"signing certificate's public key algorithm ({ours}) does not match submitted "
                f"certificate's ({theirs}), and require_matching_certificate_algorithms is true",
            )
        made = certs.CertTemplate(
            subject=submitted.subject,
            public_key=submitted.public_key(),
            not_before=submitted.not_valid_before_utc,
            not_after=submitted.not_valid_after_utc,
            serial=submitted.serial_number,
        )
        dropped = {
            x509.AuthorityKeyIdentifier.oid,
            x509.CRLDistributionPoints.oid,
            x509.AuthorityInformationAccess.oid,
        }
        made.copied = [e for e in submitted.extensions if e.oid not in dropped]
        try:
            made.skid = submitted.extensions.get_extension_for_class(
                x509.SubjectKeyIdentifier
            ).value.digest
        except x509.ExtensionNotFound:
            made.skid = None
        return Issued(certs.sign(made, signer.cert, signer_key), signer)

    # -- CA generation and import -------------------------------------------------------------
    def generate_root(
        self,
        key_request: KeyRequest,
        names: RequestedNames,
        *,
        options: CAOptions,
        validity: Validity,
        issuer_name: str = "",
    ) -> tuple[NewRoot, list[str]]:
        """``POST root/generate/:type`` and ``issuers/generate/root/:type``: a new root issuer.

        ``internal`` keeps the key, ``exported`` also answers it once, ``existing``
        uses the key named by ``key_ref``. The first issuer with a key becomes the default.
        """
        kind = key_request.kind
        existing, key_type, bits, key_name = self._key_for(key_request)
        options.use_csr_values = False
        self._check_name(issuer_name, "issuer", [i.name for i in self.issuers.values()])
        made = self._ca_names(names, options, None)
        not_before, not_after, warnings = self._validity(
            validity, None, not_before_duration=options.not_before_duration
        )
        key = certs.load_key(existing.pem) if existing else certs.generate_key(key_type, bits)
        made.public_key = key.public_key()
        made.links = self._links("")
        cert = self._sign_ca(made, options, not_before, not_after, None, key)
        stored = existing or self._store_key(key, key_type, bits, key_name)
        issuer = self._add_issuer(cert, stored.id, issuer_name)
        issuer.revocation_signature_algorithm = certs.signature_algorithm_name(cert)
        self._keep(cert, issuer.id)
        made_root = NewRoot(issuer, stored, key if kind == "exported" else None)
        return made_root, warnings + self._ca_warnings(cert, "generated")

    def generate_intermediate(self, key_request: KeyRequest, names: RequestedNames) -> NewRequest:
        """``POST intermediate/generate/:type`` and ``issuers/generate/intermediate/:type``: a key and its CSR."""
        kind = key_request.kind
        existing, key_type, bits, key_name = self._key_for(key_request)
        made = self._ca_names(names, CAOptions(), None)
        key = certs.load_key(existing.pem) if existing else certs.generate_key(key_type, bits)
        csr_pem = certs.build_csr(made.subject, key, made.general_names())
        stored = existing or self._store_key(key, key_type, bits, key_name)
        return NewRequest(csr_pem, stored, key if kind == "exported" else None)

    def import_bundle(self, text: str, field_name: str, *, need_key: bool) -> Imported:
        """``POST intermediate/set-signed`` (``certificate``) or ``issuers/import/bundle`` (``pem_bundle``).

        Every CA certificate in the text becomes an issuer unless it already is
        one; an issuer gets the mount's key matching its public key. Private keys
        in a bundle are imported first. ``need_key``: refuse when no certificate
        matches a key of the mount (set-signed, where the CSR's key is here).
        """
        if not text.strip():
            raise InvalidRequest(f"missing {field_name}")
        keys = _read_keys(text, field_name)
        found = certs.read_certificates(text, field_name) if "CERTIFICATE" in text else []
        for cert in found:
            try:
                is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
            except x509.ExtensionNotFound:
                is_ca = False
            if not is_ca:
                raise InvalidRequest(f"{field_name}: refusing to import non-CA certificate")
        if not found and not keys:
            raise InvalidRequest(f"{field_name}: no certificate or key found")

        def public_der(k: Any) -> bytes:
            return k.public_bytes(
                serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
            )

        known_keys = {
            public_der(certs.load_key(k.pem).public_key()): k.id for k in self.keys.values()
        }
        new_keys = [k for k in keys if public_der(k.public_key()) not in known_keys]
        pending = {public_der(k.public_key()) for k in new_keys}
        if need_key and not any(
            public_der(c.public_key()) in known_keys or public_der(c.public_key()) in pending
            for c in found
        ):
            raise InvalidRequest(f"{field_name}: no certificate matches a key of this mount")
        imported_keys, existing_keys = [], []
        for key in keys:
            der = public_der(key.public_key())
            if der in known_keys:
                existing_keys.append(known_keys[der])
                continue
            kind, bits = certs.key_description(key.public_key())
            known_keys[der] = self._store_key(key, kind, bits, "").id
            imported_keys.append(known_keys[der])
        by_pem = {i.certificate: i.id for i in self.issuers.values()}
        imported, existing, mapping = [], [], {}
        for cert in found:
            pem = certs.cert_pem(cert)
            if pem in by_pem:
                existing.append(by_pem[pem])
                continue
            issuer = self._add_issuer(cert, known_keys.get(public_der(cert.public_key()), ""))
            by_pem[pem] = issuer.id
            imported.append(issuer.id)
            mapping[issuer.id] = issuer.key_id
            if certs.format_serial(cert.serial_number) not in self.certs:
                self._keep(cert, issuer.id)
        return Imported(imported, imported_keys, mapping, existing, existing_keys)

    def _ca_warnings(self, cert: x509.Certificate, made: str) -> list[str]:
        """The warnings of root generation and sign-intermediate: no AIA URLs; path length zero."""
        urls = self.urls
        found = (
            []
            if urls.issuing_certificates or urls.crl_distribution_points or urls.ocsp_servers
            else [_AIA_WARNING]
        )
        if path_length(cert) == 0:
            found.append(
                f"Max path length of the {made} certificate is zero. This certificate cannot be "
                "used to issue intermediate CA certificates."
            )
        return found


def _key_usage_names(usage: x509.KeyUsage) -> list[str]:
    names = []
    for name, attribute in certs.KEY_USAGES.items():
        try:
            if getattr(usage, attribute):
                names.append(name)
        except ValueError:  # encipher_only/decipher_only without key_agreement
            continue
    return names


def _new_ca_path_length(requested: int, parent: x509.Certificate | None) -> int | None:
    """The new CA's path length: -1 is none unless the parent has one, then one less.

    A parent with path length zero cannot sign a CA at all.
    """
    limit = path_length(parent) if parent is not None else None
    if limit == 0:
        raise InvalidRequest(
            "signing certificate has a max path length of zero, and cannot issue further CA "
            "certificates",
        )
    if limit is not None and (requested < 0 or requested >= limit):
        return limit - 1
    return None if requested < 0 else requested


def _read_keys(text: str, field_name: str) -> list[certs.PrivateKey]:
    keys = []
    for block in re.findall(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", text, re.S
    ):
        try:
            key = serialization.load_pem_private_key(block.encode(), password=None)
        except (ValueError, TypeError) as exc:
            raise InvalidRequest(f"{field_name}: error parsing private key: {exc}") from None
        if not isinstance(
            key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
        ):
            raise InvalidRequest(f"{field_name}: unsupported private key type")
        keys.append(key)
    return keys


# The real server's warning for an issuer made while config/urls names no AIA location.
_AIA_WARNING = (
    "This mount hasn't configured any authority information access (AIA) fields; this may make "
    "it harder for systems to find missing certificates in the chain or to validate revocation "
    "status of certificates. Consider updating /config/urls or the newly generated issuer with "
    "this information."
)
