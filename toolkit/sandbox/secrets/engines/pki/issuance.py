"""Leaf certificates (spec 4.10): issue, sign, sign-verbatim, and the certificates kept.

Issue and sign go to the role's ``issuer_ref`` or to the issuer named in the
path, and the role's name policy decides every name. ``sign-verbatim`` takes
the CSR's subject and names as they are, with no name policy (a role, when
named, still gives its TTLs and storage). Serial numbers are unique across
the mount's issuers, and every certificate made is kept under ``certs/``
unless its role says ``no_store``. Every request is checked whole before a
key is made or anything stored: a refusal changes nothing.
"""

from __future__ import annotations

import weakref
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cryptography import x509

from ....._spec import certificate_names as policy
from ...errors import InvalidRequest
from . import x509 as certs
from .requests import SUBJECT_FIELDS, KeyRequest, RequestedNames, Validity, VerbatimOptions
from .roles import Role, key_bits, role_ext_key_usage
from .state import (
    Issued,
    IssuedCert,
    Issuer,
    PKIState,
    csr_common_name,
    csr_sans,
    rfc3339,
    template,
)

if TYPE_CHECKING:
    from ...leases import Lease

__all__ = ["Issuance"]

# What sign-verbatim without a role uses: the mount's TTLs, the default issuer, kept, no
# lease (a role's defaults).
VERBATIM_ROLE = Role()

_VERBATIM_USAGES = {name.lower(): name for name in certs.KEY_USAGES}
_VERBATIM_EXT_USAGES = {name.lower(): oid for name, oid in certs.EXT_KEY_USAGES.items()}


# Each engine's serials in order, with the set they were sorted from: a paged
# ``LIST certs`` of 200,000 certificates asks 200 times, and sorting them each
# time made the listing grow with the square of the store. Kept beside the
# engine, not in it, so that ``--state`` stores nothing more.
_SORTED: weakref.WeakKeyDictionary[PKIState, tuple[set[str], list[str]]] = (
    weakref.WeakKeyDictionary()
)


