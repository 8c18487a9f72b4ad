"""Certificate engine roles (spec part 2 "Certificate engine role"): fields, defaults, name policy.

A role is written whole (``POST roles/:name`` replaces every field; one not
given takes its default, as on the real server) and read back with every
field. :func:`check_names` applies the role's policy to the names of one
request and answers the first name it refuses, so the caller can deny the
whole request naming it (spec part 7).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import fields
from ..errors import SecretsError
from .requests import OID, SIGNATURE_BITS, parse_not_after, parse_other_san
from .x509 import EC_CURVES, EXT_KEY_USAGES, KEY_USAGES, RSA_BITS

__all__ = [
    "ROLE_DEFAULTS",
    "check_names",
    "check_other_sans",
    "matches_any",
    "parse_role",
    "role_ext_key_usage",
]

# Every role field and its default, as the real server reads them back.
ROLE_DEFAULTS: dict[str, Any] = {
    "issuer_ref": "default",
    "ttl": 0,
    "max_ttl": 0,
    "allow_localhost": True,
    "allowed_domains": [],
    "allowed_domains_template": False,
    "allow_bare_domains": False,
    "allow_subdomains": False,
    "allow_glob_domains": False,
    "allow_wildcard_certificates": True,
    "allow_any_name": False,
    "enforce_hostnames": True,
    "allow_ip_sans": True,
    "allowed_uri_sans": [],
    "allowed_uri_sans_template": False,
    "allowed_other_sans": [],
    "allowed_serial_numbers": [],
    "allowed_user_ids": [],
    "allow_token_displayname": False,
    "server_flag": True,
    "client_flag": True,
    "code_signing_flag": False,
    "email_protection_flag": False,
    "key_type": "rsa",
    "key_bits": 0,
    "signature_bits": 0,
    "use_pss": False,
    "key_usage": ["DigitalSignature", "KeyAgreement", "KeyEncipherment"],
    "ext_key_usage": [],
    "ext_key_usage_oids": [],
    "use_csr_common_name": True,
    "use_csr_sans": True,
    "ou": [],
    "organization": [],
    "country": [],
    "locality": [],
    "province": [],
    "street_address": [],
    "postal_code": [],
    "generate_lease": False,
    "no_store": False,
    "require_cn": True,
    "cn_validations": ["email", "hostname"],
    "policy_identifiers": [],
    "basic_constraints_valid_for_non_ca": False,
    "not_before_duration": 30,
    "not_after": "",
}
_DURATIONS = ("ttl", "max_ttl", "not_before_duration")
_INTEGERS = ("key_bits", "signature_bits")
KEY_TYPES = ("rsa", "ec", "ed25519", "any")
_HOSTNAME = re.compile(
    r"^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9])\.)*"
    r"([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9])\.?$"
)


def parse_role(body: Mapping[str, Any]) -> dict[str, Any]:
    """The role written by ``body`` with every default filled in; 400 naming a bad field."""
    role: dict[str, Any] = {}
    for name, default in ROLE_DEFAULTS.items():
        if name in _DURATIONS:
            role[name] = fields.duration(body, name, default)
        elif name in _INTEGERS:
            role[name] = fields.integer(body, name, default)
        elif isinstance(default, bool):
            role[name] = fields.boolean(body, name, default)
        elif isinstance(default, list):
            role[name] = fields.string_list(body, name) if name in body else list(default)
        else:
            role[name] = fields.string(body, name, default) or default
    role["key_bits"] = key_bits(role["key_type"], role["key_bits"])
    if role["signature_bits"] not in SIGNATURE_BITS:
        raise SecretsError(
            400, f"signature_bits: must be 0, 256, 384 or 512, got {role['signature_bits']}"
        )
    if role["key_type"] == "rsa" and role["signature_bits"] == 0:
        role["signature_bits"] = 256
    if role["max_ttl"] and role["ttl"] > role["max_ttl"]:
        raise SecretsError(400, '"ttl" value must be less than "max_ttl" value')
    bad = [u for u in role["key_usage"] if u not in KEY_USAGES]
    if bad:
        raise SecretsError(400, f"key_usage: unknown key usage {bad[0]!r}")
    bad = [u for u in role["ext_key_usage"] if u not in EXT_KEY_USAGES]
    if bad:
        raise SecretsError(400, f"ext_key_usage: unknown extended key usage {bad[0]!r}")
    bad = [o for o in role["ext_key_usage_oids"] if not OID.match(o)]
    if bad:
        raise SecretsError(400, f"ext_key_usage_oids: {bad[0]!r} is not an OID")
    bad = [v for v in role["cn_validations"] if v not in ("email", "hostname", "disabled")]
    if bad or ("disabled" in role["cn_validations"] and len(role["cn_validations"]) > 1):
        raise SecretsError(400, "cn_validations: 'email' and/or 'hostname', or 'disabled' alone")
    for pattern in role["allowed_other_sans"]:
        if pattern != "*":
            parse_other_san(pattern, "allowed_other_sans")
    if role["not_after"]:
        parse_not_after(role["not_after"], "not_after")
    if role["ttl"] and role["not_after"]:
        raise SecretsError(400, "ttl and not_after are exclusive: give one")
    return role


def key_bits(key_type: str, bits: int) -> int:
    """The key size a ``key_type`` gets for ``bits`` (0: the type's default); 400 when invalid."""
    if key_type not in KEY_TYPES:
        raise SecretsError(400, f"key_type: unknown key type {key_type}")
    if key_type == "rsa":
        bits = bits or 2048
        if bits < 2048:
            raise SecretsError(
                400, f"key_bits: RSA keys < 2048 bits are unsafe and not supported: got {bits}"
            )
        if bits not in RSA_BITS:
            raise SecretsError(400, f"key_bits: unsupported bit length for RSA key: {bits}")
    elif key_type == "ec":
        bits = bits or 256
        if bits not in EC_CURVES:
            raise SecretsError(400, f"key_bits: unsupported bit length for EC key: {bits}")
    else:
        bits = 0
    return bits


def role_ext_key_usage(role: Mapping[str, Any]) -> list[Any]:
    """The extended key usages a role's certificates carry: its flags, names and OIDs."""
    from cryptography import x509

    found = []
    for flag, name in (
        ("server_flag", "ServerAuth"),
        ("client_flag", "ClientAuth"),
        ("code_signing_flag", "CodeSigning"),
        ("email_protection_flag", "EmailProtection"),
    ):
        if role.get(flag):
            found.append(EXT_KEY_USAGES[name])
    found += [EXT_KEY_USAGES[n] for n in role.get("ext_key_usage", [])]
    found += [x509.ObjectIdentifier(o) for o in role.get("ext_key_usage_oids", [])]
    return list(dict.fromkeys(found))


# -- name policy ------------------------------------------------------------------------
def _glob(pattern: str, value: str) -> bool:
    # The server's globs know only '*'; escape the other fnmatch characters.
    escaped = re.escape(pattern).replace(r"\*", ".*")
    return re.fullmatch(escaped, value, flags=re.DOTALL) is not None


def _hostname_ok(name: str) -> bool:
    if not name or len(name) > 253:
        return False
    try:
        ascii_name = name.encode("idna").decode()
    except UnicodeError:
        return False
    return bool(_HOSTNAME.match(ascii_name))


def check_names(role: Mapping[str, Any], names: list[str]) -> str:
    """The first of ``names`` (host names or e-mail addresses) the role refuses; "" when none."""
    for name in names:
        if not _name_allowed(role, name):
            return name
    return ""


def _name_allowed(role: Mapping[str, Any], name: str) -> bool:
    sanitized = email_domain = name
    is_email = "@" in name
    if is_email:
        parts = name.split("@")
        if len(parts) != 2:
            return False
        sanitized = email_domain = parts[1]
    is_wildcard = "*" in sanitized
    if is_wildcard:
        # Only one leftmost label may hold the wildcard: '*.example.com', 'web*.example.com'.
        first, _, rest = sanitized.partition(".")
        if "*" in rest or first.count("*") > 1 or not rest:
            return False
        if not role["allow_wildcard_certificates"] or is_email:
            return False
        sanitized = rest
    if role["allow_any_name"]:
        return True
    if role["enforce_hostnames"] and not _hostname_ok(sanitized):
        return False
    if role["allow_localhost"]:
        if name in ("localhost", "localdomain") or (
            is_email and email_domain in ("localhost", "localdomain")
        ):
            return True
        if role["allow_subdomains"]:
            for local in ("localhost", "localdomain"):
                if sanitized.endswith("." + local) or (is_wildcard and sanitized == local):
                    return True
    for domain in role["allowed_domains"]:
        if not domain:
            continue
        if role["allow_bare_domains"] and (
            name.lower() == domain.lower() or (is_email and email_domain.lower() == domain.lower())
        ):
            return True
        if role["allow_subdomains"] and (
            sanitized.lower().endswith("." + domain.lower())
            or (is_wildcard and sanitized.lower() == domain.lower())
        ):
            return True
        if role["allow_glob_domains"] and "*" in domain and _glob(domain, name):
            return True
    return False


def check_common_name(role: Mapping[str, Any], name: str) -> bool:
    """Whether the role allows ``name`` as the common name (its ``cn_validations``)."""
    validations = role["cn_validations"]
    if validations == ["disabled"]:
        return True
    if check_names(role, [name]):
        return False
    if "@" in name:
        return "email" in validations or not validations
    return "hostname" in validations or not validations


def matches_any(patterns: list[str], value: str) -> bool:
    """Whether ``value`` matches one of ``patterns`` (globs with ``*``): URIs, user ids, serials."""
    return any(_glob(pattern, value) for pattern in patterns)


def check_other_sans(role: Mapping[str, Any], requested: list[tuple[str, str]]) -> str:
    """The refusal message for the first other SAN the role refuses; "" when all pass."""
    allowed = role["allowed_other_sans"]
    if allowed == ["*"]:
        return ""
    patterns: dict[str, list[str]] = {}
    for pattern in allowed:
        if pattern == "*":
            continue
        oid, value = parse_other_san(pattern, "allowed_other_sans")
        patterns.setdefault(oid, []).append(value)
    for oid, value in requested:
        if oid not in patterns:
            return f"other SAN OID {oid} not allowed by this role"
        if not any(_glob(p, value) for p in patterns[oid]):
            return f"other SAN {value} not allowed for OID {oid} by this role"
    return ""
