"""Issue and sign in all their forms, the stored certificates and the CA reads (spec 4.10)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict, Unpack

import pandas as pd
from cryptography import x509

from ..._errors import InputError
from ..._frames import build_frame
from ..._http import Request, decode_json
from ..._records import Record, integer
from ..._time import from_epoch
from .._base import GONE_OR_REFUSED, hide, lease_of, skipped, unwrap, warnings_of
from ._area import PKIBase
from ._common import (
    MOUNT_CERTIFICATES,
    _body,
    _check_format,
    _listed,
    _load_certificate,
    _stamp,
    certificate_names,
)
from .certificate import IssuedCertificate


class NamesAndValidity(TypedDict, total=False):
    """What an issue or a sign request may ask for besides its role and format, as
    keyword arguments: the names (each a list, or comma-separated text), the
    validity (``ttl`` or ``not_after``, not both) and the chain's shape."""

    alt_names: Sequence[str] | str | None
    ip_sans: Sequence[str] | str | None
    uri_sans: Sequence[str] | str | None
    other_sans: Sequence[str] | str | None
    user_ids: Sequence[str] | str | None
    ttl: str | int | None
    not_after: str | datetime | None
    exclude_cn_from_sans: bool | None
    remove_roots_from_chain: bool | None


def _only_names(verb: str, names: Mapping[str, Any]) -> None:
    """Refuse, before anything is sent, an argument :class:`NamesAndValidity` does not name
    (a misspelt ``alt_name`` would otherwise reach the server as an unknown field)."""
    unknown = sorted(set(names) - NamesAndValidity.__optional_keys__)
    if unknown:
        known = ", ".join(sorted(NamesAndValidity.__optional_keys__))
        raise InputError(f"{verb} takes no argument {', '.join(unknown)}; it takes {known}")


