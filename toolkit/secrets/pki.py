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

import base64
import binascii
import html
import ipaddress
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Self

import pandas as pd
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from .._errors import DecodeError, InputError
from .._frames import Col, Schema, build_frame
from .._http import HTTPLayer, Request, decode_json
from .._masking import Sensitive
from .._records import Record, integer
from .._spec import certificate_names as policy
from .._time import from_epoch
from .._x509 import path_length
from ..findings import Finding, findings_frame
from ._base import EngineArea, hide, lease_of, listed_keys, unwrap, warnings_of

__all__ = [
    "certificate_findings",
    "CRL_ENTRIES",
    "FORMATS",
    "ISSUED_CERTIFICATES",
    "MOUNT_CERTIFICATES",
    "PKI",
    "PKI_ISSUERS",
    "PKI_ROLES",
    "IssuedCertificate",
    "certificate_names",
]

FORMATS = ("pem", "der", "pem_bundle")
PRIVATE_KEY_FORMATS = ("der", "pem", "pkcs8")

PKI_ROLES = Schema.of(
    "name",
    Col("issuer_ref"),
    Col("key_type"),
    Col("key_bits", "int"),
    Col("ttl", "int"),
    Col("max_ttl", "int"),
    Col("allowed_domains"),
    Col("allow_bare_domains", "bool"),
    Col("allow_subdomains", "bool"),
    Col("allow_glob_domains", "bool"),
    Col("allow_any_name", "bool"),
    Col("allow_localhost", "bool"),
    Col("allow_ip_sans", "bool"),
    Col("allowed_uri_sans"),
    Col("allowed_other_sans"),
    Col("allowed_user_ids"),
    Col("server_flag", "bool"),
    Col("client_flag", "bool"),
    Col("code_signing_flag", "bool"),
    Col("generate_lease", "bool"),
    index="name",
)
PKI_ISSUERS = Schema.of(
    "issuer_id",
    Col("issuer_name"),
    Col("is_default", "bool"),
    Col("subject"),
    Col("issuer"),
    Col("self_signed", "bool"),
    Col("max_path_length", "int"),
    Col("not_before", "datetime"),
    Col("not_after", "datetime"),
    Col("key_id"),
    Col("leaf_not_after_behavior"),
    Col("usage"),
    index="issuer_id",
)
ISSUED_CERTIFICATES = Schema.of(
    "serial_number",
    Col("subject"),
    Col("sans"),
    Col("issuer"),
    Col("not_before", "datetime"),
    Col("not_after", "datetime"),
    Col("mount"),
    Col("role"),
    Col("operation"),
    index="serial_number",
)
MOUNT_CERTIFICATES = Schema.of(
    "serial_number",
    Col("subject"),
    Col("sans"),
    Col("issuer"),
    Col("not_before", "datetime"),
    Col("not_after", "datetime"),
    Col("expired", "bool"),
    Col("revoked", "bool"),
    Col("revocation_time", "datetime"),
    Col("is_ca", "bool"),
    index="serial_number",
)
CRL_ENTRIES = Schema.of(
    "serial_number",
    Col("revocation_time", "datetime"),
    index="serial_number",
)
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


