"""Certificate engine roles (spec part 2 "Certificate engine role"): fields and defaults.

A role is written whole (``POST roles/:name`` replaces every field; one not
given takes its default, as on the real server) and read back with every
field. The HTTP side reads a body into typed values (seconds, booleans,
lists); :func:`build_role` fills in the defaults and checks the rules. Its name
policy lives in :mod:`toolkit._spec.certificate_names`, shared with the client's
check before sending.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ....._spec import certificate_names as policy
from ...errors import InvalidRequest
from .requests import OID, SIGNATURE_BITS, parse_not_after
from .x509 import EC_CURVES, EXT_KEY_USAGES, KEY_USAGES, RSA_BITS

__all__ = [
    "DURATIONS",
    "INTEGERS",
    "ROLE_DEFAULTS",
    "Role",
    "build_role",
    "key_bits",
    "role_ext_key_usage",
]


@dataclass(frozen=True)
class Role:
    """A certificate role as stored: every field, with the default the real server gives one
    not written. Lists are tuples here; the HTTP side renders the role as the server reads
    it back (``role_document``)."""

    issuer_ref: str = "default"
    ttl: int = 0
    max_ttl: int = 0
    allow_localhost: bool = True
    allowed_domains: tuple[str, ...] = ()
    allowed_domains_template: bool = False
    allow_bare_domains: bool = False
    allow_subdomains: bool = False
    allow_glob_domains: bool = False
    allow_wildcard_certificates: bool = True
    allow_any_name: bool = False
    enforce_hostnames: bool = True
    allow_ip_sans: bool = True
    allowed_uri_sans: tuple[str, ...] = ()
    allowed_uri_sans_template: bool = False
    allowed_other_sans: tuple[str, ...] = ()
    allowed_serial_numbers: tuple[str, ...] = ()
    allowed_user_ids: tuple[str, ...] = ()
    allow_token_displayname: bool = False
    server_flag: bool = True
    client_flag: bool = True
    code_signing_flag: bool = False
    email_protection_flag: bool = False
    key_type: str = "rsa"
    key_bits: int = 0
    signature_bits: int = 0
    use_pss: bool = False
    key_usage: tuple[str, ...] = ("DigitalSignature", "KeyAgreement", "KeyEncipherment")
    ext_key_usage: tuple[str, ...] = ()
    ext_key_usage_oids: tuple[str, ...] = ()
    use_csr_common_name: bool = True
    use_csr_sans: bool = True
    ou: tuple[str, ...] = ()
    organization: tuple[str, ...] = ()
    country: tuple[str, ...] = ()
    locality: tuple[str, ...] = ()
    province: tuple[str, ...] = ()
    street_address: tuple[str, ...] = ()
    postal_code: tuple[str, ...] = ()
    generate_lease: bool = False
    no_store: bool = False
    require_cn: bool = True
    cn_validations: tuple[str, ...] = ("email", "hostname")
    policy_identifiers: tuple[str, ...] = ()
    basic_constraints_valid_for_non_ca: bool = False
    not_before_duration: int = 30
    not_before: str = ""
    not_after: str = ""

    def values(self) -> dict[str, Any]:
        """Every field by name: what the name policy (:mod:`toolkit._spec.certificate_names`)
        reads a role as."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


# Every role field and its default, as the real server reads them back.
ROLE_DEFAULTS: dict[str, Any] = Role().values()
_GENERATE_LEASE_WARNING = (
    "it is encouraged to disable generate_lease and rely on PKI's native capabilities when "
    "possible; this option can cause instance-wide issues with large numbers of issued "
    "certificates"
)
DURATIONS = ("ttl", "max_ttl", "not_before_duration")  # seconds
INTEGERS = ("key_bits", "signature_bits")
KEY_TYPES = ("rsa", "ec", "ed25519", "any")