class Issuance(PKIState):
    """Issue, sign and sign-verbatim; reading and listing the kept certificates."""

    def _role_for_use(self, name: str) -> Role:
        role = self.roles.get(name)
        if role is None:
            raise InvalidRequest(f"unknown role: {name}")
        return role

    def _leaf_validity(
        self, validity: Validity, signer: Issuer, role: Role
    ) -> tuple[datetime, datetime, list[str]]:
        """The validity of an issued or signed leaf: the role's ttls, the issuer's behaviour."""
        return self._validity(
            validity,
            signer.cert,
            behavior=signer.leaf_not_after_behavior,
            role=role,
            not_before_duration=role.not_before_duration,
        )

    def _role_names(
        self,
        role: Role,
        names: RequestedNames,
        csr: x509.CertificateSigningRequest | None,
    ) -> certs.CertTemplate:
        """The subject and SANs of an issue or sign request, checked against the role.

        The first name the role refuses denies the whole request, naming it.
        """
        cn = names.common_name
        if csr is not None and role.use_csr_common_name:
            cn = csr_common_name(csr) or cn
        if csr is not None and role.use_csr_sans:
            dns, emails, ips, uris = csr_sans(csr)
        else:
            dns, emails = policy.split_alt_names(names.alt_names)
            ips, uris = names.ip_sans, names.uri_sans
        if cn and not names.exclude_cn_from_sans:
            policy.add_common_name(cn, dns, emails)
        serial = names.subject_serial
        refused = policy.refusal(
            role.values(),
            common_name=cn,
            dns_names=dns,
            emails=emails,
            ip_sans=ips,
            uri_sans=uris,
            other_sans=names.other_sans,
            user_ids=names.user_ids,
            subject_serial=serial,
        )
        if refused:
            raise InvalidRequest(refused)
        subject_values = {k: list(getattr(role, k)) for k in SUBJECT_FIELDS}
        subject_values["serial_number"] = [serial] if serial else []
        subject = certs.subject_name(cn, subject_values, names.user_ids)
        return template(subject, dns, emails, ips, uris, names.other_sans)

    def _lease(self, role_name: str, role: Role, cert: x509.Certificate, verb: str) -> Lease | None:
        """A lease for the certificate when the role asks for one (``generate_lease``); else none."""
        if not role.generate_lease:
            return None
        now = self.now()
        ttl = max(1, int((cert.not_valid_after_utc - now).total_seconds()))
        return self.service.leases.create(
            f"{self.mount.path}{verb}/{role_name}",
            ttl=ttl,
            max_ttl=ttl,
            renewable=False,
            on_revoke=self._lease_revoked,
            data={"serial": certs.format_serial(cert.serial_number)},
        )

    def _lease_revoked(self, lease: Lease) -> None:
        kept = self.certs.get((lease.data or {}).get("serial", ""))
        if kept is not None and not kept.revocation_time:
            now = self.now()
            kept.revocation_time = int(now.timestamp())
            kept.revocation_time_rfc3339 = rfc3339(now)
            self._on_revoked()

    # -- issue and sign ----------------------------------------------------------------------
    def issue(
        self,
        role_name: str,
        names: RequestedNames,
        *,
        validity: Validity,
        key: KeyRequest,
        issuer_ref: str | None = None,
    ) -> tuple[Issued, list[str], Lease | None]:
        """``POST issue/:role`` (or ``issuer/:ref/issue/:role``): a new key and its certificate.

        ``key`` is what the request asked (type and bits, or neither). Returns the
        certificate made (with its new private key), warnings, and its lease (``generate_lease``).
        """
        role = self._role_for_use(role_name)
        key_type, bits, warnings = _issue_key(role, key)
        signer, signer_key = self._signer(issuer_ref or role.issuer_ref)
        made = self._role_names(role, names, None)
        not_before, not_after, more = self._leaf_validity(validity, signer, role)
        warnings += more
        private = certs.generate_key(key_type, bits)
        cert = self._sign_leaf(
            role, made, private.public_key(), not_before, not_after, signer, signer_key
        )
        if not role.no_store:
            self._keep(cert, signer.id)
        return (
            Issued(cert, signer, private),
            warnings,
            self._lease(role_name, role, cert, "issue"),
        )

    def sign(
        self,
        role_name: str,
        csr: x509.CertificateSigningRequest,
        names: RequestedNames,
        *,
        validity: Validity,
        issuer_ref: str | None = None,
    ) -> tuple[Issued, list[str], Lease | None]:
        """``POST sign/:role`` (or ``issuer/:ref/sign/:role``): a certificate for the CSR's key."""
        role = self._role_for_use(role_name)
        signer, signer_key = self._signer(issuer_ref or role.issuer_ref)
        _check_csr_key(role, csr.public_key())
        made = self._role_names(role, names, csr)
        not_before, not_after, warnings = self._leaf_validity(validity, signer, role)
        cert = self._sign_leaf(
            role, made, csr.public_key(), not_before, not_after, signer, signer_key
        )
        if not role.no_store:
            self._keep(cert, signer.id)
        if role.use_csr_common_name and names.common_name:
            warnings.append(
                "the common_name field was provided but the role is set with "
                '"use_csr_common_name" set to true'
            )
        if role.use_csr_sans and names.alt_names:
            warnings.append(
                "the alt_names field was provided but the role is set with "
                '"use_csr_sans" set to true'
            )
        return (
            Issued(cert, signer),
            warnings,
            self._lease(role_name, role, cert, "sign"),
        )

    def sign_verbatim(
        self,
        csr: x509.CertificateSigningRequest,
        options: VerbatimOptions,
        *,
        validity: Validity,
        role_name: str | None = None,
        issuer_ref: str | None = None,
    ) -> tuple[Issued, list[str], Lease | None]:
        """``POST sign-verbatim[/:role]`` (or ``issuer/:ref/sign-verbatim[/:role]``).

        The certificate carries the CSR's subject and SANs as they are: no name
        policy applies. Its key usages are the request's. A named role gives its
        TTLs, ``no_store``, ``generate_lease`` and issuer; without one the mount's
        TTLs and the default issuer apply. A CSR asking to be a CA is refused
        (that is sign-intermediate's job).
        """
        role = self._role_for_use(role_name) if role_name else VERBATIM_ROLE
        bad = [u for u in options.key_usage if u.lower() not in _VERBATIM_USAGES]
        if bad:
            raise InvalidRequest(f"key_usage: unknown key usage {bad[0]!r}")
        bad = [u for u in options.ext_key_usage if u.lower() not in _VERBATIM_EXT_USAGES]
        if bad:
            raise InvalidRequest(f"ext_key_usage: unknown extended key usage {bad[0]!r}")
        try:
            constraints = csr.extensions.get_extension_for_class(x509.BasicConstraints).value
            if constraints.ca:
                raise InvalidRequest(
                    "will not sign a CSR asking to be a CA certificate; use "
                    "root/sign-intermediate for that",
                )
        except x509.ExtensionNotFound:
            pass
        signer, signer_key = self._signer(issuer_ref or role.issuer_ref)
        not_before, not_after, warnings = self._leaf_validity(validity, signer, role)
        dns, emails, ips, uris = csr_sans(csr)
        made = template(csr.subject, dns, emails, ips, uris)
        made.public_key = csr.public_key()
        made.not_before, made.not_after = not_before, not_after
        made.serial = self._serial()
        made.key_usage = [_VERBATIM_USAGES[u.lower()] for u in options.key_usage]
        made.ext_key_usage = list(
            dict.fromkeys(
                [_VERBATIM_EXT_USAGES[u.lower()] for u in options.ext_key_usage]
                + [x509.ObjectIdentifier(o) for o in options.ext_key_usage_oids]
            )
        )
        made.links = self._links(signer.id)
        cert = certs.sign(
            made,
            signer.cert,
            signer_key,
            signature_bits=options.signature_bits,
            use_pss=options.use_pss,
        )
        if not role.no_store:
            self._keep(cert, signer.id)
        lease = self._lease(role_name, role, cert, "sign-verbatim") if role_name else None
        return Issued(cert, signer), warnings, lease

    def _sign_leaf(
        self,
        role: Role,
        made: certs.CertTemplate,
        public_key: Any,
        not_before: datetime,
        not_after: datetime,
        signer: Issuer,
        signer_key: certs.PrivateKey,
    ) -> x509.Certificate:
        made.public_key = public_key
        made.not_before, made.not_after = not_before, not_after
        made.serial = self._serial()
        made.key_usage = list(role.key_usage)
        made.ext_key_usage = role_ext_key_usage(role)
        made.basic_constraints_for_leaf = role.basic_constraints_valid_for_non_ca
        made.links = self._links(signer.id)
        return certs.sign(
            made,
            signer.cert,
            signer_key,
            signature_bits=role.signature_bits,
            use_pss=role.use_pss,
        )

    # -- stored certificates ------------------------------------------------------------
    def sorted_cert_serials(self) -> list[str]:
        """Serials of every certificate kept, in colon form as issue answers them, sorted (paged ``LIST certs``), sorted again only when the
        store's serials differ from the last sort's (a set comparison, no sort)."""
        kept = _SORTED.get(self)
        if kept is None or len(kept[0]) != len(self.certs) or kept[0] != self.certs.keys():
            kept = (set(self.certs), sorted(self.certs))
            _SORTED[self] = kept
        return kept[1]

    def read_cert(self, serial: str) -> IssuedCert | None:
        """The kept certificate of ``serial`` (colons or hyphens); None when unknown."""
        return self.certs.get(normal_serial(serial))