def _serial_text(serial: int) -> str:
    raw = serial.to_bytes(max(1, (serial.bit_length() + 7) // 8), "big")
    return ":".join(f"{b:02x}" for b in raw)


class IssuedCertificate:
    """A certificate the engine issued or signed, parsed; its private key kept hidden.

    ``certificate``, ``issuing_ca`` and ``ca_chain`` are PEM whatever format
    was asked; ``private_key`` is :class:`Sensitive` (``None`` for a signed
    CSR), and so is ``bundle`` for the ``pem_bundle`` format, which holds the key.
    """

    def __init__(
        self,
        data: Mapping[str, Any],
        *,
        mount: str,
        role: str = "",
        operation: str = "issue",
        format: str = "pem",
        warnings: Sequence[str] = (),
        lease: Mapping[str, Any] | None = None,
    ) -> None:
        self.cert = _load_certificate(str(data.get("certificate") or ""))
        self.certificate = _pem(self.cert)
        issuing = data.get("issuing_ca") or ""
        self.issuing_ca = _pem(_load_certificate(str(issuing))) if issuing else ""
        # The chain above the certificate (sign-intermediate answers it with the certificate first).
        chain = [_pem(_load_certificate(str(c))) for c in data.get("ca_chain") or []]
        self.ca_chain = [c for c in chain if c != self.certificate]
        self.serial_number = str(data.get("serial_number") or _serial_text(self.cert.serial_number))
        key = data.get("private_key")
        self.private_key: Sensitive | None = (
            key if isinstance(key, Sensitive) else Sensitive(key, "private key") if key else None
        )
        self.private_key_type = str(data.get("private_key_type") or "")
        self.bundle: Sensitive | None = None
        if format == "pem_bundle" and self.private_key is not None:
            self.bundle = Sensitive(str(data.get("certificate")), "certificate bundle")
        self.format = format
        self.mount = mount
        self.role = role
        self.operation = operation
        self.warnings = list(warnings)
        self.lease_id = str((lease or {}).get("lease_id") or "")

    # -- what the certificate says ---------------------------------------------------------
    @property
    def subject(self) -> str:
        return self.cert.subject.rfc4514_string()

    @property
    def common_name(self) -> str:
        values = self.cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
        return str(values[0].value) if values else ""

    @property
    def sans(self) -> list[str]:
        return certificate_names(self.cert)

    @property
    def issuer(self) -> str:
        return self.cert.issuer.rfc4514_string()

    @property
    def not_before(self) -> datetime:
        return self.cert.not_valid_before_utc

    @property
    def not_after(self) -> datetime:
        return self.cert.not_valid_after_utc

    def verify_chain(self) -> bool:
        """Check that the certificate was signed by its issuing CA, and each CA by the next.

        Signatures are checked with ``cryptography`` along ``ca_chain`` as the
        server answered it; a self-signed root at its end is checked against
        itself. Raises :class:`InputError` naming the link that fails; True otherwise.
        """
        above = self.ca_chain or ([self.issuing_ca] if self.issuing_ca else [])
        certificates = [self.cert, *(_load_certificate(pem) for pem in above)]
        if len(certificates) < 2:
            raise InputError("no issuing CA to verify the certificate against")
        last = certificates[-1]
        pairs = list(zip(certificates, certificates[1:], strict=False))
        if last.issuer == last.subject:
            pairs.append((last, last))
        for child, parent in pairs:
            try:
                child.verify_directly_issued_by(parent)
            except (ValueError, TypeError, InvalidSignature) as exc:
                raise InputError(
                    f"{child.subject.rfc4514_string()} is not signed by "
                    f"{parent.subject.rfc4514_string()}: {exc or type(exc).__name__}"
                ) from None
        return True

    # -- the private key, only when asked for -------------------------------------------
    def private_key_pem(self) -> str:
        """The private key as PEM text (base64 DER answers are turned into PEM).

        Hand it on, never display it.
        """
        if self.private_key is None:
            raise InputError(
                "this certificate came with no private key (a signed CSR keeps its own)"
            )
        text = self.private_key.reveal()
        if "-----BEGIN" in text:
            return text.strip() + "\n"
        key = serialization.load_der_private_key(base64.b64decode(text), password=None)
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()

    def save_key(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the private key as PEM to ``path``, readable by its owner only (0600).

        Refuses an existing file unless ``overwrite``. Returns the path.
        """
        target = Path(path)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        pem = self.private_key_pem()
        try:
            handle = os.open(target, flags, 0o600)
        except FileExistsError:
            raise InputError(f"{target} exists; pass overwrite=True to replace it") from None
        with os.fdopen(handle, "w") as out:
            os.fchmod(out.fileno(), 0o600)
            out.write(pem)
        return target

    def save_certificate(self, path: str | os.PathLike[str], *, chain: bool = True) -> Path:
        """Write the certificate (and its CA chain unless ``chain`` is False) as PEM."""
        target = Path(path)
        parts = [self.certificate, *(self.ca_chain if chain else [])]
        target.write_text("\n".join(parts) + "\n")
        return target

    def record(self) -> dict[str, Any]:
        """One row of :data:`ISSUED_CERTIFICATES`."""
        return {
            "serial_number": self.serial_number,
            "subject": self.subject,
            "sans": ", ".join(self.sans),
            "issuer": self.issuer,
            "not_before": self.not_before,
            "not_after": self.not_after,
            "mount": self.mount,
            "role": self.role,
            "operation": self.operation,
        }

    def __repr__(self) -> str:
        key = ", private_key=<hidden private key>" if self.private_key is not None else ""
        return (
            f"IssuedCertificate(subject={self.subject!r}, sans={self.sans!r}, "
            f"issuer={self.issuer!r}, not_after={self.not_after.isoformat()!r}{key})"
        )

    def _repr_html_(self) -> str:
        rows = {
            "subject": self.subject,
            "sans": ", ".join(self.sans),
            "issuer": self.issuer,
            "not after": self.not_after.isoformat(),
            "private key": "<hidden private key>" if self.private_key is not None else "none",
        }
        body = "".join(
            f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v in rows.items()
        )
        return f"<table><caption>issued certificate</caption>{body}</table>"


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


class PKI(EngineArea):
    """The certificate engine (spec 4.10); ``client.pki.at(path)`` for another mount."""

    DEFAULT_MOUNT = "pki"

    def __init__(
        self,
        http: HTTPLayer,
        mount: str | None = None,
        issued: list[IssuedCertificate] | None = None,
    ) -> None:
        super().__init__(http, mount)
        # The session's certificates, shared by every mount reached through .at().
        self._issued: list[IssuedCertificate] = issued if issued is not None else []

    def at(self, mount: str) -> Self:
        """The same calls against the engine mounted at ``mount`` (same session list)."""
        return type(self)(self._http, mount, self._issued)

    # -- roles ------------------------------------------------------------------------
    def list_roles(self) -> list[str]:
        """Role names. ``LIST /pki/roles``."""
        return self._list(self._path("roles"))

    def read_role(self, name: str) -> Record:
        """A role with every field (part 2). ``GET /pki/roles/:name``."""
        return self._record(self._read(self._path("roles/{name}", name=name)), "pki_role")

    def write_role(self, name: str, **fields: Any) -> Record:
        """Create or replace a role (fields not given take their defaults). ``POST /pki/roles/:name``.

        Returns the role as written; ``warnings`` from the server are in
        ``record.warnings`` (for example when ``issuer_ref`` names no issuer yet).
        """
        payload = self._send("POST", self._path("roles/{name}", name=name), fields)
        record = Record(unwrap(payload), kind="pki_role")
        record.warnings = warnings_of(payload)  # type: ignore[attr-defined]
        return record

    def delete_role(self, name: str) -> None:
        """Delete a role. ``DELETE /pki/roles/:name``."""
        self._send("DELETE", self._path("roles/{name}", name=name))

    def roles_frame(self) -> pd.DataFrame:
        """Every role of the mount, one row each (:data:`PKI_ROLES`)."""
        rows = []
        for name in self.list_roles():
            role = dict(self.read_role(name))
            for field in _LIST_FIELDS:
                value = role.get(field)
                role[field] = (
                    value if isinstance(value, str) else ", ".join(listed_keys(value, field))
                )
            rows.append({"name": name, **role})
        return build_frame(rows, PKI_ROLES)

    def check_request(
        self,
        role: str | Mapping[str, Any],
        common_name: str,
        *,
        alt_names: Sequence[str] = (),
        ip_sans: Sequence[str] = (),
        uri_sans: Sequence[str] = (),
        other_sans: Sequence[str] = (),
        user_ids: Sequence[str] = (),
        exclude_cn_from_sans: bool = False,
    ) -> str:
        """Why the role would refuse these names ("" when it would not), without sending them.

        ``role`` is a role name (read from the mount) or a role as read. The rules
        are the engine's (:mod:`toolkit._spec.certificate_names`); the server still
        decides.
        """
        fields = self.read_role(role) if isinstance(role, str) else role
        try:
            others = [policy.parse_other_san(o) for o in other_sans]
        except ValueError as exc:
            return f"other_sans: {exc}"
        dns, emails = policy.split_alt_names(list(alt_names))
        if common_name and not exclude_cn_from_sans:
            policy.add_common_name(common_name, dns, emails)
        for ip in ip_sans:
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                return f"the value {ip!r} is not a valid IP address"
        return policy.refusal(
            fields,
            common_name=common_name,
            dns_names=dns,
            emails=emails,
            ip_sans=list(ip_sans),
            uri_sans=list(uri_sans),
            other_sans=others,
            user_ids=list(user_ids),
        )

    # -- issuers ----------------------------------------------------------------------
    def list_issuers(self) -> list[str]:
        """Issuer ids. ``LIST /pki/issuers``."""
        return self._list(self._path("issuers"))

    def read_issuer(self, ref: str = "default") -> Record:
        """An issuer by id, name or ``default``. ``GET /pki/issuer/:ref``."""
        return self._record(self._read(self._path("issuer/{ref}", ref=ref)), "pki_issuer")

    def update_issuer(self, ref: str, **fields: Any) -> Record:
        """Change ``issuer_name``, ``leaf_not_after_behavior``, ``usage``. ``POST /pki/issuer/:ref``."""
        return self._record(
            unwrap(self._send("POST", self._path("issuer/{ref}", ref=ref), fields)), "pki_issuer"
        )

    def default_issuer(self) -> Record:
        """``default`` (an issuer id) and ``default_follows_latest_issuer``. ``GET /pki/config/issuers``."""
        return self._record(self._read(self._path("config/issuers")), "pki_issuers_config")

    def set_default_issuer(self, ref: str, *, follows_latest: bool | None = None) -> Record:
        """Make the issuer ``ref`` (id or name) the default. ``POST /pki/config/issuers``."""
        body = _body(default=ref, default_follows_latest_issuer=follows_latest)
        return self._record(
            unwrap(self._send("POST", self._path("config/issuers"), body)), "pki_issuers_config"
        )

    def issuers_frame(self) -> pd.DataFrame:
        """Every issuer of the mount with what its certificate says (:data:`PKI_ISSUERS`)."""
        default = self.default_issuer().get("default", "")
        rows = []
        for issuer_id in self.list_issuers():
            data = self.read_issuer(issuer_id)
            cert = _load_certificate(data["certificate"])
            rows.append(
                {
                    **data,
                    "issuer_id": issuer_id,
                    "is_default": issuer_id == default,
                    "subject": cert.subject.rfc4514_string(),
                    "issuer": cert.issuer.rfc4514_string(),
                    "self_signed": cert.issuer == cert.subject,
                    "max_path_length": path_length(cert),
                    "not_before": cert.not_valid_before_utc,
                    "not_after": cert.not_valid_after_utc,
                }
            )
        return build_frame(rows, PKI_ISSUERS)

    def generate_root(
        self, common_name: str, *, type: str = "internal", legacy_path: bool = False, **params: Any
    ) -> Record:
        """A new root issuer. ``POST /pki/issuers/generate/root/:type`` (``legacy_path``: ``root/generate/:type``).

        ``type`` is ``internal`` (the key stays), ``exported`` (the key is
        answered once, as ``Sensitive``) or ``existing`` (``key_ref``). Other
        parameters as the server takes them (``issuer_name``, ``key_type``,
        ``ttl``, ``not_after``, ``max_path_length``, ...).
        """
        template = "root/generate/{type}" if legacy_path else "issuers/generate/root/{type}"
        data = unwrap(
            self._send(
                "POST", self._path(template, type=type), _body(common_name=common_name, **params)
            )
        )
        return Record(hide(data, "private_key", label="private key"), kind="pki_issuer")

    def generate_intermediate(
        self, common_name: str, *, type: str = "internal", legacy_path: bool = False, **params: Any
    ) -> Record:
        """A new key and a CSR for an intermediate CA. ``POST /pki/issuers/generate/intermediate/:type``.

        ``legacy_path``: ``intermediate/generate/:type``. Returns ``csr``, ``key_id``.
        """
        template = (
            "intermediate/generate/{type}"
            if legacy_path
            else "issuers/generate/intermediate/{type}"
        )
        data = unwrap(
            self._send(
                "POST", self._path(template, type=type), _body(common_name=common_name, **params)
            )
        )
        return Record(hide(data, "private_key", label="private key"), kind="pki_csr")

    def set_signed(self, certificate: str) -> Record:
        """Import the signed intermediate (and its chain). ``POST /pki/intermediate/set-signed``.

        Returns ``imported_issuers``, ``existing_issuers`` and the ``mapping`` of issuer to key.
        """
        return self._record(
            unwrap(
                self._send(
                    "POST", self._path("intermediate/set-signed"), {"certificate": certificate}
                )
            ),
            "pki_import",
        )

    def import_bundle(self, pem_bundle: str) -> Record:
        """Import CA certificates (and keys) as issuers. ``POST /pki/issuers/import/bundle``."""
        return self._record(
            unwrap(
                self._send("POST", self._path("issuers/import/bundle"), {"pem_bundle": pem_bundle})
            ),
            "pki_import",
        )

    def list_keys(self) -> list[str]:
        """Key ids. ``LIST /pki/keys``."""
        return self._list(self._path("keys"))

    def read_key(self, ref: str) -> Record:
        """A key's id, name and type (never its material). ``GET /pki/key/:ref``."""
        return self._record(self._read(self._path("key/{ref}", ref=ref)), "pki_key")

    def generate_key(
        self,
        *,
        exported: bool = False,
        key_type: str | None = None,
        key_bits: int | None = None,
        key_name: str | None = None,
    ) -> Record:
        """A key with no issuer. ``POST /pki/keys/generate/internal`` (``exported``: ``.../exported``).

        Returns ``key_id``, ``key_name``, ``key_type``; an exported key's
        ``private_key`` is :class:`Sensitive`, answered this once.
        """
        kind = "exported" if exported else "internal"
        body = _body(key_type=key_type, key_bits=key_bits, key_name=key_name)
        data = unwrap(self._send("POST", self._path("keys/generate/{kind}", kind=kind), body))
        return Record(hide(data, "private_key", label="private key"), kind="pki_key")

    def delete_key(self, ref: str) -> None:
        """Delete a key no issuer uses (an unknown key is no error). ``DELETE /pki/key/:ref``."""
        self._send("DELETE", self._path("key/{ref}", ref=ref))

    def delete_issuer(self, ref: str) -> list[str]:
        """Delete an issuer; its certificates and key stay. ``DELETE /pki/issuer/:ref``.

        Returns the server's warnings (for example that it was the default issuer).
        """
        return warnings_of(self._send("DELETE", self._path("issuer/{ref}", ref=ref)))

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
        alt_names: Sequence[str] | str | None = None,
        ip_sans: Sequence[str] | str | None = None,
        uri_sans: Sequence[str] | str | None = None,
        other_sans: Sequence[str] | str | None = None,
        user_ids: Sequence[str] | str | None = None,
        ttl: str | int | None = None,
        not_after: str | datetime | None = None,
        format: str = "pem",
        private_key_format: str | None = None,
        exclude_cn_from_sans: bool | None = None,
        remove_roots_from_chain: bool | None = None,
        issuer_ref: str | None = None,
    ) -> IssuedCertificate:
        """A new key and certificate from ``role``. ``POST /pki/issue/:role``.

        With ``issuer_ref``: ``POST /pki/issuer/:issuer_ref/issue/:role``. ``ttl``
        and ``not_after`` (a UTC datetime or ``YYYY-MM-ddTHH:MM:SSZ``) exclude
        each other. The private key is in the result as ``Sensitive``.
        """
        return self._request(
            "issue",
            role,
            issuer_ref,
            common_name=common_name,
            alt_names=alt_names,
            ip_sans=ip_sans,
            uri_sans=uri_sans,
            other_sans=other_sans,
            user_ids=user_ids,
            ttl=ttl,
            not_after=not_after,
            format=format,
            private_key_format=private_key_format,
            exclude_cn_from_sans=exclude_cn_from_sans,
            remove_roots_from_chain=remove_roots_from_chain,
        )

    def sign(
        self,
        role: str,
        csr: str,
        *,
        common_name: str | None = None,
        alt_names: Sequence[str] | str | None = None,
        ip_sans: Sequence[str] | str | None = None,
        uri_sans: Sequence[str] | str | None = None,
        other_sans: Sequence[str] | str | None = None,
        user_ids: Sequence[str] | str | None = None,
        ttl: str | int | None = None,
        not_after: str | datetime | None = None,
        format: str = "pem",
        exclude_cn_from_sans: bool | None = None,
        remove_roots_from_chain: bool | None = None,
        issuer_ref: str | None = None,
    ) -> IssuedCertificate:
        """A certificate for the key of ``csr`` (PEM) from ``role``. ``POST /pki/sign/:role``.

        With ``issuer_ref``: ``POST /pki/issuer/:issuer_ref/sign/:role``.
        ``user_ids`` go into the subject as UID attributes (the role's
        ``allowed_user_ids`` decide which).
        """
        return self._request(
            "sign",
            role,
            issuer_ref,
            csr=csr,
            common_name=common_name,
            alt_names=alt_names,
            ip_sans=ip_sans,
            uri_sans=uri_sans,
            other_sans=other_sans,
            user_ids=user_ids,
            ttl=ttl,
            not_after=not_after,
            format=format,
            exclude_cn_from_sans=exclude_cn_from_sans,
            remove_roots_from_chain=remove_roots_from_chain,
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
        whether it is revoked (with when). A certificate gone between the list and its read is left out.
        """
        serials = self.list_certs()
        calls = [
            Request(
                "GET",
                self._path("cert/{listed_serial}", listed_serial=s),
                ok_statuses=frozenset({404}),
            )
            for s in serials
        ]
        rows = []
        answers = list(self._http.many(calls))
        # Expired by the server's clock (a sandbox's runs from its own epoch), not this machine's.
        now = self._http.server_now()
        for serial, response in zip(serials, answers, strict=True):
            if response.status_code == 404:
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
        return build_frame(rows, MOUNT_CERTIFICATES)

    def findings(self, *, expiring_within: timedelta = timedelta(days=30)) -> pd.DataFrame:
        """What needs an operator's eye on this mount, as a findings frame
        (:func:`certificate_findings`): roles that issue straight from a root, issuers
        and certificates that expire within ``expiring_within`` (by the server's clock),
        and expired certificates still stored. Reads the issuers, the roles and every
        stored certificate (:meth:`certificates_frame`)."""
        return certificate_findings(
            self.issuers_frame(),
            self.roles_frame(),
            self.certificates_frame(),
            mount=self.mount,
            now=self._http.server_now(),
            expiring_within=expiring_within,
        )

    # -- revocation ------------------------------------------------------------------------
    def revoke(self, serial: str) -> Record:
        """Revoke a certificate by serial (colons or hyphens). ``POST /pki/revoke``.

        Returns ``revocation_time`` (a UTC datetime), ``revocation_time_rfc3339``
        and ``state``. Revoking again answers the first revocation's time.
        """
        if not serial or not serial.strip():
            raise InputError("serial: give the serial number of the certificate to revoke")
        data = unwrap(self._send("POST", self._path("revoke"), {"serial_number": serial.strip()}))
        if data.get("revocation_time"):
            data["revocation_time"] = from_epoch(data["revocation_time"])
        return self._record(data, "pki_revocation")

    def crl(self, issuer_ref: str = "default", *, delta: bool = False) -> Record:
        """The issuer's CRL, parsed. ``GET /pki/issuer/:ref/crl`` (``delta``: ``.../crl/delta``).

        Returns ``issuer``, ``crl_number``, ``delta_of`` (the complete CRL's
        number, for a delta CRL), ``this_update`` and ``next_update`` (UTC
        datetimes), ``revoked`` (the serials, colon form) and ``pem``. The
        signature is checked against the issuer's certificate.
        """
        template = "issuer/{issuer_ref}/crl" + ("/delta" if delta else "")
        pem = str(self._read(self._path(template, issuer_ref=issuer_ref)).get("crl") or "")
        return _crl_record(pem, self._issuer_certificate(issuer_ref))

    def crl_entries(self, issuer_ref: str = "default", *, delta: bool = False) -> pd.DataFrame:
        """The CRL's revoked certificates (:data:`CRL_ENTRIES`): serial and revocation time."""
        crl = x509.load_pem_x509_crl(self.crl(issuer_ref, delta=delta)["pem"].encode())
        rows = [
            {
                "serial_number": _serial_text(r.serial_number),
                "revocation_time": r.revocation_date_utc,
            }
            for r in crl
        ]
        return build_frame(rows, CRL_ENTRIES)

    def rotate_crl(self) -> Record:
        """Rebuild every issuer's CRL now. ``GET /pki/crl/rotate``; ``success`` and ``warnings``."""
        return self._result(self._http.json("GET", self._path("crl/rotate")), "pki_crl_rotate")

    def rotate_delta_crl(self) -> Record:
        """Rebuild the delta CRLs now. ``GET /pki/crl/rotate-delta`` (a warned no-op unless enabled)."""
        payload = self._http.json("GET", self._path("crl/rotate-delta"))
        return self._result(payload, "pki_crl_rotate")

    def crl_config(self) -> Record:
        """``expiry``, ``disable``, ``auto_rebuild``, ``enable_delta``, ... ``GET /pki/config/crl``."""
        return self._record(self._read(self._path("config/crl")), "pki_crl_config")

    def update_crl_config(
        self,
        *,
        expiry: str | int | None = None,
        disable: bool | None = None,
        auto_rebuild: bool | None = None,
        auto_rebuild_grace_period: str | int | None = None,
        enable_delta: bool | None = None,
        delta_rebuild_interval: str | int | None = None,
        allow_expired_cert_revocation: bool | None = None,
    ) -> Record:
        """Change the CRL configuration (what is not given stays). ``POST /pki/config/crl``."""
        body = _body(
            expiry=expiry,
            disable=disable,
            auto_rebuild=auto_rebuild,
            auto_rebuild_grace_period=auto_rebuild_grace_period,
            enable_delta=enable_delta,
            delta_rebuild_interval=delta_rebuild_interval,
            allow_expired_cert_revocation=allow_expired_cert_revocation,
        )
        data = unwrap(self._send("POST", self._path("config/crl"), body))
        return self._record(data, "pki_crl_config")

    def sign_revocation_list(
        self,
        issuer_ref: str,
        revoked: Mapping[str, datetime] | None = None,
        *,
        crl_number: int = 0,
        next_update: str | int | None = None,
    ) -> Record:
        """A CRL of your own entries, signed by the issuer. ``POST /pki/issuer/:ref/sign-revocation-list``.

        ``revoked`` maps serial numbers to their (timezone-aware) revocation
        times. Nothing is stored on the server. Returns the parsed CRL as :meth:`crl` does.
        """
        entries = []
        for serial, when in (revoked or {}).items():
            if when.tzinfo is None:
                raise InputError(f"revoked[{serial!r}]: the time must be timezone-aware")
            entries.append({"serial_number": serial, "revocation_time": int(when.timestamp())})
        body = _body(crl_number=crl_number, next_update=next_update)
        body["revoked_certs"] = entries
        path = self._path("issuer/{issuer_ref}/sign-revocation-list", issuer_ref=issuer_ref)
        pem = str(unwrap(self._send("POST", path, body)).get("crl") or "")
        return _crl_record(pem, self._issuer_certificate(issuer_ref))

    def urls(self) -> Record:
        """Where issued certificates point (AIA, CRL, OCSP). ``GET /pki/config/urls``."""
        return self._record(self._read(self._path("config/urls")), "pki_urls")

    def update_urls(
        self,
        *,
        issuing_certificates: Sequence[str] | None = None,
        crl_distribution_points: Sequence[str] | None = None,
        delta_crl_distribution_points: Sequence[str] | None = None,
        ocsp_servers: Sequence[str] | None = None,
        enable_templating: bool | None = None,
    ) -> Record:
        """Set the URLs certificates issued from now on carry. ``POST /pki/config/urls``."""
        body: dict[str, Any] = {
            name: list(value)
            for name, value in (
                ("issuing_certificates", issuing_certificates),
                ("crl_distribution_points", crl_distribution_points),
                ("delta_crl_distribution_points", delta_crl_distribution_points),
                ("ocsp_servers", ocsp_servers),
            )
            if value is not None
        }
        if enable_templating is not None:
            body["enable_templating"] = enable_templating
        return self._record(unwrap(self._send("POST", self._path("config/urls"), body)), "pki_urls")

    # -- tidy ------------------------------------------------------------------------------
    def tidy(
        self,
        *,
        tidy_cert_store: bool = False,
        tidy_revoked_certs: bool = False,
        tidy_expired_issuers: bool = False,
        safety_buffer: str | int | None = None,
    ) -> Record:
        """Start a tidy of the mount. ``POST /pki/tidy`` (answered 202); ``warnings`` say what it did.

        Follow it with :meth:`tidy_status`.
        """
        body = _body(
            tidy_cert_store=tidy_cert_store,
            tidy_revoked_certs=tidy_revoked_certs,
            tidy_expired_issuers=tidy_expired_issuers,
            safety_buffer=safety_buffer,
        )
        return self._result(self._send("POST", self._path("tidy"), body), "pki_tidy")

    def tidy_status(self) -> Record:
        """The last tidy: ``state``, the counts deleted, when. ``GET /pki/tidy-status``."""
        return self._record(self._read(self._path("tidy-status")), "pki_tidy_status")

    def tidy_cancel(self) -> Record:
        """Stop a running tidy. ``POST /pki/tidy-cancel``; ``warnings`` say when none runs."""
        return self._result(self._send("POST", self._path("tidy-cancel")), "pki_tidy")

    def _issuer_certificate(self, ref: str) -> x509.Certificate:
        """``GET /pki/issuer/:ref/json``: the issuer's certificate, to check what it signed."""
        return _load_certificate(
            str(self._read(self._path("issuer/{ref}/json", ref=ref))["certificate"])
        )

    def _result(self, payload: Any, kind: str) -> Record:
        record = Record(unwrap(payload), kind=kind)
        record.warnings = warnings_of(payload)  # type: ignore[attr-defined]
        return record

    # -- the session's certificates -----------------------------------------------------
    @property
    def issued(self) -> list[IssuedCertificate]:
        """The certificates this client issued or signed in the session, oldest first."""
        return list(self._issued)

    def session_certificates(self) -> pd.DataFrame:
        """The session's certificates (:data:`ISSUED_CERTIFICATES`): subject, SANs, serial, issuer, not after."""
        return build_frame([c.record() for c in self._issued], ISSUED_CERTIFICATES)


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
            "revoked": [_serial_text(r.serial_number) for r in crl],
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


def certificate_findings(
    issuers: pd.DataFrame,
    roles: pd.DataFrame,
    certificates: pd.DataFrame,
    *,
    mount: str,
    now: datetime,
    expiring_within: timedelta = timedelta(days=30),
) -> pd.DataFrame:
    """Findings from a mount's issuers (:meth:`PKI.issuers_frame`), roles
    (:meth:`PKI.roles_frame`) and stored certificates (:meth:`PKI.certificates_frame`).

    - **high**: a role whose ``issuer_ref`` (``default`` included) is a self-signed
      root: every leaf it issues keeps the root's key in daily use; an issuer that
      expires within ``expiring_within`` (everything under it stops verifying).
    - **medium**: a role whose ``issuer_ref`` names no issuer; a certificate, not
      revoked, that expires within ``expiring_within``.
    - **low**: expired certificates still stored (one finding, with the count): a tidy
      would remove them.
    """
    found: list[Finding] = []
    by_ref: dict[str, Any] = {}
    for issuer_id, row in issuers.iterrows():
        by_ref[str(issuer_id)] = row
        if isinstance(row.get("issuer_name"), str) and row["issuer_name"]:
            by_ref[row["issuer_name"]] = row
        if bool(row.get("is_default")):
            by_ref["default"] = row
    horizon = now + expiring_within
    for issuer_id, row in issuers.iterrows():
        name = row.get("issuer_name") or issuer_id
        if pd.notna(row["not_after"]) and row["not_after"] <= horizon:
            found.append(
                Finding(
                    "high",
                    "certificates",
                    f"{mount}/issuer/{name}",
                    f"the issuer expires {row['not_after']:%Y-%m-%d}: what it signed stops verifying",
                )
            )
    for role, row in roles.iterrows():
        ref = str(row.get("issuer_ref") or "default")
        issuer = by_ref.get(ref)
        where = f"{mount}/roles/{role}"
        if issuer is None:
            found.append(
                Finding("medium", "certificates", where, f"issuer_ref {ref!r} names no issuer")
            )
        elif bool(issuer["self_signed"]):
            found.append(
                Finding(
                    "high",
                    "certificates",
                    where,
                    f"issues straight from the root {issuer.get('issuer_name') or ref}: "
                    "sign leaves with an intermediate and keep the root offline",
                )
            )
    live = certificates[
        ~certificates["revoked"].astype(bool) & ~certificates["expired"].astype(bool)
    ]
    for serial, row in live[live["not_after"] <= horizon].iterrows():
        found.append(
            Finding(
                "medium",
                "certificates",
                f"{mount}/cert/{serial}",
                f"{row['subject']} expires {row['not_after']:%Y-%m-%d}",
            )
        )
    stale = int(certificates["expired"].astype(bool).sum())
    if stale:
        found.append(
            Finding(
                "low",
                "certificates",
                f"{mount}/certs",
                f"{stale} expired certificate(s) still stored: a tidy removes them",
            )
        )
    return findings_frame(found)
