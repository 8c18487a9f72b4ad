"""The certificate engine (spec 4.10, part 2 "Certificate engine role", multi-issuer model).

One mount holds several CA issuers, each with its key; one of them is the
default (``config/issuers``). An issuer is found by its id, its name or the
literal ``default``. Roles carry the name policy; issue and sign go to the
role's ``issuer_ref`` or to the issuer named in the path; sign-intermediate
and sign-self-issued take no role. Serial numbers are unique across the
mount's issuers, and every certificate made is kept under ``certs/``.

Certificates are real X.509 made with ``cryptography`` (see :mod:`.x509`),
timed on the sandbox clock. Every request is read and checked whole before
a key is made or anything stored: a refusal changes nothing.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from .... import _certificate_policy as policy
from .. import fields
from ..errors import SecretsError
from . import x509 as certs
from .requests import (
    SUBJECT_FIELDS,
    CAOptions,
    Names,
    Output,
    go_duration,
    parse_ca_options,
    parse_ip,
    parse_names,
    parse_not_after,
    parse_output,
    subject_fields,
)
from .roles import key_bits, parse_role, role_ext_key_usage

if TYPE_CHECKING:
    from ..leases import Lease
    from ..models import SecretsService
    from ..mounts import Mount

__all__ = ["PKI", "Issuer", "IssuedCert", "StoredKey"]

USAGES = ("crl-signing", "issuing-certificates", "ocsp-signing", "read-only")
LEAF_BEHAVIORS = ("err", "truncate", "permit")
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


@dataclass
class IssuedCert:
    serial: str  # colon form, "1f:0a:..."
    certificate: str
    issuer_id: str
    revocation_time: int = 0


class PKI:
    """One mount's state of the certificate engine (spec 4.10)."""

    def __init__(self, service: SecretsService, mount: Mount) -> None:
        self.service = service
        self.mount = mount
        self.issuers: dict[str, Issuer] = {}
        self.keys: dict[str, StoredKey] = {}
        self.roles: dict[str, dict[str, Any]] = {}
        self.certs: dict[str, IssuedCert] = {}
        self.default_issuer = ""
        self.default_follows_latest_issuer = False

    # -- issuers ------------------------------------------------------------------------
    def resolve(self, ref: str) -> Issuer:
        """The issuer ``ref`` names: ``default``, an issuer id, or an issuer name; 400 otherwise."""
        if ref.strip().lower() == "default":
            if not self.default_issuer:
                raise SecretsError(400, "no default issuer currently configured")
            return self.issuers[self.default_issuer]
        if ref in self.issuers:
            return self.issuers[ref]
        for issuer in self.issuers.values():
            if issuer.name and issuer.name == ref:
                return issuer
        raise SecretsError(400, f"unable to find PKI issuer for reference: {ref}")

    def _signer(self, ref: str) -> tuple[Issuer, certs.PrivateKey]:
        """The issuer that signs a request, with its key; 400 as the real server words it."""
        try:
            issuer = self.resolve(ref)
            if "issuing-certificates" not in issuer.usage:
                raise SecretsError(
                    400,
                    f"requested usage issuing-certificates for issuer {issuer.id} but only had "
                    f"usage {','.join(issuer.usage)}",
                )
            key = self.keys.get(issuer.key_id)
            if key is None:
                raise SecretsError(
                    400, f"issuer {issuer.id} has no key in this mount and cannot sign"
                )
        except SecretsError as exc:
            raise SecretsError(
                exc.status, f"could not fetch the CA certificate (was one set?): {exc}"
            ) from None
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

    def issuer_data(self, issuer: Issuer) -> dict[str, Any]:
        """An issuer as ``GET issuer/:ref`` answers it."""
        return {
            "issuer_id": issuer.id,
            "issuer_name": issuer.name,
            "key_id": issuer.key_id,
            "certificate": issuer.certificate,
            "ca_chain": self.chain(issuer),
            "manual_chain": None,
            "leaf_not_after_behavior": issuer.leaf_not_after_behavior,
            "usage": ",".join(sorted(issuer.usage)),
            "revocation_signature_algorithm": issuer.revocation_signature_algorithm,
            "revoked": False,
            "issuing_certificates": [],
            "crl_distribution_points": [],
            "delta_crl_distribution_points": [],
            "ocsp_servers": [],
        }

    def list_issuers(self) -> tuple[list[str], dict[str, Any]]:
        """Issuer ids and, per id, ``issuer_name``, ``is_default``, ``serial_number``."""
        info = {
            i.id: {
                "issuer_name": i.name,
                "is_default": i.id == self.default_issuer,
                "serial_number": certs.format_serial(i.cert.serial_number),
                "key_id": i.key_id,
            }
            for i in self.issuers.values()
        }
        return list(info), info

    def _check_name(self, name: str, kind: str, taken: list[str]) -> None:
        if not name:
            return
        if name.lower() == "default":
            raise SecretsError(400, f"reserved keyword 'default' can not be used as {kind} name")
        if not _NAME.match(name):
            raise SecretsError(400, f"{kind} name contained invalid characters")
        if name in taken:
            raise SecretsError(400, f"{kind} name already in use")

    def update_issuer(self, ref: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST issuer/:ref``: ``issuer_name``, ``leaf_not_after_behavior``, ``usage``."""
        issuer = self.resolve(ref)
        name = fields.string(body, "issuer_name", issuer.name)
        others = [i.name for i in self.issuers.values() if i.id != issuer.id]
        self._check_name(name, "issuer", others)
        behavior = fields.string(body, "leaf_not_after_behavior", issuer.leaf_not_after_behavior)
        if behavior not in LEAF_BEHAVIORS:
            raise SecretsError(
                400, f"leaf_not_after_behavior: must be err, truncate or permit, got {behavior!r}"
            )
        usage = fields.string_list(body, "usage") if "usage" in body else issuer.usage
        bad = [u for u in usage if u not in USAGES]
        if bad:
            raise SecretsError(400, f"usage: unknown issuer usage {bad[0]!r}")
        issuer.name, issuer.leaf_not_after_behavior = name, behavior
        issuer.usage = sorted(set(usage) | {"read-only"})  # read-only is always implied
        return self.issuer_data(issuer)

    def config_issuers(self) -> dict[str, Any]:
        return {
            "default": self.default_issuer,
            "default_follows_latest_issuer": self.default_follows_latest_issuer,
        }

    def set_config_issuers(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST config/issuers``: the default issuer (by id or name) and whether it follows the latest."""
        ref = fields.string(body, "default")
        if not ref or ref == "default":
            raise SecretsError(
                400, "Invalid issuer specification; must be non-empty and can't be 'default'."
            )
        issuer = self.resolve(ref)
        follows = fields.boolean(
            body, "default_follows_latest_issuer", self.default_follows_latest_issuer
        )
        self.default_issuer, self.default_follows_latest_issuer = issuer.id, follows
        return self.config_issuers()

    def _add_issuer(self, cert: x509.Certificate, key_id: str, name: str = "") -> Issuer:
        issuer = Issuer(str(uuid.uuid4()), name, key_id, certs.cert_pem(cert))
        self.issuers[issuer.id] = issuer
        if key_id and (not self.default_issuer or self.default_follows_latest_issuer):
            self.default_issuer = issuer.id
        return issuer

    # -- keys -------------------------------------------------------------------------
    def resolve_key(self, ref: str) -> StoredKey:
        if ref == "default" and self.default_issuer:
            ref = self.issuers[self.default_issuer].key_id
        for key in self.keys.values():
            if ref in (key.id, key.name) and ref:
                return key
        raise SecretsError(400, f"unable to find PKI key for reference: {ref}")

    def key_data(self, key: StoredKey) -> dict[str, Any]:
        return {"key_id": key.id, "key_name": key.name, "key_type": key.type, "key_bits": key.bits}

    def _key_for(
        self, kind: str, body: Mapping[str, Any]
    ) -> tuple[StoredKey | None, str, int, str]:
        """For ``internal``/``exported``: the type, bits and name of a new key; ``existing``: the key."""
        if kind == "existing":
            ref = fields.string(body, "key_ref")
            if not ref:
                raise SecretsError(400, "missing argument key_ref for existing type")
            return self.resolve_key(ref), "", 0, ""
        if kind not in ("internal", "exported"):
            raise SecretsError(400, f"type: must be internal, exported or existing, got {kind!r}")
        key_type = fields.string(body, "key_type", "rsa") or "rsa"
        if key_type == "any":
            raise SecretsError(400, 'key_type: "any" cannot be used to generate a key')
        bits = key_bits(key_type, fields.integer(body, "key_bits", 0))
        name = fields.string(body, "key_name")
        self._check_name(name, "key", [k.name for k in self.keys.values()])
        return None, key_type, bits, name

    def _store_key(self, key: certs.PrivateKey, key_type: str, bits: int, name: str) -> StoredKey:
        stored = StoredKey(str(uuid.uuid4()), name, key_type, bits, certs.key_pem(key))
        self.keys[stored.id] = stored
        return stored

    # -- roles --------------------------------------------------------------------------
    def write_role(self, name: str, body: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """``POST roles/:name``: the whole role (defaults for what is not given), and warnings."""
        role, warnings = parse_role(body)
        try:
            self.resolve(role["issuer_ref"])
        except SecretsError:
            if role["issuer_ref"] == "default":
                warnings.append(
                    "Issuing Certificate was set to default, but no default issuing certificate "
                    "(configurable at /config/issuers) is currently set"
                )
            else:
                warnings.append(
                    f"Issuing Certificate was set to {role['issuer_ref']} but no issuing "
                    "certificate currently has that name"
                )
        self.roles[name] = role
        return dict(role), warnings

    def role(self, name: str) -> dict[str, Any] | None:
        role = self.roles.get(name)
        return dict(role) if role is not None else None

    def _role_for_use(self, name: str) -> dict[str, Any]:
        role = self.roles.get(name)
        if role is None:
            raise SecretsError(400, f"unknown role: {name}")
        return role

    def delete_role(self, name: str) -> None:
        self.roles.pop(name, None)

    # -- validity -----------------------------------------------------------------------
    def _validity(
        self,
        body: Mapping[str, Any],
        signer: x509.Certificate | None,
        *,
        behavior: str = "err",
        role: Mapping[str, Any] | None = None,
        not_before_duration: int = 30,
    ) -> tuple[datetime, datetime, list[str]]:
        """NotBefore and NotAfter from ``ttl`` or ``not_after``, capped as the server does.

        ``ttl`` falls back to the role's ``ttl``, then the mount's default; above
        the role's ``max_ttl`` (else the mount's maximum) it is cut to it with a
        warning. A NotAfter past the signing issuer's follows the issuer's
        ``leaf_not_after_behavior``: ``err`` refuses, ``truncate`` cuts, ``permit`` allows.
        """
        ttl = fields.duration(body, "ttl")
        not_after_text = (role or {}).get("not_after") or fields.string(body, "not_after")
        if ttl and not_after_text:
            raise SecretsError(
                400,
                "Either ttl or not_after should be provided. Both should not be provided in "
                "the same request.",
            )
        mount_default, mount_max = self.mount.lease_ttls()
        role_ttl, role_max = (role or {}).get("ttl", 0), (role or {}).get("max_ttl", 0)
        ttl = ttl or role_ttl or mount_default
        max_ttl = role_max or mount_max
        warnings = []
        if ttl > max_ttl:
            warnings.append(
                f'TTL "{go_duration(ttl)}" is longer than permitted maxTTL '
                f'"{go_duration(max_ttl)}", so maxTTL is being used'
            )
            ttl = max_ttl
        now = self.service.clock.now().replace(microsecond=0)
        not_after = (
            parse_not_after(not_after_text) if not_after_text else now + timedelta(seconds=ttl)
        )
        if signer is not None and not_after > signer.not_valid_after_utc:
            if behavior == "truncate":
                not_after = signer.not_valid_after_utc
            elif behavior != "permit":
                raise SecretsError(
                    400,
                    f"cannot satisfy request, as TTL would result in notAfter of "
                    f"{_rfc3339(not_after)} that is beyond the expiration of the CA certificate "
                    f"at {_rfc3339(signer.not_valid_after_utc)}",
                )
        fixed_start = (role or {}).get("not_before")
        not_before = (
            parse_not_after(fixed_start, "not_before")
            if fixed_start
            else now - timedelta(seconds=not_before_duration)
        )
        if not_after <= not_before:
            raise SecretsError(400, f"not_after: {_rfc3339(not_after)} is not after NotBefore")
        return not_before, not_after, warnings

    def _leaf_validity(
        self, body: Mapping[str, Any], signer: Issuer, role: Mapping[str, Any]
    ) -> tuple[datetime, datetime, list[str]]:
        """The validity of an issued or signed leaf: the role's ttls, the issuer's behaviour."""
        return self._validity(
            body,
            signer.cert,
            behavior=signer.leaf_not_after_behavior,
            role=role,
            not_before_duration=role["not_before_duration"],
        )

    # -- names --------------------------------------------------------------------------
    def _role_names(
        self, role: Mapping[str, Any], names: Names, csr: x509.CertificateSigningRequest | None
    ) -> certs.CertTemplate:
        """The subject and SANs of an issue or sign request, checked against the role.

        The first name the role refuses denies the whole request, naming it.
        """
        cn = names.common_name
        if csr is not None and role["use_csr_common_name"]:
            cn = _csr_common_name(csr) or cn
        if csr is not None and role["use_csr_sans"]:
            dns, emails, ips, uris = _csr_sans(csr)
        else:
            dns, emails = policy.split_alt_names(names.alt_names)
            ips, uris = names.ip_sans, names.uri_sans
        if cn and not names.exclude_cn_from_sans:
            policy.add_common_name(cn, dns, emails)
        serial = names.subject_serial
        refused = policy.refusal(
            role,
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
            raise SecretsError(400, refused)
        subject_values = {k: list(role[k]) for k in SUBJECT_FIELDS}
        subject_values["serial_number"] = [serial] if serial else []
        subject = certs.subject_name(cn, subject_values, names.user_ids)
        return _template(subject, dns, emails, ips, uris, names.other_sans)

    @staticmethod
    def _ca_names(
        body: Mapping[str, Any],
        names: Names,
        options: CAOptions,
        csr: x509.CertificateSigningRequest | None,
    ) -> certs.CertTemplate:
        """The subject and SANs of a CA certificate: no role policy; from the CSR with use_csr_values."""
        if csr is not None and options.use_csr_values:
            dns, emails, ips, uris = _csr_sans(csr)
            template = _template(csr.subject, dns, emails, ips, uris)
            template.copied = [e for e in csr.extensions]
            for extension in csr.extensions:
                if isinstance(extension.value, x509.KeyUsage):
                    template.key_usage = _key_usage_names(extension.value)
            return template
        cn = names.common_name
        if not cn:
            raise SecretsError(400, "missing common_name")
        dns, emails = policy.split_alt_names(names.alt_names)
        if not names.exclude_cn_from_sans:
            policy.add_common_name(cn, dns, emails)
        values = subject_fields(body)
        values["serial_number"] = [names.subject_serial] if names.subject_serial else []
        subject = certs.subject_name(cn, values, names.user_ids)
        return _template(subject, dns, emails, names.ip_sans, names.uri_sans, names.other_sans)

    # -- making and keeping certificates ----------------------------------------------------
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

    def _answer(
        self,
        cert: x509.Certificate,
        signer: Issuer,
        output: Output,
        key: certs.PrivateKey | None = None,
        *,
        chain_from_self: bool = False,
    ) -> dict[str, Any]:
        """The response ``data``: certificate, issuing CA, chain, serial, and the key if one was made.

        ``ca_chain`` is the signer's chain (the new certificate first for
        sign-intermediate, ``chain_from_self``); it is left out when empty, as
        when ``remove_roots_from_chain`` drops the only (root) issuer.
        """
        pem = certs.cert_pem(cert)
        chain = ([pem] if chain_from_self else []) + self.chain(signer)
        if output.remove_roots_from_chain:
            chain = [c for c in chain if not certs.is_self_signed(certs.load_cert(c))]
        fmt = output.format
        data: dict[str, Any] = {
            "certificate": certs.encode_cert(pem, fmt),
            "issuing_ca": certs.encode_cert(signer.certificate, fmt),
            "serial_number": certs.format_serial(cert.serial_number),
            "not_before": int(cert.not_valid_before_utc.timestamp()),
            "expiration": int(cert.not_valid_after_utc.timestamp()),
        }
        if chain:
            data["ca_chain"] = [certs.encode_cert(c, fmt) for c in chain]
        if fmt == "pem_bundle":
            parts = [pem]
            if key is not None:
                parts.insert(0, certs.private_key_output(key, "pem", "der"))
            if signer.certificate != pem and not certs.is_self_signed(signer.cert):
                parts.append(signer.certificate)
            data["certificate"] = "\n".join(parts)
        if key is not None:
            key_fmt = "pem" if fmt == "pem_bundle" else fmt
            data["private_key"] = certs.private_key_output(key, key_fmt, output.private_key_format)
            data["private_key_type"] = certs.key_description(key.public_key())[0]
        return data

    def _lease(
        self, role_name: str, role: Mapping[str, Any], cert: x509.Certificate, verb: str
    ) -> dict[str, Any]:
        """A lease for the certificate when the role asks for one (``generate_lease``); else none."""
        if not role["generate_lease"]:
            return {}
        now = self.service.clock.now()
        ttl = max(1, int((cert.not_valid_after_utc - now).total_seconds()))
        lease = self.service.leases.create(
            f"{self.mount.path}{verb}/{role_name}",
            ttl=ttl,
            max_ttl=ttl,
            renewable=False,
            on_revoke=self._lease_revoked,
            data={"serial": certs.format_serial(cert.serial_number)},
        )
        return {"lease_id": lease.lease_id, "lease_duration": ttl, "renewable": False}

    def _lease_revoked(self, lease: Lease) -> None:
        kept = self.certs.get((lease.data or {}).get("serial", ""))
        if kept is not None and not kept.revocation_time:
            kept.revocation_time = int(self.service.clock.now().timestamp())

    # -- issue and sign ----------------------------------------------------------------------
    def issue(
        self, role_name: str, body: Mapping[str, Any], issuer_ref: str | None = None
    ) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
        """``POST issue/:role`` (or ``issuer/:ref/issue/:role``): a new key and its certificate.

        Returns the response data (with ``private_key``), warnings, and lease fields.
        """
        role = self._role_for_use(role_name)
        key_type, bits, warnings = _issue_key(role, body)
        names = parse_names(body)
        output = parse_output(body)
        signer, signer_key = self._signer(issuer_ref or role["issuer_ref"])
        template = self._role_names(role, names, None)
        not_before, not_after, more = self._leaf_validity(body, signer, role)
        warnings += more
        key = certs.generate_key(key_type, bits)
        cert = self._sign_leaf(
            role, template, key.public_key(), not_before, not_after, signer, signer_key
        )
        if not role["no_store"]:
            self._keep(cert, signer.id)
        return (
            self._answer(cert, signer, output, key),
            warnings,
            self._lease(role_name, role, cert, "issue"),
        )

    def sign(
        self, role_name: str, body: Mapping[str, Any], issuer_ref: str | None = None
    ) -> tuple[dict[str, Any], list[str], dict[str, Any]]:
        """``POST sign/:role`` (or ``issuer/:ref/sign/:role``): a certificate for the CSR's key."""
        role = self._role_for_use(role_name)
        csr = certs.read_csr(fields.string(body, "csr", need=True))
        names = parse_names(body)
        output = parse_output(body, with_key=False)
        signer, signer_key = self._signer(issuer_ref or role["issuer_ref"])
        _check_csr_key(role, csr.public_key())
        template = self._role_names(role, names, csr)
        not_before, not_after, warnings = self._leaf_validity(body, signer, role)
        cert = self._sign_leaf(
            role, template, csr.public_key(), not_before, not_after, signer, signer_key
        )
        if not role["no_store"]:
            self._keep(cert, signer.id)
        if role["use_csr_common_name"] and names.common_name:
            warnings.append(
                "the common_name field was provided but the role is set with "
                '"use_csr_common_name" set to true'
            )
        if role["use_csr_sans"] and names.alt_names:
            warnings.append(
                "the alt_names field was provided but the role is set with "
                '"use_csr_sans" set to true'
            )
        return (
            self._answer(cert, signer, output),
            warnings,
            self._lease(role_name, role, cert, "sign"),
        )

    def _sign_leaf(
        self,
        role: Mapping[str, Any],
        template: certs.CertTemplate,
        public_key: Any,
        not_before: datetime,
        not_after: datetime,
        signer: Issuer,
        signer_key: certs.PrivateKey,
    ) -> x509.Certificate:
        template.public_key = public_key
        template.not_before, template.not_after = not_before, not_after
        template.serial = self._serial()
        template.key_usage = list(role["key_usage"])
        template.ext_key_usage = role_ext_key_usage(role)
        template.basic_constraints_for_leaf = role["basic_constraints_valid_for_non_ca"]
        return certs.sign(
            template,
            signer.cert,
            signer_key,
            signature_bits=role["signature_bits"],
            use_pss=role["use_pss"],
        )

    def sign_intermediate(
        self, body: Mapping[str, Any], issuer_ref: str = "default"
    ) -> tuple[dict[str, Any], list[str]]:
        """``POST root/sign-intermediate`` (or ``issuer/:ref/sign-intermediate``): a CA certificate.

        No role policy applies; the result may outlast the signing issuer (with a warning).
        """
        csr = certs.read_csr(fields.string(body, "csr", need=True))
        names = parse_names(body)
        options = parse_ca_options(body)
        output = parse_output(body, with_key=False)
        signer, signer_key = self._signer(issuer_ref)
        template = self._ca_names(body, names, options, csr)
        not_before, not_after, warnings = self._validity(
            body, signer.cert, behavior="permit", not_before_duration=options.not_before_duration
        )
        template.public_key = csr.public_key()
        cert = self._sign_ca(template, options, not_before, not_after, signer.cert, signer_key)
        self._keep(cert, signer.id)
        if cert.not_valid_after_utc > signer.cert.not_valid_after_utc:
            warnings.append(
                "The expiration time for the signed certificate is after the CA's expiration "
                "time. If the new certificate is not treated as a root, validation paths with "
                "the certificate past the issuing CA's expiration time will fail."
            )
        warnings += _ca_warnings(cert, "signed")
        return self._answer(cert, signer, output, chain_from_self=True), warnings

    def _sign_ca(
        self,
        template: certs.CertTemplate,
        options: CAOptions,
        not_before: datetime,
        not_after: datetime,
        parent: x509.Certificate | None,
        signer_key: certs.PrivateKey,
    ) -> x509.Certificate:
        template.is_ca = True
        template.max_path_length = _path_length(options.max_path_length, parent)
        template.permitted_dns_domains = options.permitted_dns_domains
        template.key_usage = sorted(set(template.key_usage) | {"CertSign", "CRLSign"})
        template.skid = options.skid
        template.not_before, template.not_after = not_before, not_after
        template.serial = self._serial()
        return certs.sign(
            template,
            parent,
            signer_key,
            signature_bits=options.signature_bits,
            use_pss=options.use_pss,
        )

    def sign_self_issued(
        self, body: Mapping[str, Any], issuer_ref: str = "default"
    ) -> dict[str, Any]:
        """``POST root/sign-self-issued`` (or ``issuer/:ref/sign-self-issued``).

        The submitted certificate must be a self-issued CA certificate; it keeps
        its subject, key, serial, validity and extensions, and gets the signing
        issuer's name as issuer and its key id as authority key id.
        """
        found = certs.read_certificates(
            fields.string(body, "certificate", need=True), "certificate"
        )
        if len(found) != 1:
            raise SecretsError(400, f"{len(found)} certificates found in PEM file, expected 1")
        submitted = found[0]
        require_match = fields.boolean(body, "require_matching_certificate_algorithms")
        try:
            is_ca = submitted.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        except x509.ExtensionNotFound:
            is_ca = False
        if not is_ca:
            raise SecretsError(400, "given certificate is not a CA certificate")
        if submitted.issuer != submitted.subject:
            raise SecretsError(400, "given certificate is not self-issued")
        signer, signer_key = self._signer(issuer_ref)
        ours = certs.key_description(signer.cert.public_key())[0]
        theirs = certs.key_description(submitted.public_key())[0]
        if require_match and ours != theirs:
            raise SecretsError(
                400,
                f"signing certificate's public key algorithm ({ours}) does not match submitted "
                f"certificate's ({theirs}), and require_matching_certificate_algorithms is true",
            )
        template = certs.CertTemplate(
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
        template.copied = [e for e in submitted.extensions if e.oid not in dropped]
        try:
            template.skid = submitted.extensions.get_extension_for_class(
                x509.SubjectKeyIdentifier
            ).value.digest
        except x509.ExtensionNotFound:
            template.skid = None
        cert = certs.sign(template, signer.cert, signer_key)
        return {"certificate": certs.cert_pem(cert), "issuing_ca": signer.certificate}

    # -- CA generation and import -------------------------------------------------------------
    def generate_root(self, kind: str, body: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """``POST root/generate/:type`` and ``issuers/generate/root/:type``: a new root issuer.

        ``internal`` keeps the key, ``exported`` also answers it once, ``existing``
        uses the key named by ``key_ref``. The first issuer with a key becomes the default.
        """
        existing, key_type, bits, key_name = self._key_for(kind, body)
        names = parse_names(body)
        options = parse_ca_options(body)
        options.use_csr_values = False
        output = parse_output(body)
        issuer_name = fields.string(body, "issuer_name")
        self._check_name(issuer_name, "issuer", [i.name for i in self.issuers.values()])
        template = self._ca_names(body, names, options, None)
        not_before, not_after, warnings = self._validity(
            body, None, not_before_duration=options.not_before_duration
        )
        key = certs.load_key(existing.pem) if existing else certs.generate_key(key_type, bits)
        template.public_key = key.public_key()
        cert = self._sign_ca(template, options, not_before, not_after, None, key)
        stored = existing or self._store_key(key, key_type, bits, key_name)
        issuer = self._add_issuer(cert, stored.id, issuer_name)
        issuer.revocation_signature_algorithm = certs.signature_algorithm_name(cert)
        self._keep(cert, issuer.id)
        data = {
            "certificate": certs.encode_cert(issuer.certificate, output.format),
            "issuing_ca": certs.encode_cert(issuer.certificate, output.format),
            "serial_number": certs.format_serial(cert.serial_number),
            "expiration": int(cert.not_valid_after_utc.timestamp()),
            "issuer_id": issuer.id,
            "issuer_name": issuer.name,
            "key_id": stored.id,
            "key_name": stored.name,
        }
        if kind == "exported":
            data["private_key"] = certs.private_key_output(
                key,
                "pem" if output.format == "pem_bundle" else output.format,
                output.private_key_format,
            )
            data["private_key_type"] = key_type
            if output.format == "pem_bundle":
                data["certificate"] = "\n".join(
                    [certs.private_key_output(key, "pem", "der"), issuer.certificate]
                )
        return data, warnings + _ca_warnings(cert, "generated")

    def generate_intermediate(self, kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST intermediate/generate/:type`` and ``issuers/generate/intermediate/:type``: a key and its CSR."""
        existing, key_type, bits, key_name = self._key_for(kind, body)
        names = parse_names(body)
        output = parse_output(body)
        template = self._ca_names(body, names, CAOptions(), None)
        key = certs.load_key(existing.pem) if existing else certs.generate_key(key_type, bits)
        csr_pem = certs.build_csr(template.subject, key, template.general_names())
        stored = existing or self._store_key(key, key_type, bits, key_name)
        csr_out = csr_pem
        if output.format == "der":
            csr_out = base64.b64encode(
                x509.load_pem_x509_csr(csr_pem.encode()).public_bytes(serialization.Encoding.DER)
            ).decode()
        data: dict[str, Any] = {"csr": csr_out, "key_id": stored.id, "key_name": stored.name}
        if kind == "exported":
            data["private_key"] = certs.private_key_output(
                key, "der" if output.format == "der" else "pem", output.private_key_format
            )
            data["private_key_type"] = key_type
        return data

    def import_bundle(self, text: str, field_name: str, *, need_key: bool) -> dict[str, Any]:
        """``POST intermediate/set-signed`` (``certificate``) or ``issuers/import/bundle`` (``pem_bundle``).

        Every CA certificate in the text becomes an issuer unless it already is
        one; an issuer gets the mount's key matching its public key. Private keys
        in a bundle are imported first. ``need_key``: refuse when no certificate
        matches a key of the mount (set-signed, where the CSR's key is here).
        """
        if not text.strip():
            raise SecretsError(400, f"missing {field_name}")
        keys = _read_keys(text, field_name)
        found = certs.read_certificates(text, field_name) if "CERTIFICATE" in text else []
        for cert in found:
            try:
                is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
            except x509.ExtensionNotFound:
                is_ca = False
            if not is_ca:
                raise SecretsError(400, f"{field_name}: refusing to import non-CA certificate")
        if not found and not keys:
            raise SecretsError(400, f"{field_name}: no certificate or key found")

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
            raise SecretsError(400, f"{field_name}: no certificate matches a key of this mount")
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
        return {
            "imported_issuers": imported or None,
            "imported_keys": imported_keys or None,
            "mapping": mapping,
            "existing_issuers": existing or None,
            "existing_keys": existing_keys or None,
        }

    # -- stored certificates ------------------------------------------------------------
    def cert_serials(self) -> list[str]:
        """Serials of every certificate kept, hyphenated as ``LIST certs`` answers them."""
        return [s.replace(":", "-") for s in self.certs]

    def default_chain(self) -> list[str]:
        """The default issuer's chain (PEM, issuer first); empty when there is no default."""
        return self.chain(self.issuers[self.default_issuer]) if self.default_issuer else []

    def read_cert(self, serial: str) -> dict[str, Any] | None:
        """``GET cert/:serial`` (colons or hyphens); None when unknown. ``ca``/``ca_chain`` too.

        ``issuer_id`` is answered for a revoked certificate only, as on the real server.
        """
        if serial in ("ca", "ca_chain"):
            chain = self.default_chain()
            if not chain:
                return None
            data: dict[str, Any] = {
                "certificate": "\n".join(chain) if serial == "ca_chain" else chain[0],
                "revocation_time": 0,
                "revocation_time_rfc3339": "",
            }
            if serial == "ca_chain":
                data["ca_chain"] = data["certificate"]
            return data
        kept = self.certs.get(serial.lower().replace("-", ":"))
        if kept is None:
            return None
        data = {
            "certificate": kept.certificate,
            "revocation_time": kept.revocation_time,
            "revocation_time_rfc3339": "",
        }
        if kept.revocation_time:
            when = datetime.fromtimestamp(kept.revocation_time, UTC)
            data["revocation_time_rfc3339"] = _rfc3339(when)
            data["issuer_id"] = kept.issuer_id
        return data


# -- helpers ---------------------------------------------------------------------------------
def _rfc3339(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _csr_common_name(csr: x509.CertificateSigningRequest) -> str:
    values = csr.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    return str(values[0].value) if values else ""


def _csr_sans(
    csr: x509.CertificateSigningRequest,
) -> tuple[list[str], list[str], list[str], list[str]]:
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


def _template(
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


def _key_usage_names(usage: x509.KeyUsage) -> list[str]:
    names = []
    for name, attribute in certs.KEY_USAGES.items():
        try:
            if getattr(usage, attribute):
                names.append(name)
        except ValueError:  # encipher_only/decipher_only without key_agreement
            continue
    return names


def _path_length(requested: int, parent: x509.Certificate | None) -> int | None:
    """The new CA's path length: -1 is none unless the parent has one, then one less.

    A parent with path length zero cannot sign a CA at all.
    """
    limit = None
    if parent is not None:
        try:
            limit = parent.extensions.get_extension_for_class(
                x509.BasicConstraints
            ).value.path_length
        except x509.ExtensionNotFound:
            limit = None
    if limit == 0:
        raise SecretsError(
            400,
            "signing certificate has a max path length of zero, and cannot issue further CA "
            "certificates",
        )
    if limit is not None and (requested < 0 or requested >= limit):
        return limit - 1
    return None if requested < 0 else requested


def _check_csr_key(role: Mapping[str, Any], public_key: Any) -> None:
    """The CSR's key must be of the role's type and at least its size (``any`` takes all)."""
    kind, bits = certs.key_description(public_key)
    wanted = role["key_type"]
    if wanted == "any":
        if kind == "rsa" and bits < 2048:
            raise SecretsError(
                400, f"RSA keys < 2048 bits are unsafe and not supported: got {bits}"
            )
        return
    if kind != wanted:
        raise SecretsError(400, f"role requires keys of type {wanted}")
    if bits < role["key_bits"]:
        raise SecretsError(
            400,
            f"role requires a minimum of a {role['key_bits']}-bit key, but CSR's key is {bits} bits",
        )


def _read_keys(text: str, field_name: str) -> list[certs.PrivateKey]:
    keys = []
    for block in re.findall(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", text, re.S
    ):
        try:
            key = serialization.load_pem_private_key(block.encode(), password=None)
        except (ValueError, TypeError) as exc:
            raise SecretsError(400, f"{field_name}: error parsing private key: {exc}") from None
        if not isinstance(
            key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey
        ):
            raise SecretsError(400, f"{field_name}: unsupported private key type")
        keys.append(key)
    return keys


# The real server's warning for an issuer made while no URLs are configured (none can be, here).
_AIA_WARNING = (
    "This mount hasn't configured any authority information access (AIA) fields; this may make "
    "it harder for systems to find missing certificates in the chain or to validate revocation "
    "status of certificates. Consider updating /config/urls or the newly generated issuer with "
    "this information."
)


def _ca_warnings(cert: x509.Certificate, made: str) -> list[str]:
    """The warnings of root generation and sign-intermediate: no AIA URLs; path length zero."""
    found = [_AIA_WARNING]
    constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
    if constraints.path_length == 0:
        found.append(
            f"Max path length of the {made} certificate is zero. This certificate cannot be "
            "used to issue intermediate CA certificates."
        )
    return found


def _issue_key(role: Mapping[str, Any], body: Mapping[str, Any]) -> tuple[str, int, list[str]]:
    """The key type and size an issue request gets, and its warnings.

    A role with ``key_type`` ``any`` takes them from the request (required);
    otherwise the role's values hold and request values are ignored with a warning.
    """
    asked = "key_type" in body or "key_bits" in body
    if role["key_type"] != "any":
        warnings = (
            ["parameters key_type and key_bits ignored as role had specific values"]
            if asked
            else []
        )
        return role["key_type"], role["key_bits"], warnings
    if "key_type" not in body:
        raise SecretsError(
            400,
            'role key type "any" not allowed for issuing certificates without providing '
            "key_type and/or key_bits request parameters",
        )
    key_type = fields.string(body, "key_type")
    if key_type == "any":
        raise SecretsError(400, 'key_type: "any" cannot be used to generate a key')
    return key_type, key_bits(key_type, fields.integer(body, "key_bits", 0)), []
