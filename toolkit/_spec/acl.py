"""ACL policies and the access check (secrets spec parts 1 and 5): the one evaluator.

The sandbox enforces with it and the client simulates with it
(``bao.access``), so the test double and the analysis cannot disagree
unseen; ``tests/real/test_access_evaluator.py`` holds it to OpenBao's own
``sys/capabilities`` on generated policies.

A policy document is written in the server's HCL syntax::

    path "secret/*" {
      capabilities = ["read", "list"]
    }

or the equivalent JSON (``{"path": {"secret/*": {"capabilities": ["read"]}}}``),
read by the one HCL reader (:mod:`toolkit._spec.hcl`). A pattern is an exact path, a path ending in ``*``
(a prefix glob), or a path with ``+`` standing for exactly one segment; it
may hold identity templates (``secret/{{identity.entity.name}}/*``, see
:mod:`toolkit._spec.identity_templates`). The rules, as the real server applies them:

- when several patterns match a path, the most specific one decides
  (:func:`priority`); the others do not count at all;
- the policies a token holds are merged pattern by pattern: on one pattern the
  capabilities of every policy add up;
- a ``deny`` on a pattern removes everything else granted on it;
- ``sudo`` is one more capability, needed on the endpoints marked sudo;
- a templated pattern is filled in from the token's entity and its groups; a
  pattern that cannot be filled (no entity, a metadata key it lacks) is left
  out, as if not written.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .hcl import PolicyParseError, blocks, parse_hcl
from .identity_templates import (
    BLOCKED_SUBSTITUTIONS,
    ForbiddenSubstitution,
    Identity,
    UnknownIdentity,
    could_match,
    is_templated,
    render,
    without_templates,
)

__all__ = [
    "ACL",
    "CAPABILITIES",
    "CAPABILITIES_CHECK",
    "Decision",
    "PathRule",
    "decide",
    "merged_patterns",
    "parse_acl_policy",
    "priority",
    "request_paths",
    "rules_of_document",
    "stages",
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


# -- rules -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PathRule:
    """One ``path`` stanza: a pattern, what it grants (or denies), and the policy it is in."""

    pattern: str
    capabilities: frozenset[str]
    policy: str = field(default="", compare=False)

    @property
    def is_glob(self) -> bool:
        return self.pattern.endswith("*")

    @property
    def is_exact(self) -> bool:
        return not self.is_glob and "+" not in self.pattern

    @property
    def templated(self) -> bool:
        return is_templated(self.pattern)

    @property
    def fixed_prefix(self) -> str:
        """The pattern up to its first wildcard: every path it matches starts with this."""
        cut = [i for i in (self.pattern.find("+"), self.pattern.find("*")) if i >= 0]
        return self.pattern[: min(cut)] if cut else self.pattern

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
                # A ``+`` matches one whole segment, an empty one too (``a//c`` for ``a/+/c``).
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


def parse_acl_policy(text: str, name: str = "") -> list[PathRule]:
    """The path rules of an ACL policy document (each noting ``name``, its policy);
    :class:`PolicyParseError` when malformed. Equal texts are parsed once (servers hold
    many copies of a few templates): the rules are remembered by text."""
    return [PathRule(pattern, caps, name) for pattern, caps in _rules_of_text(text)]


@functools.lru_cache(maxsize=16384)
def _rules_of_text(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple((r.pattern, r.capabilities) for r in rules_of_document(parse_hcl(text)))


def rules_of_document(document: Mapping[str, Any], name: str = "") -> list[PathRule]:
    """The path rules of a parsed policy document (see :func:`parse_acl_policy`)."""
    unknown = sorted(k for k in document if k not in ("path", "name"))
    if unknown:
        raise PolicyParseError(f'failed to parse policy: invalid key "{unknown[0]}"')
    rules: list[PathRule] = []
    for label, body in blocks(document, "path"):
        pattern = label.lstrip("/")
        _check_template(label)
        if "+*" in pattern:
            raise PolicyParseError(
                f'failed to parse policy: path "{label}": invalid use of wildcards '
                "('+*' is forbidden)"
            )
        if "*" in without_templates(pattern)[:-1]:
            raise PolicyParseError(
                f'failed to parse policy: path "{label}": "*" is allowed only at the end'
            )
        rules.append(PathRule(pattern, _capabilities(label, body), name))
    return rules


def _check_template(label: str) -> None:
    """Refuse unbalanced ``{{`` / ``}}``, as the server does when a policy is written."""
    rest = without_templates(label)
    if "{{" in rest or "}}" in rest:
        raise PolicyParseError(
            f'failed to parse policy: path "{label}": unbalanced templating characters'
        )


# -- the decision ------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """Which pattern decides a path for a set of policies, and what it grants.

    ``pattern`` is None when nothing matched (everything denied); ``policies``
    are those holding the deciding pattern (their capabilities were merged);
    ``losers`` the (policy, pattern) pairs that matched too but lost on
    priority; ``depends_on_identity`` is true when a templated pattern of an
    unknown identity could match the path, so the answer may differ per login.
    """

    path: str
    pattern: str | None
    capabilities: frozenset[str]
    policies: tuple[str, ...] = ()
    losers: tuple[tuple[str, str], ...] = ()
    depends_on_identity: bool = False
    maybe: tuple[tuple[str, str], ...] = ()

    def allows(self, capability: str) -> bool:
        return capability in self.capabilities and "deny" not in self.capabilities


# The capability ``sys/capabilities`` asks with: the server evaluates a path as a LIST
# without adding the slash, so an exact pattern ``p`` also answers for ``p/``.
CAPABILITIES_CHECK = "capabilities"


def request_paths(path: str, capability: str) -> tuple[str, str]:
    """The path a request for ``capability`` is checked on, and the one an exact pattern
    may also match: a LIST of ``p`` is a request on ``p/``, which falls back to an
    exact pattern ``p`` (one slash trimmed); so does a ``sys/capabilities`` question."""
    if capability == "list" and not path.endswith("/"):
        path += "/"
    if capability in ("list", CAPABILITIES_CHECK) and path.endswith("/"):
        return path, path[:-1]
    return path, path


def stages(path: str, capability: str) -> list[tuple[bool, str]]:
    """The server's order of looking, as (exact patterns only?, path) pairs: the first
    stage where some pattern matches decides, by :func:`priority` among its matches.

    Exact patterns on the path; for a LIST (and ``sys/capabilities``) exact patterns on
    the path with one trailing slash trimmed; wildcard patterns on the path; then, for
    a LIST, wildcard patterns on the trimmed path (OpenBao 2.7: ``+`` answers for
    ``a/`` only when nothing matches ``a/`` itself).
    """
    request, trimmed = request_paths(path.lstrip("/"), capability)
    if trimmed == request:
        return [(True, request), (False, request)]
    return [(True, request), (True, trimmed), (False, request), (False, trimmed)]


def _stage_matches(rule: PathRule, exact: bool, path: str) -> bool:
    if rule.is_exact:
        return exact and rule.pattern == path
    return not exact and rule.matches(path)


def decide(rules: Iterable[PathRule], path: str, capability: str = "read") -> Decision:
    """The :class:`Decision` of ``rules`` (already rendered) on ``path``."""
    path = path.lstrip("/")
    rules = list(rules)
    by_pattern: dict[str, list[PathRule]] = {}
    winner: str | None = None
    seen: set[int] = set()
    for exact, candidate in stages(path, capability):
        hits = [r for r in rules if _stage_matches(r, exact, candidate)]
        for rule in hits:
            if id(rule) not in seen:
                seen.add(id(rule))
                by_pattern.setdefault(rule.pattern, []).append(rule)
        if hits and winner is None:
            winner = max((r.pattern for r in hits), key=priority)
    if winner is None:
        return Decision(path, None, frozenset())
    caps: set[str] = set()
    for rule in by_pattern[winner]:
        caps |= rule.capabilities
    losers = tuple(
        (rule.policy, pattern)
        for pattern in sorted(by_pattern, key=priority, reverse=True)
        if pattern != winner
        for rule in by_pattern[pattern]
    )
    return Decision(
        path,
        winner,
        frozenset({"deny"}) if "deny" in caps else frozenset(caps),
        tuple(dict.fromkeys(r.policy for r in by_pattern[winner])),
        losers,
    )


class ACL:
    """The merged rules of a token's policies, answering "may it do this here?".

    ``identity`` fills the templated patterns: an :class:`~toolkit._spec.identity_templates.Identity` (a token
    with an entity), None (no entity: templated patterns are left out, as the
    server does), or :data:`~toolkit._spec.identity_templates.UNKNOWN_IDENTITY` (a role or user whose logins may
    be any entity: decisions a templated pattern could change say so).
    """

    def __init__(
        self,
        rules: Iterable[PathRule] = (),
        *,
        root: bool = False,
        identity: Identity | UnknownIdentity | None = None,
        blocked: Mapping[str, str] | None = None,
    ) -> None:
        self.root = root
        self.identity = identity
        kept: list[PathRule] = []
        self.unresolved: list[PathRule] = []
        # (policy, filled-in pattern) -> the templated pattern it was written as.
        self.written_as: dict[tuple[str, str], str] = {}
        # Why the server refuses this token's whole ACL (it then holds nothing), or "";
        # and the policy and substitution that did it (the sandbox answers with them).
        self.refused = ""
        self.refusal: tuple[str, ForbiddenSubstitution] | None = None
        blocked = blocked or {}
        for rule in rules:
            if not rule.templated:
                kept.append(rule)
            elif isinstance(identity, UnknownIdentity):
                self.unresolved.append(rule)
            else:
                try:
                    rendered = render(
                        rule.pattern, identity, blocked.get(rule.policy, BLOCKED_SUBSTITUTIONS)
                    )
                except ForbiddenSubstitution as exc:
                    self.refused = f"policy {rule.policy!r}: {exc}"
                    self.refusal = (rule.policy, exc)
                    kept, self.unresolved, self.written_as = [], [], {}
                    break
                if rendered is not None:
                    filled = rendered.lstrip("/")
                    kept.append(PathRule(filled, rule.capabilities, rule.policy))
                    self.written_as[(rule.policy, filled)] = rule.pattern
        self.sources = kept
        merged: dict[str, set[str]] = {}
        for rule in kept:
            merged.setdefault(rule.pattern, set()).update(rule.capabilities)
        # A deny on a pattern removes every other capability granted on it.
        self.rules = {
            pattern: PathRule(pattern, frozenset({"deny"}) if "deny" in caps else frozenset(caps))
            for pattern, caps in merged.items()
        }
        self._maybe = [
            (rule, could_match(rule.pattern, blocked.get(rule.policy, BLOCKED_SUBSTITUTIONS)))
            for rule in self.unresolved
        ]

    def decide(self, path: str, capability: str = "read") -> Decision:
        """The deciding pattern on ``path`` for ``capability``, with its policies and the losers."""
        decision = decide(self.sources, path, capability)
        if self._maybe:
            candidates = {p for _, p in stages(path, capability)}
            maybe = tuple(
                (rule.policy, rule.pattern)
                for rule, regex in self._maybe
                if any(regex.fullmatch(p) for p in candidates)
            )
            if maybe:
                return Decision(
                    decision.path,
                    decision.pattern,
                    decision.capabilities,
                    decision.policies,
                    decision.losers,
                    True,
                    maybe,
                )
        return decision

    def rule_for(self, path: str, capability: str = "read") -> PathRule | None:
        """The merged rule that decides ``path``: the highest-priority matching pattern."""
        decision = decide(self.rules.values(), path, capability)
        return None if decision.pattern is None else self.rules[decision.pattern]

    def capabilities(self, path: str) -> list[str]:
        """The capabilities the token holds on ``path`` (``sys/capabilities`` answer)."""
        if self.root:
            return ["root"]
        rule = self.rule_for(path, CAPABILITIES_CHECK)
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


def merged_patterns(rules: Sequence[PathRule]) -> list[tuple[str, frozenset[str], tuple[str, ...]]]:
    """Each pattern of ``rules`` once, most specific first: (pattern, capabilities after
    union and deny, the policies writing it)."""
    merged: dict[str, tuple[set[str], dict[str, None]]] = {}
    for rule in rules:
        caps, policies = merged.setdefault(rule.pattern, (set(), {}))
        caps |= rule.capabilities
        policies[rule.policy] = None
    return [
        (
            pattern,
            frozenset({"deny"}) if "deny" in caps else frozenset(caps),
            tuple(policies),
        )
        for pattern, (caps, policies) in sorted(
            merged.items(), key=lambda item: priority(item[0]), reverse=True
        )
    ]
