"""Access policies: ACL, RGP and EGP (spec parts 2 and 4.2).

ACL documents are parsed (see :mod:`toolkit._spec.acl`) and decide every request. RGP and
EGP documents are stored and served as the premium edition's API describes,
with their enforcement level and, for EGP, the paths they govern; their rule
language is not evaluated by the sandbox.

The ``root`` policy grants everything and cannot be changed or deleted; the
``default`` policy lets a token look itself up, renew and revoke itself, and
cannot be deleted. A token holding a deleted policy acts as if it were empty.
"""

from __future__ import annotations

import base64
import binascii
import functools
from dataclasses import dataclass, field
from typing import Any

from ..._spec.acl import ACL, PathRule, parse_acl_policy
from ..._spec.hcl import PolicyParseError
from ..._spec.identity_templates import Identity
from .errors import PathNotFound, bad_request

__all__ = [
    "DEFAULT_POLICY",
    "ENFORCEMENT_LEVELS",
    "KINDS",
    "Policy",
    "PolicyStore",
    "policy_text",
]

KINDS = ("acl", "rgp", "egp")
ENFORCEMENT_LEVELS = ("advisory", "soft-mandatory", "hard-mandatory")

# The built-in default policy: what every token may do with itself. Its rules are
# OpenBao 2.7's (held there by tests/real/test_access_truth.py), plus password generation
# (docs/differences.md).
DEFAULT_POLICY = """\
# Look up the token's own properties.
path "auth/token/lookup-self" {
  capabilities = ["read"]
}

# Renew the token's own lease.
path "auth/token/renew-self" {
  capabilities = ["update"]
}

# Revoke the token itself.
path "auth/token/revoke-self" {
  capabilities = ["update"]
}

# Ask which capabilities the token has on a path.
path "sys/capabilities-self" {
  capabilities = ["update"]
}

# Read the token's own entity, by id or by name.
path "identity/entity/id/{{identity.entity.id}}" {
  capabilities = ["read"]
}

path "identity/entity/name/{{identity.entity.name}}" {
  capabilities = ["read"]
}

# The token's resultant ACL, as the web UI reads it.
path "sys/internal/ui/resultant-acl" {
  capabilities = ["read"]
}

# Look up and renew the leases the token was given.
path "sys/leases/lookup" {
  capabilities = ["update"]
}

path "sys/leases/renew" {
  capabilities = ["update"]
}

# Generate passwords from a named password policy.
path "sys/policies/password/+/generate" {
  capabilities = ["read"]
}

# The token's private storage.
path "cubbyhole/*" {
  capabilities = ["create", "read", "update", "delete", "list"]
}

# Wrap a value, and look up or unwrap a wrapping token.
path "sys/wrapping/wrap" {
  capabilities = ["update"]
}

path "sys/wrapping/lookup" {
  capabilities = ["update"]
}

path "sys/wrapping/unwrap" {
  capabilities = ["update"]
}

# Hash data with the general purpose tools.
path "sys/tools/hash" {
  capabilities = ["update"]
}

path "sys/tools/hash/*" {
  capabilities = ["update"]
}

# Ask an OIDC provider's authorization endpoint.
path "identity/oidc/provider/+/authorize" {
  capabilities = ["read", "update"]
}
"""