class IssuanceCalls(PKIBase):
    """Issue and sign in all their forms, the stored certificates and the CA reads (spec 4.10).."""

    # -- issue and sign ---------------------------------------------------------------------
    def _keep(self, payload: Any, **context: Any) -> IssuedCertificate:
        data = hide(unwrap(payload), "private_key", label="private key")
        issued = IssuedCertificate(
            data,
            mount=self.mount,
            warnings=warnings_of(payload),
            lease=lease_of(payload),
            **context,
        )
        self._issued.append(issued)
        return issued

    def issue(
        self,
        role: str,
        common_name: str,
        *,
        format: str = "pem",
        private_key_format: str | None = None,
        issuer_ref: str | None = None,
        **names: Unpack[NamesAndValidity],
    ) -> IssuedCertificate:
        """A new key and certificate from ``role``. ``POST /pki/issue/:role``.

        With ``issuer_ref``: ``POST /pki/issuer/:issuer_ref/issue/:role``. ``ttl``
        and ``not_after`` (a UTC datetime or ``YYYY-MM-ddTHH:MM:SSZ``) exclude
        each other. The private key is in the result as ``Sensitive``.
        """
        _only_names("issue", names)
        return self._request(
            "issue",
            role,
            issuer_ref,
            common_name=common_name,
            format=format,
            private_key_format=private_key_format,
            **names,
        )

    def sign(
        self,
        role: str,
        csr: str,
        *,
        common_name: str | None = None,
        format: str = "pem",
        issuer_ref: str | None = None,
        **names: Unpack[NamesAndValidity],
    ) -> IssuedCertificate:
        """A certificate for the key of ``csr`` (PEM) from ``role``. ``POST /pki/sign/:role``.

        With ``issuer_ref``: ``POST /pki/issuer/:issuer_ref/sign/:role``.
        ``user_ids`` go into the subject as UID attributes (the role's
        ``allowed_user_ids`` decide which).
        """
        _only_names("sign", names)
        return self._request(
            "sign", role, issuer_ref, csr=csr, common_name=common_name, format=format, **names
        )

    def sign_verbatim(
        self,
        csr: str,
        *,
        role: str | None = None,
        issuer_ref: str | None = None,
        ttl: str | int | None = None,
        not_after: str | datetime | None = None,
        key_usage: Sequence[str] | str | None = None,
        ext_key_usage: Sequence[str] | str | None = None,
        format: str = "pem",
    ) -> IssuedCertificate:
        """A certificate with the CSR's subject and names as they are. ``POST /pki/sign-verbatim``.

        No role name policy applies; with ``role`` (``sign-verbatim/:role``) its
        TTLs and storage do. With ``issuer_ref``:
        ``POST /pki/issuer/:issuer_ref/sign-verbatim[/:role]``. ``key_usage``
        and ``ext_key_usage`` replace the defaults (DigitalSignature,
        KeyAgreement, KeyEncipherment; none).
        """
        _check_format(format)
        if ttl is not None and not_after is not None:
            raise InputError("give ttl or not_after, not both")
        template = ("issuer/{issuer_ref}/" if issuer_ref else "") + "sign-verbatim"
        template += "/{role}" if role else ""
        body = _body(
            csr=csr,
            ttl=ttl,
            not_after=_stamp(not_after),
            key_usage=_listed(key_usage),
            ext_key_usage=_listed(ext_key_usage),
            format=format,
        )
        payload = self._send("POST", self._path(template, issuer_ref=issuer_ref, role=role), body)
        return self._keep(payload, role=role or "", operation="sign-verbatim", format=format)

    def _request(
        self, verb: str, role: str, issuer_ref: str | None, **fields: Any
    ) -> IssuedCertificate:
        """Send an issue or sign request after checking what can be checked here."""
        format = str(fields.get("format") or "pem")
        _check_format(format, fields.get("private_key_format"))
        if fields.get("ttl") is not None and fields.get("not_after") is not None:
            raise InputError("give ttl or not_after, not both")
        fields["not_after"] = _stamp(fields.get("not_after"))
        path = self._issuer_path(issuer_ref, verb, role)
        payload = self._send("POST", path, _body(**fields))
        return self._keep(payload, role=role, operation=verb, format=format)

    def sign_intermediate(
        self,
        csr: str,
        common_name: str,
        *,
        issuer_ref: str | None = None,
        ttl: str | int | None = None,
        not_after: str | datetime | None = None,
        format: str = "pem",
        **params: Any,
    ) -> IssuedCertificate:
        """A CA certificate for ``csr``, no role policy. ``POST /pki/root/sign-intermediate``.

        With ``issuer_ref``: ``POST /pki/issuer/:issuer_ref/sign-intermediate``.
        Other parameters of 4.10: ``alt_names``, ``max_path_length``,
        ``permitted_dns_domains``, ``use_csr_values``, ``ou``, ``organization``,
        ``country``, ``locality``, ``province``, ``street_address``,
        ``postal_code``, ``serial_number``, ``not_before_duration``,
        ``signature_bits``, ``skid``, ``use_pss``, ``exclude_cn_from_sans``.
        """
        _check_format(format)
        body = _body(
            csr=csr,
            common_name=common_name,
            ttl=ttl,
            not_after=_stamp(not_after),
            format=format,
            **params,
        )
        path = (
            self._path("issuer/{issuer_ref}/sign-intermediate", issuer_ref=issuer_ref)
            if issuer_ref
            else self._path("root/sign-intermediate")
        )
        return self._keep(
            self._send("POST", path, body), operation="sign-intermediate", format=format
        )

    def sign_self_issued(
        self,
        certificate: str,
        *,
        issuer_ref: str | None = None,
        require_matching_certificate_algorithms: bool | None = None,
    ) -> Record:
        """Re-sign a self-issued CA certificate. ``POST /pki/root/sign-self-issued`` (needs sudo).

        With ``issuer_ref``: ``POST /pki/issuer/:issuer_ref/sign-self-issued`` (no sudo).
        Returns ``certificate`` and ``issuing_ca``.
        """
        body = _body(
            certificate=certificate,
            require_matching_certificate_algorithms=require_matching_certificate_algorithms,
        )
        path = (
            self._path("issuer/{issuer_ref}/sign-self-issued", issuer_ref=issuer_ref)
            if issuer_ref
            else self._path("root/sign-self-issued")
        )
        return self._record(unwrap(self._send("POST", path, body)), "pki_self_issued")

    def _issuer_path(self, issuer_ref: str | None, verb: str, role: str) -> str:
        if issuer_ref:
            return self._path(
                "issuer/{issuer_ref}/{verb}/{role}", issuer_ref=issuer_ref, verb=verb, role=role
            )
        return self._path("{verb}/{role}", verb=verb, role=role)

    # -- stored certificates and CA reads -------------------------------------------------
    def list_certs(self) -> list[str]:
        """Serials of the certificates the mount keeps (colon form). ``LIST /pki/certs``."""
        return self._list(self._path("certs"))

    def read_cert(self, serial: str) -> Record:
        """A kept certificate by serial (colons or hyphens). ``GET /pki/cert/:serial``."""
        return self._record(
            self._read(self._path("cert/{serial}", serial=serial)), "pki_certificate"
        )

    def ca_pem(self) -> str:
        """The default issuer's certificate as PEM. ``GET /pki/ca/pem``."""
        return self._http.request("GET", self._path("ca/pem")).text.strip()

    def ca_chain_pem(self) -> str:
        """The default issuer's chain as PEM. ``GET /pki/ca_chain``."""
        return self._http.request("GET", self._path("ca_chain")).text.strip()

    def issuer_pem(self, ref: str = "default") -> str:
        """An issuer's certificate as PEM. ``GET /pki/issuer/:ref/pem``."""
        return self._http.request("GET", self._path("issuer/{ref}/pem", ref=ref)).text.strip()

    def list_revoked(self) -> list[str]:
        """Serials of the revoked certificates (colon form). ``LIST /pki/certs/revoked``."""
        return self._list(self._path("certs/revoked"))

    def certificates_frame(self) -> pd.DataFrame:
        """Every certificate the mount keeps (:data:`MOUNT_CERTIFICATES`), read concurrently.

        ``LIST /pki/certs``, then ``GET /pki/cert/:serial`` for each: subject,
        SANs, issuer, validity, whether it has expired (by the server's clock) and
        whether it is revoked (with when). A certificate gone between the list and its read
        is left out; one whose read is refused is a gap in ``attrs["coverage"]``.
        """
        cov = self._coverage("certificates_frame")
        serials = self.list_certs()
        calls = [
            Request(
                "GET",
                self._path("cert/{listed_serial}", listed_serial=s),
                ok_statuses=GONE_OR_REFUSED,
            )
            for s in serials
        ]
        rows = []
        answers = list(self._http.many(calls))
        # Expired by the server's clock (a sandbox's runs from its own epoch), not this machine's.
        now = self._http.server_now()
        for serial, response in zip(serials, answers, strict=True):
            where = self._path("cert/{serial}", serial=serial).lstrip("/")
            if skipped(cov, where, response, self._http):
                continue
            data = unwrap(decode_json(response, "GET"))
            cert = _load_certificate(str(data.get("certificate") or ""))
            revoked_at = integer(data.get("revocation_time"), "revocation_time")
            try:
                is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
            except x509.ExtensionNotFound:
                is_ca = False
            rows.append(
                {
                    "serial_number": serial,
                    "subject": cert.subject.rfc4514_string(),
                    "sans": ", ".join(certificate_names(cert)),
                    "issuer": cert.issuer.rfc4514_string(),
                    "not_before": cert.not_valid_before_utc,
                    "not_after": cert.not_valid_after_utc,
                    "expired": cert.not_valid_after_utc <= now,
                    "revoked": bool(revoked_at),
                    "revocation_time": from_epoch(revoked_at),
                    "is_ca": is_ca,
                }
            )
        cov.note_read(len(rows))
        return cov.attach(build_frame(rows, MOUNT_CERTIFICATES))
