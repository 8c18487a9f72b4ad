"""Policy texts as the review decides with them: parsed rules, and the rules whose
parameter constraints the log cannot judge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._coverage import Coverage
from .._spec.acl import PathRule, parse_acl_policy
from .._spec.hcl import PolicyParseError, blocks, parse_hcl

__all__ = ["CONSTRAINT_KEYS", "PolicyTexts"]

# What a rule may test beyond its capabilities: parameter values (HMAC'd in the log) and
# the response wrapping asked for (not logged as a decision input).
CONSTRAINT_KEYS = (
    "allowed_parameters",
    "denied_parameters",
    "required_parameters",
    "min_wrapping_ttl",
    "max_wrapping_ttl",
)


class PolicyTexts:
    """ACL policy texts by name, parsed once: ``rules`` and ``constrained``.

    ``constrained[policy][pattern]`` is the stanza's constraints (a dict of the keys in
    :data:`CONSTRAINT_KEYS`) for every rule that has one. A text that does not parse is
    a gap in ``coverage``, never a policy granting nothing unsaid."""

    def __init__(self, texts: Mapping[str, str], coverage: Coverage | None = None) -> None:
        self.texts = {str(k): str(v) for k, v in texts.items() if k != "root"}
        self.coverage = coverage or Coverage("least_privilege.policies")
        self.rules: dict[str, list[PathRule]] = {}
        self.constrained: dict[str, dict[str, dict[str, Any]]] = {}
        for name, text in self.texts.items():
            try:
                self.rules[name] = parse_acl_policy(text, name)
                for label, body in blocks(parse_hcl(text), "path"):
                    kept = {k: body[k] for k in CONSTRAINT_KEYS if k in body}
                    if kept:
                        self.constrained.setdefault(name, {})[label.lstrip("/")] = kept
            except PolicyParseError as exc:
                self.coverage.note_gap(f"sys/policies/acl/{name}", None, str(exc))
        self.coverage.note_read(len(self.rules))

    def changed(self, changes: Mapping[str, str | None]) -> PolicyTexts:
        """These policies with ``changes`` applied (a text: new or changed; None: removed)."""
        texts = dict(self.texts)
        for name, text in changes.items():
            if text is None:
                texts.pop(name, None)
            else:
                texts[name] = text
        return PolicyTexts(texts, Coverage("least_privilege.proposed"))

    def rules_of(self, names: tuple[str, ...] | list[str]) -> list[PathRule]:
        return [rule for name in names for rule in self.rules.get(name, ())]
