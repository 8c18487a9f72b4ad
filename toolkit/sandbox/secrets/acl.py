"""ACL policy documents and the access check (spec parts 1 and 5).

A policy document is written in the server's HCL syntax::

    path "secret/*" {
      capabilities = ["read", "list"]
    }

or the equivalent JSON (``{"path": {"secret/*": {"capabilities": ["read"]}}}``).
A pattern is an exact path, a path ending in ``*`` (a prefix glob), or a path
with ``+`` standing for exactly one segment. When several patterns match a
request the most specific one decides, by the real server's priority rules
(see :func:`priority`); the policies a token holds are merged pattern by
pattern, and a ``deny`` on a pattern overrides everything else on it.
``create`` and ``update`` are separate capabilities; ``sudo`` is needed in
addition on the endpoints marked sudo.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ACL",
    "CAPABILITIES",
    "PathRule",
    "PolicyParseError",
    "blocks",
    "parse_acl_policy",
    "parse_hcl",
    "priority",
]

CAPABILITIES = ("create", "read", "update", "patch", "delete", "list", "sudo", "deny")

# The legacy one-word form ``policy = "write"`` of old policy documents.
_LEGACY_POLICY = {
    "deny": frozenset({"deny"}),
    "read": frozenset({"read", "list"}),
    "write": frozenset({"create", "read", "update", "patch", "delete", "list"}),
    "sudo": frozenset({"create", "read", "update", "patch", "delete", "list", "sudo"}),
}
_PATH_KEYS = {
    "capabilities",
    "policy",
    "allowed_parameters",
    "denied_parameters",
    "required_parameters",
    "min_wrapping_ttl",
    "max_wrapping_ttl",
    "control_group",
}


class PolicyParseError(ValueError):
    """A policy document that cannot be read; the message names the problem."""


def parse_hcl(text: str) -> dict[str, Any]:
    """Parse an HCL (or JSON) document into plain Python values.

    Blocks come out as ``{"block_type": [{"label": {...body...}}, ...]}``; raises
    :class:`PolicyParseError` with the parser's reason on malformed text.
    """
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            parsed = json.loads(stripped)
        except ValueError as exc:
            raise PolicyParseError(f"failed to parse policy: {exc}") from None
        if not isinstance(parsed, dict):
            raise PolicyParseError("failed to parse policy: the JSON document is not an object")
        return parsed
    import hcl2
    from hcl2.utils import SerializationOptions

    options = SerializationOptions(
        with_comments=False,
        explicit_blocks=False,
        strip_string_quotes=True,
        preserve_heredocs=False,
    )
    try:
        return dict(hcl2.loads(text, serialization_options=options))
    except Exception as exc:  # the parser raises several lark error types
        reason = " ".join(str(exc).split())
        raise PolicyParseError(f"failed to parse policy: {reason}") from None


def blocks(document: Mapping[str, Any], kind: str) -> list[tuple[str, dict[str, Any]]]:
    """The ``kind "label" { ... }`` blocks of a parsed document, as (label, body) pairs.

    Accepts both the HCL parser's list-of-blocks form and the JSON form, where
    the labels are the keys of one object.
    """
    raw = document.get(kind)
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else [raw]
    found: list[tuple[str, dict[str, Any]]] = []
    for item in items:
        if not isinstance(item, dict):
            raise PolicyParseError(f"failed to parse policy: {kind!r} must be a labelled block")
        for label, body in item.items():
            bodies = body if isinstance(body, list) else [body]
            for one in bodies:
                if not isinstance(one, dict):
                    raise PolicyParseError(
                        f"failed to parse policy: {kind} {label!r} must be a block"
                    )
                found.append((str(label), one))
    return found


@dataclass(frozen=True)
class PathRule:
    """One ``path`` stanza: a pattern and the capabilities it grants (or denies)."""

    pattern: str
    capabilities: frozenset[str]

    @property
    def is_glob(self) -> bool:
        return self.pattern.endswith("*")

    def matches(self, path: str) -> bool:
        """Whether ``path`` falls under this pattern (``*`` prefix glob, ``+`` one segment)."""
        pattern = self.pattern[:-1] if self.is_glob else self.pattern
        if "+" not in pattern:
            return path.startswith(pattern) if self.is_glob else path == pattern
        want = pattern.split("/")
        have = path.split("/")
        if len(have) < len(want) or (not self.is_glob and len(have) != len(want)):
            return False
        for i, segment in enumerate(want):
            last = i == len(want) - 1
            if segment == "+":
                # A ``+`` matches one whole, non-empty segment.
                if not have[i] and not (last and self.is_glob):
                    return False
                continue
            if last and self.is_glob:
                # The glob may end mid-segment: "secret/+/db-*" matches "secret/a/db-one/x".
                return "/".join(have[i:]).startswith(segment)
            if have[i] != segment:
                return False
        return True


def priority(pattern: str) -> tuple[int, int, int, int, str]:
    """Sort key of a pattern: among patterns matching a path, the highest key decides.

    The real server's rules, in order: a pattern whose first wildcard (``+`` or
    ``*``) comes later wins; a pattern not ending in ``*`` beats one that does;
    fewer ``+`` segments win; the longer pattern wins; then the one sorting
    later wins. An exact pattern has no wildcard and so always wins.
    """
    positions = [i for i in (pattern.find("+"), pattern.find("*")) if i >= 0]
    first_wildcard = min(positions) if positions else len(pattern) + 1
    return (
        first_wildcard,
        0 if pattern.endswith("*") else 1,
        -pattern.split("/").count("+"),
        len(pattern),
        pattern,
    )


def _capabilities(label: str, body: Mapping[str, Any]) -> frozenset[str]:
    unknown = sorted(set(body) - _PATH_KEYS)
    if unknown:
        raise PolicyParseError(
            f'failed to parse policy: path "{label}": invalid key "{unknown[0]}"'
        )
    caps: set[str] = set()
    raw = body.get("capabilities")
    if raw is not None:
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
            raise PolicyParseError(
                f'failed to parse policy: path "{label}": capabilities must be a list of strings'
            )
        for cap in raw:
            if cap.lower() not in CAPABILITIES:
                raise PolicyParseError(
                    f'failed to parse policy: path "{label}": invalid capability "{cap}"'
                )
            caps.add(cap.lower())
    legacy = body.get("policy")
    if legacy is not None:
        if not isinstance(legacy, str) or legacy.lower() not in _LEGACY_POLICY:
            raise PolicyParseError(
                f'failed to parse policy: path "{label}": invalid policy "{legacy}"'
            )
        caps |= _LEGACY_POLICY[legacy.lower()]
    return frozenset(caps)


def parse_acl_policy(text: str) -> list[PathRule]:
    """The path rules of an ACL policy document; :class:`PolicyParseError` when malformed."""
    document = parse_hcl(text)
    unknown = sorted(k for k in document if k not in ("path", "name"))
    if unknown:
        raise PolicyParseError(f'failed to parse policy: invalid key "{unknown[0]}"')
    rules: list[PathRule] = []
    for label, body in blocks(document, "path"):
        pattern = label.lstrip("/")
        if "*" in pattern[:-1]:
            raise PolicyParseError(
                f'failed to parse policy: path "{label}": "*" is allowed only at the end'
            )
        rules.append(PathRule(pattern, _capabilities(label, body)))
    return rules


class ACL:
    """The merged rules of a token's policies, answering "may it do this here?"."""

    def __init__(self, rules: Iterable[PathRule] = (), *, root: bool = False) -> None:
        self.root = root
        merged: dict[str, set[str]] = {}
        for rule in rules:
            merged.setdefault(rule.pattern, set()).update(rule.capabilities)
        # A deny on a pattern removes every other capability granted on it.
        self.rules = {
            pattern: PathRule(pattern, frozenset({"deny"}) if "deny" in caps else frozenset(caps))
            for pattern, caps in merged.items()
        }

    def rule_for(self, path: str, capability: str = "read") -> PathRule | None:
        """The rule that decides ``path``: the highest-priority matching pattern.

        A list request on ``p`` is the request on ``p/`` (the server adds the
        slash), and an exact pattern ``p`` also covers it.
        """
        path = path.lstrip("/")
        candidates = [path]
        if capability == "list":
            base = path.rstrip("/")
            candidates = [base + "/", base]
        matching = [
            rule for rule in self.rules.values() if any(rule.matches(p) for p in candidates)
        ]
        if not matching:
            return None
        return max(matching, key=lambda rule: priority(rule.pattern))

    def capabilities(self, path: str) -> list[str]:
        """The capabilities the token holds on ``path`` (``sys/capabilities`` answer)."""
        if self.root:
            return ["root"]
        rule = self.rule_for(path)
        if rule is None or not rule.capabilities:
            return ["deny"]
        return sorted(rule.capabilities)

    def reaches(self, prefix: str) -> bool:
        """Whether some rule grants anything (not ``deny``) at or under ``prefix``.

        The real server's test of whether a token may learn of a mount
        (``sys/internal/ui/mounts/:path``): a rule below the mount, or a glob
        or ``+`` pattern that can reach into it.
        """
        if self.root:
            return True
        for rule in self.rules.values():
            if not rule.capabilities or "deny" in rule.capabilities:
                continue
            head = rule.pattern.removesuffix("*")
            fixed = head.split("+", 1)[0]
            if fixed.startswith(prefix):
                return True
            if prefix.startswith(fixed) and (rule.is_glob or "+" in head):
                return True
        return False

    def allows(self, path: str, capability: str, *, sudo: bool = False) -> bool:
        """Whether ``capability`` (and ``sudo`` too, when asked) is granted on ``path``."""
        if self.root:
            return True
        rule = self.rule_for(path, capability)
        if rule is None or "deny" in rule.capabilities:
            return False
        if capability not in rule.capabilities:
            return False
        return not sudo or "sudo" in rule.capabilities