def policy_text(value: Any, *, field_name: str = "policy") -> str:
    """The document in a ``policy`` parameter, decoding it when sent base64-encoded.

    The value is taken as base64 only when it decodes strictly to UTF-8 text, so
    a plain document is never mangled. Raises 400 naming the field when missing.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        raise bad_request(f"'{field_name}' parameter not supplied or empty")
    if not isinstance(value, str):
        raise bad_request(f"'{field_name}' must be a string")
    compact = "".join(value.split())
    if compact and len(compact) % 4 == 0:
        try:
            decoded = base64.b64decode(compact, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return value
        if decoded.strip() and all(ch.isprintable() or ch in "\t\r\n" for ch in decoded):
            return decoded
    return value


@functools.lru_cache(maxsize=4096)
def _acl_rules(text: str, name: str) -> tuple[PathRule, ...]:
    return tuple(parse_acl_policy(text, name))


@dataclass
class Policy:
    """A stored policy of one kind; an ACL policy's rules are read from its text when asked
    (and remembered), so the stored state holds the text alone."""

    kind: str
    name: str
    text: str
    enforcement_level: str = ""
    paths: list[str] = field(default_factory=list)

    @property
    def rules(self) -> tuple[PathRule, ...]:
        """The path rules of an ACL policy (none for RGP and EGP)."""
        return _acl_rules(self.text, self.name) if self.kind == "acl" and self.text else ()

    def path_map(self) -> list[dict[str, Any]]:
        """An EGP's paths as ``{path, glob}`` pairs, the glob's ``*`` removed."""
        return [
            {"path": p[:-1] if p.endswith("*") else p, "glob": p.endswith("*")} for p in self.paths
        ]


def _enforcement_level(value: Any) -> str:
    if value is None or value == "":
        raise bad_request("missing enforcement_level")
    if value not in ENFORCEMENT_LEVELS:
        allowed = ", ".join(ENFORCEMENT_LEVELS)
        raise bad_request(f"invalid enforcement_level {value!r}: must be one of {allowed}")
    return str(value)


def _egp_paths(value: Any) -> list[str]:
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(p, str) for p in value):
        items = value
    elif value is None:
        items = []
    else:
        raise bad_request("'paths' must be a string or an array of strings")
    paths = [p.strip().lstrip("/") if p.strip() != "*" else "*" for p in items if p.strip()]
    if not paths:
        raise bad_request("'paths' parameter not supplied or empty")
    for path in paths:
        if "*" in path[:-1]:
            raise bad_request(f"invalid path {path!r}: a glob '*' is allowed only at the end")
    return paths


class PolicyStore:
    """Every ACL, RGP and EGP policy, by kind and name."""

    def __init__(self) -> None:
        self._by_kind: dict[str, dict[str, Policy]] = {kind: {} for kind in KINDS}
        self.put("acl", "default", DEFAULT_POLICY)

    @staticmethod
    def _kind(kind: str) -> str:
        if kind not in KINDS:
            raise PathNotFound(f"unknown policy type {kind!r}")
        return kind

    @staticmethod
    def _name(name: str) -> str:
        # Policy names are case-insensitive: the server stores them lowercased.
        clean = name.strip().lower()
        if not clean:
            raise bad_request("policy name must not be empty")
        return clean

    def names(self, kind: str) -> list[str]:
        """The policy names of ``kind``, sorted; ACL includes ``root``."""
        names = set(self._by_kind[self._kind(kind)])
        if kind == "acl":
            names.add("root")
        return sorted(names)

    def get(self, kind: str, name: str) -> Policy:
        """One policy; 404 when there is none by that name."""
        name = self._name(name)
        if kind == "acl" and name == "root":
            return Policy("acl", "root", "")
        policy = self._by_kind[self._kind(kind)].get(name)
        if policy is None:
            raise PathNotFound(f"no {kind} policy named {name!r}")
        return policy

    def put(
        self,
        kind: str,
        name: str,
        policy: Any,
        *,
        enforcement_level: Any = None,
        paths: Any = None,
    ) -> Policy:
        """Create or replace a policy (``POST /sys/policies/{kind}/:name``).

        Everything is validated before anything is stored: the document
        (base64 accepted; ACL documents must parse), and for RGP and EGP the
        enforcement level, and for EGP the paths.
        """
        kind = self._kind(kind)
        name = self._name(name)
        if name == "root":
            raise bad_request("cannot update root policy")
        text = policy_text(policy)
        level = ""
        egp_paths: list[str] = []
        if kind == "acl":
            try:
                _acl_rules(text, name)
            except PolicyParseError as exc:
                raise bad_request(str(exc)) from None
        else:
            level = _enforcement_level(enforcement_level)
        if kind == "egp":
            egp_paths = _egp_paths(paths)
        stored = Policy(kind, name, text, level, egp_paths)
        self._by_kind[kind][name] = stored
        return stored

    def delete(self, kind: str, name: str) -> None:
        """Remove a policy; removing one that does not exist is not an error."""
        kind = self._kind(kind)
        name = self._name(name)
        if kind == "acl" and name in ("root", "default"):
            raise bad_request(f"cannot delete {name} policy")
        self._by_kind[kind].pop(name, None)

    def egp_list_keys(self) -> list[str]:
        """The EGP list's ``keys``: one line per policy, its name then its paths.

        The spec: ``keys`` maps names to paths in a form the command-line list
        understands, that is a list of strings (``vault list`` prints one a line):
        ``"<name>: <path>, <path>"``, each path as written (a glob keeps its ``*``).
        """
        return [f"{name}: {', '.join(p.paths)}" for name, p in sorted(self._by_kind["egp"].items())]

    def egp_name_path_map(self) -> dict[str, list[dict[str, Any]]]:
        """Each EGP's name mapped to the paths it governs (the EGP list's ``name_path_map``)."""
        return {name: p.path_map() for name, p in sorted(self._by_kind["egp"].items())}

    def acl(self, names: list[str], identity: Identity | None = None) -> ACL:
        """The merged ACL of the named policies, templated paths filled from ``identity``
        (left out without one); unknown names count as empty."""
        if "root" in names:
            return ACL(root=True)
        rules: list[PathRule] = []
        for name in names:
            policy = self._by_kind["acl"].get(name)
            if policy is not None:
                rules.extend(policy.rules)
        return ACL(rules, identity=identity)
