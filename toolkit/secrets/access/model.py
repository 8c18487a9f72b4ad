"""The access model: policies and principals read once, every question answered from them.

Patterns are indexed by their text before the first wildcard, so a path is matched
only against patterns that can match it; ``who_can`` combines each policy's best
match per look-up stage (:mod:`toolkit.secrets.access.who_can`), ``can`` and
``explain`` read one principal's merged ACL (:mod:`toolkit.secrets.access.explain`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from ..._coverage import Coverage
from ..._errors import InputError
from ..._frames import build_frame
from ..._spec.acl import ACL, PathRule, priority, stages
from ..._spec.identity_templates import BLOCKED_SUBSTITUTIONS, UNKNOWN_IDENTITY, could_match
from ..._spec.sudo import needs_sudo
from .explain import CAN, EXPLAIN, can_rows, explain_rows
from .principals import Principal, PrincipalRef, asked_capabilities
from .who_can import WHO_CAN, Best, combine, grant, identity_source

__all__ = ["AccessModel"]


@dataclass(repr=False)
class AccessModel:
    """Policies (name -> rules) and principals, read once; every question answered from them.

    ``blocked`` holds, by policy, the characters the server refuses in its template
    substitutions (``/*+`` unless the policy allows slashes or wildcards); ``mounts`` the
    secrets engines' mount paths (``v1/`` is read as the API prefix only when no mount
    has that name), None when they could not be read.
    """

    policies: dict[str, list[PathRule]]
    principals: list[Principal]
    coverage: Coverage = field(default_factory=lambda: Coverage("access.load"))
    blocked: dict[str, str] = field(default_factory=dict)
    mounts: frozenset[str] | None = None

    def __post_init__(self) -> None:
        self._by_name = {p.principal: p for p in self.principals}
        # Patterns by the text before their first wildcard: a path is matched only
        # against patterns whose fixed start is one of its prefixes.
        # Each entry: (rule, whether it is exact, its priority key), worked out once.
        self._by_prefix: dict[str, list[tuple[PathRule, bool, Any]]] = {}
        self._templated: dict[str, list[PathRule]] = {}
        # Each templated pattern (with the characters its policy refuses in a value) as a
        # linear matcher of what some identity could make it match, matched once a question.
        self._templated_match: dict[tuple[str, str], Any] = {}
        for rules in self.policies.values():
            for rule in rules:
                if rule.templated:
                    self._templated.setdefault(rule.policy, []).append(rule)
                    key = (rule.pattern, self._blocked_of(rule.policy))
                    if key not in self._templated_match:
                        self._templated_match[key] = could_match(*key)
                else:
                    self._by_prefix.setdefault(rule.fixed_prefix, []).append(
                        (rule, rule.is_exact, priority(rule.pattern))
                    )

    def _blocked_of(self, policy: str) -> str:
        return self.blocked.get(policy, BLOCKED_SUBSTITUTIONS)

    def __repr__(self) -> str:
        kinds: dict[str, int] = {}
        for p in self.principals:
            kinds[p.kind] = kinds.get(p.kind, 0) + 1
        held = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
        gaps = "" if self.coverage.complete else f"; {len(self.coverage.gaps)} place(s) not read"
        return f"<AccessModel {len(self.policies)} ACL policies; principals: {held}{gaps}>"

    # -- lookups ---------------------------------------------------------------------
    def principal(self, ref: PrincipalRef, caller: PrincipalRef | None = None) -> Principal:
        """The principal named ``ref`` (its configuration path), or an ad-hoc one holding
        the policies listed; :class:`InputError` naming it, with the nearest names, when
        there is none. A token role is resolved for ``caller`` when one is given (see
        :meth:`toolkit.secrets.access.Access.who_can`)."""
        if isinstance(ref, Principal):
            found = ref
        elif not isinstance(ref, str):
            names = tuple(ref)
            return Principal("policies: " + ", ".join(names), "policies", "", names)
        else:
            key = ref.strip().strip("/")
            hit = self._by_name.get(key)
            if hit is None:
                raise InputError(self._no_principal(ref, key))
            found = hit
        return self._resolved(found, caller)

    def _no_principal(self, ref: str, key: str) -> str:
        names = list(self._by_name)
        tail = key.rsplit("/", 1)[-1]
        close = [n for n in names if n.rsplit("/", 1)[-1] == tail][:3]
        close = close or difflib.get_close_matches(key, names, n=3, cutoff=0.6)
        if close:
            return f"no principal {ref!r}: did you mean {' or '.join(map(repr, close))}?"
        return (
            f"no principal {ref!r}: name one by where it is configured, e.g. "
            "'auth/userpass/users/alice' or 'auth/token/roles/ci' (see who_can's index)"
        )

    def _resolved(self, principal: Principal, caller: PrincipalRef | None) -> Principal:
        """A token role's principal as a token ``caller`` creates with it would be: the
        role's policies for the caller's, the caller's entity unless the role makes orphans
        or names an entity alias."""
        if principal.role is None or caller is None:
            return principal
        who = self.principal(caller)
        own = who.own if who.own is not None else who.policies
        policies, why = principal.role.policies(own)
        if policies is None:
            return replace(principal, policies=(), own=(), depends_on=why, identity=None)
        identity = principal.identity
        extra = principal.entity_policies
        if principal.kind == "token_role":
            if principal.role.orphan or who.kind == "policies":
                identity, extra = None, ()
            else:
                identity, extra = who.identity, who.entity_policies
        return replace(
            principal,
            policies=tuple(dict.fromkeys(policies + extra)),
            own=policies,
            identity=identity,
            depends_on="",
        )

    def _rules_of(self, policies: Iterable[str]) -> list[PathRule]:
        return [rule for name in policies for rule in self.policies.get(name, ())]

    def acl(self, principal: Principal) -> ACL:
        """The principal's merged ACL, its identity filling templated patterns."""
        if "root" in principal.policies:
            return ACL(root=True)
        return ACL(
            self._rules_of(principal.policies),
            identity=principal.identity,
            blocked={p: self._blocked_of(p) for p in principal.policies if p in self.blocked},
        )

    def read_path(self, path: str) -> tuple[str, str]:
        """``path`` as the server reads it, and a note when it was changed: the API prefix
        ``/v1/`` (copied from a URL) is left out; a bare ``v1/`` too, unless a mount is
        named ``v1/``."""
        text = str(path).strip()
        note = ""
        if text.startswith("/v1/"):
            text = text[4:]
            note = f"read as {text.lstrip('/')!r}: the API prefix '/v1/' left out"
        elif text.startswith("v1/"):
            if self.mounts is None:
                raise InputError(
                    f"{path!r}: 'v1/' may be a mount or the API prefix, and the mounts could "
                    "not be read (sys/mounts): write the path without 'v1/', or with '/v1/'"
                )
            if "v1/" not in self.mounts:
                text = text[3:]
                note = (
                    f"read as {text.lstrip('/')!r}: the API prefix 'v1/' left out "
                    "(the server has no mount 'v1/')"
                )
        text = text.lstrip("/")
        if not text:
            raise InputError("a path is required, e.g. sys/policies/acl/anything")
        return text, note

    # -- who can ---------------------------------------------------------------------
    def _stage_bests(self, path: str, capability: str) -> list[dict[str, Best]]:
        """For each stage of the server's look-up (:func:`~toolkit._spec.acl.stages`), each
        policy's most specific untemplated pattern matching there (priority key, pattern,
        capabilities merged within the policy)."""
        found: list[dict[str, Best]] = []
        for exact, candidate in stages(path, capability):
            best: dict[str, Best] = {}
            if exact:
                seen: Iterable[tuple[PathRule, bool, Any]] = (
                    e for e in self._by_prefix.get(candidate, ()) if e[0].pattern == candidate
                )
            else:
                seen = (
                    e
                    for i in range(len(candidate) + 1)
                    for e in self._by_prefix.get(candidate[:i], ())
                    if not e[1] and e[0].matches(candidate)
                )
            for rule, _, key in seen:
                held = best.get(rule.policy)
                if held is None or key > held[0]:
                    best[rule.policy] = (key, rule.pattern, set(rule.capabilities))
                elif key == held[0]:
                    held[2].update(rule.capabilities)
            found.append(best)
        return found

    def who_can(
        self, capability: str | Sequence[str], path: str, caller: PrincipalRef | None = None
    ) -> pd.DataFrame:
        """Every principal holding ``capability`` on ``path``; see :meth:`toolkit.secrets.access.Access.who_can`."""
        capabilities = asked_capabilities(capability)
        path, note = self.read_path(path)
        frames = [self._who_can_one(c, path, caller) for c in capabilities]
        frame = frames[0] if len(frames) == 1 else _holding_all(frames)
        frame.attrs["path"] = path
        frame.attrs["capabilities"] = list(capabilities)
        frame.attrs["note"] = note
        self.coverage.attach(frame)
        return frame

    def _who_can_one(self, capability: str, path: str, caller: PrincipalRef | None) -> pd.DataFrame:
        best = self._stage_bests(path, capability)
        maybe = self._maybe_policies(path, capability)
        sudo = capability != "sudo" and needs_sudo(stages(path, capability)[0][1])
        rows: list[dict[str, Any]] = []
        cache: dict[tuple[tuple[str, ...], bool], dict[str, Any] | None] = {}
        # Policies with any pattern that matches (or could, by identity), and root.
        relevant = set(maybe).union(*best) | {"root"}
        for configured in self.principals:
            principal = self._resolved(configured, caller)
            if principal.depends_on.startswith("refused"):
                continue  # the server creates no token: it holds nothing
            row: dict[str, Any] | None
            if principal.role is not None and principal.role.needs_caller and caller is None:
                row = {
                    "status": "depends on the caller",
                    "pattern": "",
                    "policies": [],
                    "capabilities": [],
                    "depends_on": principal.depends_on,
                }
            elif relevant.isdisjoint(principal.policies):
                continue
            elif "root" in principal.policies:
                row = {
                    "status": "granted",
                    "pattern": "",
                    "policies": ["root"],
                    "capabilities": ["root"],
                }
            else:
                identity_known = principal.identity is not UNKNOWN_IDENTITY
                templated = any(p in self._templated for p in principal.policies)
                if templated and identity_known:
                    acl = self.acl(principal)
                    if acl.refused:
                        continue  # the server refuses the token's whole ACL
                    decision = acl.decide(path, capability)
                    holds = decision.allows(capability) and (
                        not sudo or "sudo" in decision.capabilities
                    )
                    row = grant(holds, decision, capability)
                else:
                    key = (principal.policies, templated)
                    if key not in cache:
                        cache[key] = combine(principal.policies, best, maybe, capability, sudo)
                    row = cache[key]
                if row is not None and row["status"] == "depends on identity":
                    row = {**row, "depends_on": principal.depends_on or identity_source(principal)}
            if row is not None:
                rows.append(
                    {
                        "principal": principal.principal,
                        "kind": principal.kind,
                        "name": principal.name,
                        # What the answer rests on that the model cannot know (no entity yet).
                        "depends_on": principal.depends_on,
                        **row,
                    }
                )
        return build_frame(rows, WHO_CAN).sort_index(kind="stable")

    def _maybe_policies(self, path: str, capability: str) -> dict[str, list[PathRule]]:
        """The templated rules, by policy, that some identity could make match ``path``."""
        if not self._templated:
            return {}
        candidates = {p for _, p in stages(path, capability)}
        hits = {
            key
            for key, matcher in self._templated_match.items()
            if any(matcher.fullmatch(c) for c in candidates)
        }
        # Each policy's rules in its own order, as the answer names the first of them.
        return {
            policy: kept
            for policy, rules in self._templated.items()
            if (kept := [r for r in rules if (r.pattern, self._blocked_of(policy)) in hits])
        }

    # -- can, explain ----------------------------------------------------------------
    def _concrete(self, ref: PrincipalRef, caller: PrincipalRef | None) -> Principal:
        principal = self.principal(ref, caller)
        if principal.role is not None and principal.role.needs_caller and caller is None:
            raise InputError(
                f"{principal.principal} depends on {principal.depends_on}: name the caller, "
                "e.g. caller=['its-policy'] or caller='auth/token/accessors/ACCESSOR'"
            )
        return principal

    def can(self, ref: PrincipalRef, caller: PrincipalRef | None = None) -> pd.DataFrame:
        """What ``ref`` may do; see :meth:`toolkit.secrets.access.Access.can`."""
        principal = self._concrete(ref, caller)
        frame = build_frame(can_rows(principal, self.acl(principal)), CAN)
        frame.attrs["principal"] = principal.principal
        self.coverage.attach(frame)
        return frame

    def explain(
        self,
        ref: PrincipalRef,
        path: str,
        capability: str = "read",
        caller: PrincipalRef | None = None,
    ) -> pd.DataFrame:
        """Which pattern decides ``path``; see :meth:`toolkit.secrets.access.Access.explain`."""
        (capability,) = asked_capabilities(capability, one=True)
        path, note = self.read_path(path)
        principal = self._concrete(ref, caller)
        sudo = capability != "sudo" and needs_sudo(stages(path, capability)[0][1])
        rows = explain_rows(principal, self.acl(principal), path, capability, sudo)
        frame = build_frame(rows, EXPLAIN)
        frame.attrs["principal"] = principal.principal
        frame.attrs["path"] = path
        frame.attrs["note"] = note
        self.coverage.attach(frame)
        return frame


def _holding_all(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The principals of every frame (one a capability), each row naming all the patterns."""
    common = [p for p in frames[0].index if all(p in f.index for f in frames[1:])]
    rows = []
    for name in common:
        got = [f.loc[name] for f in frames]
        statuses = [str(r["status"]) for r in got]
        rows.append(
            {
                "principal": name,
                "kind": got[0]["kind"],
                "name": got[0]["name"],
                "status": next((s for s in statuses if s != "granted"), "granted"),
                "pattern": ", ".join(dict.fromkeys(str(r["pattern"]) for r in got if r["pattern"])),
                "policies": list(dict.fromkeys(p for r in got for p in r["policies"])),
                "capabilities": sorted({c for r in got for c in r["capabilities"]}),
                "depends_on": "; ".join(
                    dict.fromkeys(str(r["depends_on"]) for r in got if r["depends_on"])
                ),
            }
        )
    return build_frame(rows, WHO_CAN).sort_index(kind="stable")
