"""A certificate role's name policy (spec 4.10 and part 7), in one place.

The sandbox's certificate engine applies it to deny a request, and the
client applies the same rules to check a request against the role it read
before sending it (the certificate request form). A role is the mapping
``GET <mount>/roles/:name`` answers; :func:`refusal` gives the server's
message for the first name the role refuses, or ``""``.

Rules (as the real server's): a name with ``@`` is an e-mail address whose
domain is checked; a wildcard sits in the leftmost label only and needs
``allow_wildcard_certificates``; ``allow_any_name`` takes every well-formed
name; ``enforce_hostnames`` requires a valid host name; ``allow_localhost``
takes ``localhost``/``localdomain``; ``allowed_domains`` take the bare domain
with ``allow_bare_domains``, subdomains with ``allow_subdomains`` and glob
patterns with ``allow_glob_domains``. URIs, user ids and subject serial
numbers match the role's glob lists; other SANs ``<oid>;UTF8:<value>``
match ``allowed_other_sans`` by OID and value glob (``*`` alone allows all).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "CN_REQUIRED",
    "ISSUE_NAME_PARAMETERS",
    "OTHER_SAN_TYPES",
    "ROLE_FLAG_DEFAULTS",
    "ROLE_NAME_FIELDS",
    "add_common_name",
    "check_names",
    "matches_any",
    "parse_other_san",
    "refusal",
    "split_alt_names",
]

CN_REQUIRED = (
    'the common_name field is required, or must be provided in a CSR with "use_csr_common_name" '
    'set to true, unless "require_cn" is set to false'
)
# The issue parameters the role's policy applies to (spec 4.10, parameters of issue).
ISSUE_NAME_PARAMETERS: tuple[str, ...] = (
    "common_name",
    "alt_names",
    "ip_sans",
    "uri_sans",
    "other_sans",
    "user_ids",
)
# The role's switches the policy reads, and what an absent one means (the real
# server's defaults; the spec shows that IP SANs are allowed by default).
ROLE_FLAG_DEFAULTS: dict[str, bool] = {
    "allow_any_name": False,
    "allow_bare_domains": False,
    "allow_glob_domains": False,
    "allow_ip_sans": True,
    "allow_localhost": True,
    "allow_subdomains": False,
    "allow_wildcard_certificates": True,
    "enforce_hostnames": True,
    "require_cn": True,
}
# Every role field the policy reads: the switches and the lists of allowed names.
ROLE_NAME_FIELDS: tuple[str, ...] = (
    *ROLE_FLAG_DEFAULTS,
    "allowed_domains",
    "allowed_other_sans",
    "allowed_serial_numbers",
    "allowed_uri_sans",
    "allowed_user_ids",
    "cn_validations",
)
# The value types an other SAN may carry (``<oid>;<type>:<value>``), as spelled on the wire.
OTHER_SAN_TYPES: tuple[str, ...] = ("UTF8",)
_HOSTNAME = re.compile(
    r"^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]*[a-zA-Z0-9])\.)*"
    r"([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9\-]*[A-Za-z0-9])\.?$"
)
_OID = re.compile(r"^[0-9]+(\.[0-9]+)+$")


def _flag(role: Mapping[str, Any], name: str) -> bool:
    return bool(role.get(name, ROLE_FLAG_DEFAULTS[name]))


def _glob(pattern: str, value: str) -> bool:
    # The server's globs know only '*'.
    escaped = re.escape(pattern).replace(r"\*", ".*")
    return re.fullmatch(escaped, value, flags=re.DOTALL) is not None


def matches_any(patterns: Sequence[str], value: str) -> bool:
    """Whether ``value`` matches one of ``patterns`` (globs with ``*``)."""
    return any(_glob(pattern, value) for pattern in patterns)


def _hostname_ok(name: str) -> bool:
    if not name or len(name) > 253:
        return False
    try:
        ascii_name = name.encode("idna").decode()
    except UnicodeError:
        return False
    return bool(_HOSTNAME.match(ascii_name))


def split_alt_names(alt_names: Sequence[str]) -> tuple[list[str], list[str]]:
    """``alt_names`` as (DNS names, e-mail addresses): a name with ``@`` is an address."""
    return [n for n in alt_names if "@" not in n], [n for n in alt_names if "@" in n]


def add_common_name(common_name: str, dns_names: list[str], emails: list[str]) -> None:
    """Put the common name first among the e-mail or DNS SANs (a DNS SAN only when a host name)."""
    if "@" in common_name:
        if common_name not in emails:
            emails.insert(0, common_name)
    elif _hostname_ok(common_name.replace("*", "x")) and common_name not in dns_names:
        dns_names.insert(0, common_name)


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
        # One leftmost label may hold the wildcard: '*.example.com', 'web*.example.com'.
        first, _, rest = sanitized.partition(".")
        if "*" in rest or first.count("*") > 1 or not rest:
            return False
        if not _flag(role, "allow_wildcard_certificates") or is_email:
            return False
        sanitized = rest
    if _flag(role, "allow_any_name"):
        return True
    if _flag(role, "enforce_hostnames") and not _hostname_ok(sanitized):
        return False
    if _flag(role, "allow_localhost"):
        if name in ("localhost", "localdomain") or (
            is_email and email_domain in ("localhost", "localdomain")
        ):
            return True
        if _flag(role, "allow_subdomains"):
            for local in ("localhost", "localdomain"):
                if sanitized.endswith("." + local) or (is_wildcard and sanitized == local):
                    return True
    for domain in role.get("allowed_domains") or []:
        if not domain:
            continue
        lowered = domain.lower()
        if _flag(role, "allow_bare_domains") and (
            name.lower() == lowered or (is_email and email_domain.lower() == lowered)
        ):
            return True
        if _flag(role, "allow_subdomains") and (
            sanitized.lower().endswith("." + lowered)
            or (is_wildcard and sanitized.lower() == lowered)
        ):
            return True
        if _flag(role, "allow_glob_domains") and "*" in domain and _glob(domain, name):
            return True
    return False


def check_names(role: Mapping[str, Any], names: Sequence[str]) -> str:
    """The first of ``names`` (host names or e-mail addresses) the role refuses; "" when none."""
    for name in names:
        if not _name_allowed(role, name):
            return name
    return ""


def _common_name_allowed(role: Mapping[str, Any], name: str) -> bool:
    validations = list(role.get("cn_validations") or [])
    if validations == ["disabled"]:
        return True
    if check_names(role, [name]):
        return False
    if not validations:
        return True
    return ("email" if "@" in name else "hostname") in validations


def parse_other_san(text: str) -> tuple[str, str]:
    """``<oid>;UTF8:<value>`` as ``(oid, value)``; ValueError saying what is malformed."""
    oid, sep, rest = text.partition(";")
    if not sep:
        raise ValueError(f"expected a semicolon in other SAN {text!r}")
    kind, sep, value = rest.partition(":")
    if not sep:
        raise ValueError(f"expected a colon in other SAN {text!r}")
    # "utf-8" is the spelling the real server also takes for UTF8.
    if kind.upper().replace("-", "") not in OTHER_SAN_TYPES:
        raise ValueError(
            f"only utf8 other SANs are supported; found non-supported type in other SAN {text!r}"
        )
    if not _OID.match(oid):
        raise ValueError(f"{oid!r} is not an OID in other SAN {text!r}")
    return oid, value


def _other_sans_refusal(role: Mapping[str, Any], requested: Sequence[tuple[str, str]]) -> str:
    allowed = list(role.get("allowed_other_sans") or [])
    if allowed == ["*"] or not requested:
        return ""
    patterns: dict[str, list[str]] = {}
    for pattern in allowed:
        if pattern != "*":
            oid, value = parse_other_san(pattern)
            patterns.setdefault(oid, []).append(value)
    for oid, value in requested:
        if oid not in patterns:
            return f"other SAN OID {oid} not allowed by this role"
        if not matches_any(patterns[oid], value):
            return f"other SAN {value} not allowed for OID {oid} by this role"
    return ""


def refusal(
    role: Mapping[str, Any],
    *,
    common_name: str = "",
    dns_names: Sequence[str] = (),
    emails: Sequence[str] = (),
    ip_sans: Sequence[str] = (),
    uri_sans: Sequence[str] = (),
    other_sans: Sequence[tuple[str, str]] = (),
    user_ids: Sequence[str] = (),
    subject_serial: str = "",
) -> str:
    """The server's message for the first name ``role`` refuses in one request; "" when none.

    ``dns_names`` and ``emails`` are the SANs as they will be sent, the common
    name included (see :func:`add_common_name`). One refused name denies the
    whole request.
    """
    if not common_name and _flag(role, "require_cn"):
        return CN_REQUIRED
    if common_name and not _common_name_allowed(role, common_name):
        return f"common name {common_name} not allowed by this role"
    bad = check_names(role, dns_names)
    if bad:
        return f"subject alternate name {bad} not allowed by this role"
    bad = check_names(role, emails)
    if bad:
        return f"email address {bad} not allowed by this role"
    if ip_sans and not _flag(role, "allow_ip_sans"):
        return (
            "IP Subject Alternative Names are not allowed in this role, but was provided "
            + ",".join(ip_sans)
        )
    for uri in uri_sans:
        if not matches_any(role.get("allowed_uri_sans") or [], uri):
            return f"URI Subject Alternative Name {uri} not allowed by this role"
    refused = _other_sans_refusal(role, other_sans)
    if refused:
        return refused
    for user_id in user_ids:
        if not matches_any(role.get("allowed_user_ids") or [], user_id):
            return f"user_id {user_id} not allowed by this role"
    serials = role.get("allowed_serial_numbers") or []
    if subject_serial and serials and not matches_any(serials, subject_serial):
        return f"serial_number {subject_serial} not allowed by this role"
    return ""