def normal_serial(serial: str) -> str:
    """A serial as the mount keys it: lower-case hex pairs joined by colons (hyphens accepted)."""
    return serial.strip().lower().replace("-", ":")


def _check_csr_key(role: Role, public_key: Any) -> None:
    """The CSR's key must be of the role's type and at least its size (``any`` takes all)."""
    kind, bits = certs.key_description(public_key)
    wanted = role.key_type
    if wanted == "any":
        if kind == "rsa" and bits < 2048:
            raise InvalidRequest(f"RSA keys < 2048 bits are unsafe and not supported: got {bits}")
        return
    if kind != wanted:
        raise InvalidRequest(f"role requires keys of type {wanted}")
    if bits < role.key_bits:
        raise InvalidRequest(
            f"role requires a minimum of a {role.key_bits}-bit key, but CSR's key is {bits} bits",
        )


def _issue_key(role: Role, asked: KeyRequest) -> tuple[str, int, list[str]]:
    """The key type and size an issue request gets, and its warnings.

    A role with ``key_type`` ``any`` takes them from the request (required);
    otherwise the role's values hold and request values are ignored with a warning.
    """
    given = asked.key_type is not None or asked.key_bits is not None
    if role.key_type != "any":
        warnings = (
            ["parameters key_type and key_bits ignored as role had specific values"]
            if given
            else []
        )
        return role.key_type, role.key_bits, warnings
    if asked.key_type is None:
        raise InvalidRequest(
            'role key type "any" not allowed for issuing certificates without providing '
            "key_type and/or key_bits request parameters",
        )
    if asked.key_type == "any":
        raise InvalidRequest('key_type: "any" cannot be used to generate a key')
    return asked.key_type, key_bits(asked.key_type, asked.key_bits or 0), []