def build_role(values: Mapping[str, Any]) -> tuple[Role, list[str]]:
    """The role ``values`` (typed, as the HTTP side read them) make, defaults filled in, and warnings.

    400 naming a bad field, with the real server's wording where it has one.
    """
    unknown = [name for name in values if name not in ROLE_DEFAULTS]
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: not a field of a certificate role")
    role: dict[str, Any] = {}
    for name, default in ROLE_DEFAULTS.items():
        value = values.get(name, default)
        role[name] = list(value) if isinstance(default, tuple) else value
    for name, default in ROLE_DEFAULTS.items():
        if isinstance(default, str) and not role[name]:
            role[name] = default  # an empty text takes the default, as on the real server
    role["key_bits"] = key_bits(role["key_type"], role["key_bits"])
    if role["signature_bits"] not in SIGNATURE_BITS:
        raise InvalidRequest(
            f"signature_bits: must be 0, 256, 384 or 512, got {role['signature_bits']}"
        )
    if role["key_type"] == "rsa" and role["signature_bits"] == 0:
        role["signature_bits"] = 256
    if role["max_ttl"] and role["ttl"] > role["max_ttl"]:
        raise InvalidRequest('"ttl" value must be less than "max_ttl" value')
    known = {name.lower() for name in KEY_USAGES}
    bad = [u for u in role["key_usage"] if u.lower() not in known]
    if bad:
        raise InvalidRequest(f"key_usage: unknown key usage {bad[0]!r}")
    known = {name.lower() for name in EXT_KEY_USAGES}
    bad = [u for u in role["ext_key_usage"] if u.lower() not in known]
    if bad:
        raise InvalidRequest(f"ext_key_usage: unknown extended key usage {bad[0]!r}")
    bad = [o for o in role["ext_key_usage_oids"] if not OID.match(o)]
    if bad:
        raise InvalidRequest(
            f"{bad[0]!r} could not be parsed as a valid oid for an extended key usage"
        )
    role["cn_validations"] = _cn_validations(role["cn_validations"])
    if role["allowed_other_sans"] != ["*"]:
        for pattern in role["allowed_other_sans"]:
            try:
                policy.parse_other_san(pattern)
            except ValueError as exc:
                raise InvalidRequest(f"error parsing allowed_other_sans: {exc}") from None
    for name in ("not_before", "not_after"):
        if role[name]:
            parse_not_after(role[name], name)
    warnings = []
    if role["no_store"]:
        if role["generate_lease"]:
            warnings.append(
                "mutually exclusive values no_store=true and generate_lease=true were both "
                "specified; no_store=true takes priority"
            )
        role["generate_lease"] = False
    elif role["generate_lease"]:
        warnings.append(_GENERATE_LEASE_WARNING)
    kept: dict[str, Any] = {n: tuple(v) if isinstance(v, list) else v for n, v in role.items()}
    return Role(**kept), warnings


def _cn_validations(values: list[str]) -> list[str]:
    """``email`` and/or ``hostname``, or ``disabled`` alone (none: both); lower case."""
    if not values:
        return ["email", "hostname"]
    lowered = [v.lower() for v in values]
    for value in lowered:
        if value not in ("email", "hostname", "disabled"):
            raise InvalidRequest(f"cn_validations value incorrect: unknown type: `{value}`")
        if lowered.count(value) > 1:
            raise InvalidRequest(
                f"cn_validations value incorrect: `{value}` specified multiple times"
            )
    if "disabled" in lowered and len(lowered) > 1:
        raise InvalidRequest(
            "cn_validations value incorrect: cannot specify `disabled` along with `email` or "
            "`hostname`",
        )
    return lowered


def key_bits(key_type: str, bits: int) -> int:
    """The key size a ``key_type`` gets for ``bits`` (0: the type's default); 400 when invalid."""
    if key_type not in KEY_TYPES:
        raise InvalidRequest(f"key_type: unknown key type {key_type}")
    if key_type == "rsa":
        bits = bits or 2048
        if bits < 2048:
            raise InvalidRequest(
                f"key_bits: RSA keys < 2048 bits are unsafe and not supported: got {bits}"
            )
        if bits not in RSA_BITS:
            raise InvalidRequest(f"key_bits: unsupported bit length for RSA key: {bits}")
    elif key_type == "ec":
        bits = bits or 256
        if bits not in EC_CURVES:
            raise InvalidRequest(f"key_bits: unsupported bit length for EC key: {bits}")
    else:
        bits = 0
    return bits


def role_ext_key_usage(role: Role) -> list[Any]:
    """The extended key usages a role's certificates carry: its flags, names and OIDs."""
    from cryptography import x509

    found = []
    for flag, name in (
        (role.server_flag, "ServerAuth"),
        (role.client_flag, "ClientAuth"),
        (role.code_signing_flag, "CodeSigning"),
        (role.email_protection_flag, "EmailProtection"),
    ):
        if flag:
            found.append(EXT_KEY_USAGES[name])
    by_name = {name.lower(): oid for name, oid in EXT_KEY_USAGES.items()}
    found += [by_name[n.lower()] for n in role.ext_key_usage]
    found += [x509.ObjectIdentifier(o) for o in role.ext_key_usage_oids]
    return list(dict.fromkeys(found))
