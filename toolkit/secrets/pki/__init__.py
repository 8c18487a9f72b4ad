"""Calls of the certificate engine (spec 4.10), against any mount (default ``pki``).

One method an endpoint: roles (create, read, list, delete), issuers (generate,
read, update, the default issuer, import of a signed intermediate), issue,
sign, sign-intermediate and sign-self-issued in both their forms (the role's
or the default issuer, or ``issuer_ref`` to name one), the stored
certificates and the CA reads.

What issue and sign return is an :class:`IssuedCertificate`: the certificate
parsed with ``cryptography`` (subject, SANs, serial, issuer, not after), its
chain checked by :meth:`IssuedCertificate.verify_chain`, and the private key
held as :class:`~toolkit._masking.Sensitive`, handed out only by
:meth:`~IssuedCertificate.private_key_pem` or written by
:meth:`~IssuedCertificate.save_key` to a file only its owner can read.

Revocation: :meth:`PKI.revoke` by serial, the CRL parsed by :meth:`PKI.crl`
(its number, this and next update, the revoked serials) and
:meth:`PKI.crl_entries` as a frame, :meth:`PKI.rotate_crl`, the CRL and URL
configuration, :meth:`PKI.sign_revocation_list`, and :meth:`PKI.tidy` with its
status. Keys are generated alone with :meth:`PKI.generate_key` (an exported
key is :class:`~toolkit._masking.Sensitive`); issuers and keys are deleted
with :meth:`PKI.delete_issuer` and :meth:`PKI.delete_key`.

Views: :meth:`PKI.roles_frame`, :meth:`PKI.issuers_frame`,
:meth:`PKI.certificates_frame` (every kept certificate of the mount, with its
expiry and whether it is revoked), and :meth:`PKI.session_certificates`, the
certificates this client issued or signed in the session (on every mount it
reached through ``.at``).
"""

from __future__ import annotations

from ._common import (
    CRL_ENTRIES,
    FORMATS,
    ISSUED_CERTIFICATES,
    MOUNT_CERTIFICATES,
    PKI_ISSUERS,
    PKI_ROLES,
    PRIVATE_KEY_FORMATS,
    certificate_names,
)
from .certificate import IssuedCertificate
from .engine import PKI
from .estate import CertificateEstate, certificate_estate, scan_certificates
from .findings import certificate_findings

__all__ = [
    "certificate_findings",
    "CRL_ENTRIES",
    "FORMATS",
    "ISSUED_CERTIFICATES",
    "MOUNT_CERTIFICATES",
    "PKI",
    "PKI_ISSUERS",
    "PKI_ROLES",
    "PRIVATE_KEY_FORMATS",
    "CertificateEstate",
    "IssuedCertificate",
    "certificate_estate",
    "scan_certificates",
    "certificate_names",
]
