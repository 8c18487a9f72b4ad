"""Who can do what: every principal the server configures, evaluated with the one ACL
evaluator (:mod:`toolkit._spec.acl`, which the sandbox enforces with).

``bao.access.who_can("update", "sys/policies/acl/x")`` reads the server once
(:meth:`Access.load`: every ACL policy, the auth methods whose configuration
names policies, identity entities and groups, tokens by accessor) and answers
from memory afterwards; ``can(principal)`` is the inverse and
``explain(principal, path)`` shows which pattern of which policy decides.

A principal is named by where it is configured: ``auth/token/roles/NAME``,
``auth/<mount>/role/NAME`` (AppRole, JWT/OIDC, Kubernetes),
``auth/<mount>/users/NAME`` and ``auth/<mount>/groups/NAME`` (userpass, LDAP),
``auth/<mount>/certs/NAME``, ``identity/entity/name/NAME``,
``identity/group/name/NAME``, ``auth/token/accessors/ACCESSOR``. What could not
be read (a 403, a method the toolkit does not analyse) is listed in each
frame's ``attrs["coverage"]`` (a :class:`toolkit.Coverage` record): an empty answer
with gaps there is "not known", never "nobody".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from .._coverage import Coverage
from .._errors import APIError, DecodeError, InputError, MountNotFound, one_line
from .._frames import Col, Schema, build_frame
from .._http import Request, decode_json, segment, segments
from .._spec.acl import (
    ACL,
    BLOCKED_SUBSTITUTIONS,
    CAPABILITIES,
    UNKNOWN_IDENTITY,
    Alias,
    Group,
    Identity,
    PathRule,
    PolicyParseError,
    could_match,
    merged_patterns,
    parse_acl_policy,
    priority,
    stages,
)
from .._spec.sudo import needs_sudo
from ._base import SecretsArea, error_of, listed_keys, unwrap

# A policy's most specific match at one stage: (priority key, pattern, capabilities).
_Best = tuple[Any, str, set[str]]

__all__ = [
    "AUTH_METHODS",
    "AccessModel",
    "Access",
    "CAN",
    "EXPLAIN",
    "Principal",
    "TokenRole",
    "WHO_CAN",
]

# Auth method type -> the folders of its configuration that name policies:
# (folder listed under the mount, the kind of principal it holds).
AUTH_METHODS: dict[str, tuple[tuple[str, str], ...]] = {
    "approle": (("role", "approle_role"),),
    "userpass": (("users", "userpass_user"),),
    "ldap": (("groups", "ldap_group"), ("users", "ldap_user")),
    "jwt": (("role", "jwt_role"),),
    "oidc": (("role", "oidc_role"),),
    "kubernetes": (("role", "kubernetes_role"),),
    "cert": (("certs", "cert_role"),),
}
# The JWT/OIDC plugin's kinds: a role's ``role_type`` (jwt or oidc) names it, whichever
# type its mount was enabled as.
_JWT_KINDS = frozenset({"jwt_role", "oidc_role"})
# Users whose entity alias is their name on the mount, so their entity can be found.
_ALIASED_BY_NAME = frozenset({"userpass_user", "ldap_user"})
_READ_OK = frozenset({400, 403, 404, 405})

WHO_CAN = Schema.of(
    "principal",
    Col("kind"),
    Col("name"),
    Col("status"),
    Col("pattern"),
    Col("policies", "object"),
    Col("capabilities", "object"),
    Col("depends_on"),
    index="principal",
)
CAN = Schema.of(
    Col("pattern"),
    Col("capabilities", "object"),
    Col("policies", "object"),
    Col("written_as"),
    Col("status"),
)
EXPLAIN = Schema.of(
    Col("rank", "int"),
    Col("policy"),
    Col("pattern"),
    Col("capabilities", "object"),
    Col("outcome"),
)


@dataclass(frozen=True)
class TokenRole:
    """A token role's policy settings, as ``auth/token/create/NAME`` applies them."""

    allowed: tuple[str, ...] = ()
    allowed_glob: tuple[str, ...] = ()
    disallowed: tuple[str, ...] = ()
    disallowed_glob: tuple[str, ...] = ()
    no_default: bool = False
    orphan: bool = False
    entity_aliases: tuple[str, ...] = ()

    @property
    def lists(self) -> bool:
        return bool(self.allowed or self.allowed_glob or self.disallowed or self.disallowed_glob)

    @property
    def needs_caller(self) -> bool:
        """Whether a token of the role holds its caller's policies (no allowed list)."""
        return not (self.allowed or self.allowed_glob)

    def policies(self, caller: Sequence[str] | None) -> tuple[tuple[str, ...] | None, str]:
        """The policies of a token created with the role by a caller holding ``caller``
        (None: not known), asking for none: (policies, "") or (None, why it has none:
        the server refuses the token, or the answer depends on the caller).

        OpenBao: with an allowed, disallowed or glob list, ``default`` is added unless
        the role sets ``token_no_default_policy`` or disallows ``default``; the token
        gets the allowed list, else the caller's policies, and is refused when one of
        them is disallowed. Without any list the token gets the caller's policies as they
        are (``default`` only if the caller holds it; ``token_no_default_policy`` does
        not apply)."""
        if self.needs_caller and caller is None:
            return None, "the caller's policies (a token of this role holds them)"
        if not self.lists:
            return _sanitized(caller or (), add_default=False), ""
        add_default = (
            not self.no_default
            and "default" not in self.disallowed
            and not _glob_any(self.disallowed_glob, "default")
        )
        chosen = self.allowed if not self.needs_caller else tuple(caller or ())
        final = _sanitized(chosen, add_default=add_default)
        for name in final:
            if name in self.disallowed or _glob_any(self.disallowed_glob, name):
                return (
                    None,
                    f"refused: the server will not create it, policy {name!r} is disallowed",
                )
        return final, ""


def _sanitized(policies: Iterable[str], *, add_default: bool) -> tuple[str, ...]:
    """Policy names as the server sanitizes them: trimmed, lower case, ``root`` alone
    when present, ``default`` added when asked and absent."""
    names = [p.strip().lower() for p in policies if p.strip()]
    if "root" in names:
        return ("root",)
    if add_default and "default" not in names:
        names.append("default")
    return tuple(dict.fromkeys(names))


def _glob_any(globs: Iterable[str], value: str) -> bool:
    """Whether one of ``globs`` matches ``value`` as the server's token roles match
    policy names: a leading and/or trailing ``*`` only (a lone ``*`` matches itself)."""
    for item in globs:
        if len(item) < 2:
            found = value == item
        elif item.startswith("*") and item.endswith("*"):
            found = item[1:-1] in value
        elif item.startswith("*"):
            found = value.endswith(item[1:])
        elif item.endswith("*"):
            found = value.startswith(item[:-1])
        else:
            found = value == item
        if found:
            return True
    return False


@dataclass(frozen=True)
class Principal:
    """Someone or something that ends up holding policies.

    ``principal`` is where it is configured (its id in every frame); ``identity``
    fills templated patterns: an :class:`~toolkit._spec.acl.Identity`, None (a
    token with no entity), or ``UNKNOWN_IDENTITY`` (a role: each login may be
    another entity). ``depends_on`` says what an answer for it depends on when the
    model cannot know (the caller, identity); ``own`` are the policies its token holds
    itself (those of its entity left out), where they differ from ``policies``;
    ``role`` is a token role's settings (its policies follow the caller).
    """

    principal: str
    kind: str
    name: str
    policies: tuple[str, ...]
    identity: Any = UNKNOWN_IDENTITY
    depends_on: str = ""
    own: tuple[str, ...] | None = None
    role: TokenRole | None = None
    entity_policies: tuple[str, ...] = ()


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
    def principal(
        self,
        ref: str | Principal | Sequence[str],
        caller: str | Principal | Sequence[str] | None = None,
    ) -> Principal:
        """The principal named ``ref`` (its configuration path), or an ad-hoc one holding
        the policies listed; :class:`InputError` naming it, with the nearest names, when
        there is none. A token role is resolved for ``caller`` when one is given (see
        :meth:`Access.who_can`)."""
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

    def _resolved(
        self, principal: Principal, caller: str | Principal | Sequence[str] | None
    ) -> Principal:
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
    def _stage_bests(self, path: str, capability: str) -> list[dict[str, _Best]]:
        """For each stage of the server's look-up (:func:`~toolkit._spec.acl.stages`), each
        policy's most specific untemplated pattern matching there (priority key, pattern,
        capabilities merged within the policy)."""
        found: list[dict[str, _Best]] = []
        for exact, candidate in stages(path, capability):
            best: dict[str, _Best] = {}
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
        self,
        capability: str | Sequence[str],
        path: str,
        caller: str | Principal | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """Every principal holding ``capability`` on ``path``; see :meth:`Access.who_can`."""
        capabilities = _capabilities(capability)
        path, note = self.read_path(path)
        frames = [self._who_can_one(c, path, caller) for c in capabilities]
        frame = frames[0] if len(frames) == 1 else _holding_all(frames)
        frame.attrs["path"] = path
        frame.attrs["capabilities"] = list(capabilities)
        frame.attrs["note"] = note
        self.coverage.attach(frame)
        return frame

    def _who_can_one(
        self, capability: str, path: str, caller: str | Principal | Sequence[str] | None
    ) -> pd.DataFrame:
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
                    row = _grant(holds, decision, capability)
                else:
                    key = (principal.policies, templated)
                    if key not in cache:
                        cache[key] = self._combine(
                            principal.policies, best, maybe, capability, sudo
                        )
                    row = cache[key]
                if row is not None and row["status"] == "depends on identity":
                    row = {**row, "depends_on": principal.depends_on or _identity_source(principal)}
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

    @staticmethod
    def _combine(
        policies: Sequence[str],
        stage_bests: Sequence[Mapping[str, _Best]],
        maybe: Mapping[str, list[PathRule]],
        capability: str,
        sudo: bool = False,
    ) -> dict[str, Any] | None:
        top: tuple[Any, str] | None = None
        best: Mapping[str, _Best] = {}
        for best in stage_bests:  # the first stage where one of its policies matches decides
            for name in policies:
                held = best.get(name)
                if held is not None and (top is None or held[0] > top[0]):
                    top = (held[0], held[1])
            if top is not None:
                break
        caps: set[str] = set()
        granting: list[str] = []
        if top is not None:
            for name in policies:
                held = best.get(name)
                if held is not None and held[1] == top[1]:
                    caps |= held[2]
                    granting.append(name)
        holds = capability in caps and "deny" not in caps and (not sudo or "sudo" in caps)
        could = [r for name in policies for r in maybe.get(name, ())]
        if could and (holds or any(capability in r.capabilities for r in could)):
            return {
                "status": "depends on identity",
                "pattern": top[1] if holds and top else could[0].pattern,
                "policies": granting if holds else sorted({r.policy for r in could}),
                "capabilities": sorted(caps) if holds else sorted(could[0].capabilities),
            }
        if not holds or top is None:
            return None
        return {
            "status": "granted",
            "pattern": top[1],
            "policies": [n for n in granting if capability in best[n][2]],
            "capabilities": sorted(caps),
        }

    # -- can, explain ----------------------------------------------------------------
    def _concrete(
        self, ref: str | Principal | Sequence[str], caller: str | Principal | Sequence[str] | None
    ) -> Principal:
        principal = self.principal(ref, caller)
        if principal.role is not None and principal.role.needs_caller and caller is None:
            raise InputError(
                f"{principal.principal} depends on {principal.depends_on}: name the caller, "
                "e.g. caller=['its-policy'] or caller='auth/token/accessors/ACCESSOR'"
            )
        return principal

    def can(
        self,
        ref: str | Principal | Sequence[str],
        caller: str | Principal | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """What ``ref`` may do; see :meth:`Access.can`."""
        principal = self._concrete(ref, caller)
        rows: list[dict[str, Any]] = []
        acl = self.acl(principal)
        refused = (
            principal.depends_on if principal.depends_on.startswith("refused") else acl.refused
        )
        if refused:
            rows.append(
                {
                    "pattern": "",
                    "capabilities": [],
                    "policies": list(principal.policies),
                    "written_as": "",
                    "status": f"holds nothing: {refused}",
                }
            )
        elif "root" in principal.policies:
            rows.append(
                {
                    "pattern": "*",
                    "capabilities": ["root"],
                    "policies": ["root"],
                    "written_as": "",
                    "status": "granted",
                }
            )
        else:
            for pattern, caps, policies in merged_patterns(acl.sources):
                origins = {
                    acl.written_as[(p, pattern)] for p in policies if (p, pattern) in acl.written_as
                }
                rows.append(
                    {
                        "pattern": pattern,
                        "capabilities": sorted(caps),
                        "policies": list(policies),
                        "written_as": ", ".join(sorted(origins)),
                        "status": "denied" if caps == {"deny"} else "granted",
                    }
                )
            for rule in acl.unresolved:
                rows.append(
                    {
                        "pattern": rule.pattern,
                        "capabilities": sorted(rule.capabilities),
                        "policies": [rule.policy],
                        "written_as": rule.pattern,
                        "status": "depends on identity",
                    }
                )
        frame = build_frame(rows, CAN)
        frame.attrs["principal"] = principal.principal
        self.coverage.attach(frame)
        return frame

    def explain(
        self,
        ref: str | Principal | Sequence[str],
        path: str,
        capability: str = "read",
        caller: str | Principal | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """Which pattern decides ``path``; see :meth:`Access.explain`."""
        (capability,) = _capabilities(capability, one=True)
        path, note = self.read_path(path)
        principal = self._concrete(ref, caller)
        sudo = capability != "sudo" and needs_sudo(stages(path, capability)[0][1])
        rows: list[dict[str, Any]] = []
        acl = self.acl(principal)
        refused = (
            principal.depends_on if principal.depends_on.startswith("refused") else acl.refused
        )
        if refused:
            rows.append(
                {
                    "rank": None,
                    "policy": "",
                    "pattern": "",
                    "capabilities": [],
                    "outcome": f"denied: holds nothing ({refused})",
                }
            )
        elif "root" in principal.policies:
            rows.append(
                {
                    "rank": 1,
                    "policy": "root",
                    "pattern": "",
                    "capabilities": ["root"],
                    "outcome": "decides: the root policy allows everything",
                }
            )
        else:
            decision = acl.decide(path, capability)
            caps_of: dict[tuple[str, str], set[str]] = {}
            for r in acl.sources:
                caps_of.setdefault((r.policy, r.pattern), set()).update(r.capabilities)
            order: list[str] = []
            for _policy, pattern in [(p, decision.pattern) for p in decision.policies] + list(
                decision.losers
            ):
                if pattern is not None and pattern not in order:
                    order.append(pattern)
            verdict = _verdict(decision.capabilities, capability, sudo)
            for policy in decision.policies:
                merged = (
                    ""
                    if len(decision.policies) == 1
                    else " (merged with the other policies on this pattern)"
                )
                rows.append(
                    {
                        "rank": 1,
                        "policy": policy,
                        "pattern": decision.pattern,
                        "capabilities": sorted(caps_of[(policy, decision.pattern or "")]),
                        "outcome": f"decides{merged}" + (f": denied, {verdict}" if verdict else ""),
                    }
                )
            for policy, pattern in decision.losers:
                rows.append(
                    {
                        "rank": order.index(pattern) + 1,
                        "policy": policy,
                        "pattern": pattern,
                        "capabilities": sorted(caps_of[(policy, pattern)]),
                        "outcome": f"lost to {decision.pattern!r} (more specific)",
                    }
                )
            for policy, pattern in decision.maybe:
                rule = next(
                    r for r in acl.unresolved if r.policy == policy and r.pattern == pattern
                )
                rows.append(
                    {
                        "rank": None,
                        "policy": policy,
                        "pattern": pattern,
                        "capabilities": sorted(rule.capabilities),
                        "outcome": "depends on identity: may match, and then may decide",
                    }
                )
            if not rows:
                rows.append(
                    {
                        "rank": None,
                        "policy": "",
                        "pattern": "",
                        "capabilities": ["deny"],
                        "outcome": "no pattern of its policies matches: denied",
                    }
                )
        frame = build_frame(rows, EXPLAIN)
        frame.attrs["principal"] = principal.principal
        frame.attrs["path"] = path
        frame.attrs["note"] = note
        self.coverage.attach(frame)
        return frame


def _verdict(granted: Iterable[str], capability: str, sudo: bool) -> str:
    """Why the deciding pattern's capabilities do not allow the request, or "" when they do."""
    caps = set(granted)
    if "deny" in caps:
        return "the pattern denies it ('deny')"
    if capability not in caps:
        return f"the pattern does not grant {capability!r}"
    if sudo and "sudo" not in caps:
        return "the path needs 'sudo', which the pattern does not grant"
    return ""


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


def _identity_source(principal: Principal) -> str:
    """What a "depends on identity" answer of ``principal`` depends on."""
    if principal.kind == "token_role":
        return "the caller's entity (a token of this role inherits it)"
    if principal.kind in ("entity", "group", "policies"):
        return "the entity of the token holding these policies"
    return "each login's entity"


def _grant(holds: bool, decision: Any, capability: str) -> dict[str, Any] | None:
    if decision.depends_on_identity:
        return {
            "status": "depends on identity",
            "pattern": decision.pattern or decision.maybe[0][1],
            "policies": list(decision.policies) or [decision.maybe[0][0]],
            "capabilities": sorted(decision.capabilities),
        }
    if not holds:
        return None
    return {
        "status": "granted",
        "pattern": decision.pattern,
        "policies": list(decision.policies),
        "capabilities": sorted(decision.capabilities),
    }


def _policies_of(data: Mapping[str, Any], *fields: str) -> list[str]:
    for name in fields:
        value = data.get(name)
        if value:
            if isinstance(value, str):
                return [p.strip() for p in value.split(",") if p.strip()]
            if not isinstance(value, list):
                raise DecodeError(
                    f"the server's answer has {name!r} that is not a list of policies"
                )
            return [str(p) for p in value]
    return []


def _with_default(data: Mapping[str, Any], policies: list[str]) -> tuple[str, ...]:
    if not data.get("token_no_default_policy") and "default" not in policies:
        policies = [*policies, "default"]
    return tuple(dict.fromkeys(policies))


class _Reader:
    """Reads of one load: each answer that is not a success becomes a coverage gap."""

    def __init__(self, area: Access) -> None:
        self.http = area._http
        self.coverage = Coverage("access.load")
        self.identity_read = False

    def gap(self, path: str, status: int | None, reason: str) -> None:
        self.coverage.note_gap(path.lstrip("/"), status, reason)

    def list_keys(self, path: str, *, empty_ok: bool = True) -> list[str]:
        try:
            (response,) = self.http.many([Request("LIST", path, ok_statuses=_READ_OK)])
        except MountNotFound:
            if not empty_ok:
                raise
            # The server has no such store at all (the sandbox has no identity store):
            # there is nothing of that kind to read, so nothing was missed.
            self.coverage.asked.append(f"{path.lstrip('/')} (not served)")
            return []
        if response.status_code == 404 and empty_ok:
            # An empty folder answers {"errors":[]}; a 404 with words ("unsupported
            # path": not the store asked for) is a place not read, never "nobody".
            error = error_of(self.http, response)
            if error.messages:
                self.gap(path, 404, one_line(str(error)))
            return []
        if response.status_code in _READ_OK:
            self.gap(path, response.status_code, _reason(response.status_code, "list"))
            return []
        data = unwrap(decode_json(response, "LIST"))
        self.coverage.note_read()
        return listed_keys(data.get("keys"), "keys")

    def read_each(self, paths: Sequence[str]) -> Iterator[dict[str, Any] | None]:
        """Each path's data (None where refused or gone), in order, as the answers come."""
        calls = [Request("GET", p, ok_statuses=_READ_OK) for p in paths]
        for path, response in zip(paths, self.http.many(calls), strict=True):
            if response.status_code in _READ_OK:
                if response.status_code != 404:  # gone between list and read
                    self.gap(path, response.status_code, _reason(response.status_code, "read"))
                yield None
            else:
                self.coverage.note_read()
                yield unwrap(decode_json(response, "GET"))

    def read_all(self, paths: Sequence[str]) -> list[dict[str, Any] | None]:
        return list(self.read_each(paths))

    def post_all(self, path: str, field_name: str, values: Sequence[str]) -> list[Any]:
        calls = [
            Request("POST", path, json={field_name: v}, idempotent=True, ok_statuses=_READ_OK)
            for v in values
        ]
        found: list[dict[str, Any] | None] = []
        for value, response in zip(values, self.http.many(calls), strict=True):
            if response.status_code in _READ_OK:
                if response.status_code not in (400, 404):
                    self.gap(
                        f"{path} {value}",
                        response.status_code,
                        _reason(response.status_code, "look up"),
                    )
                found.append(None)
            else:
                found.append(unwrap(decode_json(response, "POST")))
        return found


def _reason(status: int, verb: str) -> str:
    if status == 403:
        return f"permission denied: the token may not {verb} this; its principals are not known"
    if status == 405:
        return f"the server does not {verb} this here"
    return f"the server answered {status}"


class Access(SecretsArea):
    """Who can do what on the secrets server: :meth:`who_can`, :meth:`can`, :meth:`explain`.

    The first question loads the server's configuration (:meth:`load`); later
    ones answer from it until :meth:`load` is called again.
    """

    _model: AccessModel | None = None

    def load(self) -> AccessModel:
        """Read every ACL policy and principal; the model the questions are answered from.

        ``LIST``/``GET sys/policies/acl``; ``GET sys/auth`` then, per mount of a
        method in :data:`AUTH_METHODS`, the roles, users, groups or certs and a
        ``GET`` each (``token_policies``, else ``policies``; ``default`` added
        unless ``token_no_default_policy``), and each AppRole role's ``role-id`` (its
        logins' entity alias); ``LIST``/``GET auth/token/roles`` (resolved as the
        server resolves them: :class:`TokenRole`); ``GET sys/mounts`` (is ``v1/`` a
        mount?); ``LIST``/``GET identity/entity/id`` and ``identity/group/id`` (group
        policies are inherited by member entities and member groups);
        ``LIST auth/token/accessors`` and ``lookup-accessor`` each (``policies`` and
        ``identity_policies``). Every refusal is a coverage gap, and so is an auth
        method the toolkit does not analyse, and a policy it cannot parse.
        """
        reader = _Reader(self)
        policies, blocked = self._read_policies(reader)
        principals: list[Principal] = []
        entities, groups = self._read_identity(reader)
        auth_mounts = self._read_mounts(reader, "/sys/auth")
        engines = self._read_mounts(reader, "/sys/mounts")
        group_policies = _group_policies(groups)
        by_alias: dict[tuple[str, str], Identity] = {}
        entity_policies: dict[str, tuple[str, ...]] = {}
        identities: dict[str, Identity] = {}
        for entity in entities:
            ident = _identity_of(entity, groups)
            identities[ident.entity_id] = ident
            own = listed_keys(entity.get("policies"), "policies")
            for g in ident.groups:
                own.extend(group_policies.get(g.id, ()))
            entity_policies[ident.entity_id] = tuple(dict.fromkeys(own))
            for alias in ident.aliases:
                by_alias[(alias.mount_accessor, alias.name)] = ident
            principals.append(
                Principal(
                    f"identity/entity/name/{entity.get('name') or ident.entity_id}",
                    "entity",
                    str(entity.get("name") or ""),
                    entity_policies[ident.entity_id],
                    ident,
                )
            )
        for group in groups.values():
            principals.append(
                Principal(
                    f"identity/group/name/{group.get('name') or group.get('id')}",
                    "group",
                    str(group.get("name") or ""),
                    group_policies.get(str(group.get("id")), ()),
                    UNKNOWN_IDENTITY,
                )
            )
        known = _Known(by_alias, entity_policies, reader.identity_read)
        principals.extend(self._read_token_roles(reader, auth_mounts, known))
        principals.extend(self._read_auth(reader, auth_mounts, known))
        principals.extend(self._read_tokens(reader, identities, entity_policies))
        model = AccessModel(
            policies,
            principals,
            reader.coverage,
            blocked,
            None if engines is None else frozenset(engines),
        )
        self._model = model
        return model

    def _current(self) -> AccessModel:
        return self._model if self._model is not None else self.load()

    def who_can(
        self,
        capability: str | Sequence[str],
        path: str,
        caller: str | Principal | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """Every principal that holds ``capability`` on ``path``, and through what.

        Index ``principal`` (where it is configured); columns ``kind``
        (``token_role``, ``token_role_alias``, ``approle_role``, ``userpass_user``,
        ``ldap_user``, ``ldap_group``, ``jwt_role``, ``oidc_role``, ``kubernetes_role``,
        ``cert_role``, ``entity``, ``group``, ``token``), ``name``, ``status``
        (``granted``; ``depends on identity`` where a templated pattern could decide for
        some logins and not others; ``depends on the caller`` for a token role whose
        tokens hold their caller's policies), ``pattern`` (the pattern that decides),
        ``policies`` (those granting it on that pattern), ``capabilities`` (everything
        the deciding pattern grants), ``depends_on`` (what a "depends" status depends
        on). A holder of ``root`` shows ``root``. On a path that needs ``sudo``
        (:mod:`toolkit._spec.sudo`, OpenBao's own list) only holders of ``sudo`` there
        are named. A principal the server gives nothing (a token role that refuses its
        caller, a templated value the server refuses) is not named.

        ``capability`` may be a list: the principals holding all of them. ``path`` may
        carry the API prefix ``/v1/`` (``attrs["note"]`` says it was left out).
        ``caller`` (a principal, or a list of policies) resolves the token roles whose
        tokens depend on who creates them. ``attrs["coverage"]`` lists what could not
        be read.
        """
        return self._current().who_can(capability, path, caller)

    def can(
        self,
        principal: str | Principal | Sequence[str],
        caller: str | Principal | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """What ``principal`` may do: each pattern of its policies once, most specific
        first, with the capabilities left after merging its policies and ``deny``.

        ``principal`` is a configuration path (``auth/approle/role/ci``) or a list of
        policy names. Templated patterns are filled where the identity is known
        (``written_as`` shows the template) and listed as ``depends on identity``
        where it is not. A token role whose tokens hold their caller's policies needs
        ``caller``; one row ``holds nothing: ...`` when the server would give nothing.
        """
        return self._current().can(principal, caller)

    def explain(
        self,
        principal: str | Principal | Sequence[str],
        path: str,
        capability: str = "read",
        caller: str | Principal | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """Which pattern of which policy decides ``path`` for ``principal``, and which
        others matched and lost: ``rank`` (1 decides), ``policy``, ``pattern``,
        ``capabilities`` (that policy's on that pattern), ``outcome`` (``decides``, or
        ``decides: denied, ...`` when the deciding pattern lacks the capability, or the
        ``sudo`` the path needs)."""
        return self._current().explain(principal, path, capability, caller)

    # -- reading ---------------------------------------------------------------------
    def _read_mounts(self, reader: _Reader, path: str) -> dict[str, Any] | None:
        """The mounts listed at ``path`` (``sys/auth``, ``sys/mounts``), None when refused."""
        try:
            mounts = unwrap(self._http.json("GET", path))
        except APIError as exc:
            reader.gap(path, exc.status, _reason(exc.status, "read"))
            return None
        reader.coverage.note_read()
        return {str(k): v for k, v in mounts.items() if isinstance(v, Mapping)}

    def _read_policies(self, reader: _Reader) -> tuple[dict[str, list[PathRule]], dict[str, str]]:
        names = reader.list_keys("/sys/policies/acl", empty_ok=False)
        # Every answer is read before any is parsed: parsing between answers holds the GIL
        # against the fan-out's event loop and slows the reads (docs/decisions.md, access).
        texts = reader.read_all(
            [f"/sys/policies/acl/{segment(n, 'policy name listed by the server')}" for n in names]
        )
        policies: dict[str, list[PathRule]] = {}
        blocked: dict[str, str] = {}
        for name, data in zip(names, texts, strict=True):
            if data is None or name == "root":
                continue
            try:
                policies[name] = parse_acl_policy(str(data.get("policy") or ""), name)
            except PolicyParseError as exc:
                reader.gap(f"sys/policies/acl/{name}", None, str(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - whatever a policy does to the parser
                # (a RecursionError, a parser's own error): that policy is a gap, the rest stands.
                reason = f"the policy could not be read ({type(exc).__name__})"
                reader.gap(f"sys/policies/acl/{name}", None, reason)
                continue
            refused = "".join(
                chars
                for chars, allowed in (
                    ("/", data.get("allow_slashes_in_identity_templates")),
                    ("*+", data.get("allow_wildcards_in_identity_templates")),
                )
                if not allowed
            )
            if refused != BLOCKED_SUBSTITUTIONS:
                blocked[name] = refused
        return policies, blocked

    def _read_identity(
        self, reader: _Reader
    ) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
        gaps, asked = len(reader.coverage.gaps), len(reader.coverage.asked)
        ids = reader.list_keys("/identity/entity/id")
        entities = [
            e
            for e in reader.read_all(
                [f"/identity/entity/id/{segment(i, 'entity id listed by the server')}" for i in ids]
            )
            if e
        ]
        gids = reader.list_keys("/identity/group/id")
        groups = {
            str(g.get("id")): g
            for g in reader.read_all(
                [f"/identity/group/id/{segment(i, 'group id listed by the server')}" for i in gids]
            )
            if g
        }
        reader.identity_read = len(reader.coverage.gaps) == gaps and not any(
            "not served" in a for a in reader.coverage.asked[asked:]
        )
        return entities, groups

    def _read_token_roles(
        self, reader: _Reader, auth_mounts: Mapping[str, Any] | None, known: _Known
    ) -> list[Principal]:
        names = reader.list_keys("/auth/token/roles")
        accessor = str(((auth_mounts or {}).get("token/") or {}).get("accessor") or "")
        found = []
        for name, data in zip(
            names,
            reader.read_all(
                [
                    f"/auth/token/roles/{segment(n, 'token role listed by the server')}"
                    for n in names
                ]
            ),
            strict=True,
        ):
            if data is None:
                continue
            role = TokenRole(
                allowed=tuple(_policies_of(data, "allowed_policies")),
                allowed_glob=tuple(_policies_of(data, "allowed_policies_glob")),
                disallowed=tuple(_policies_of(data, "disallowed_policies")),
                disallowed_glob=tuple(_policies_of(data, "disallowed_policies_glob")),
                no_default=bool(data.get("token_no_default_policy")),
                orphan=bool(data.get("orphan")),
                entity_aliases=tuple(
                    a.lower() for a in _policies_of(data, "allowed_entity_aliases")
                ),
            )
            policies, why = role.policies(None)
            where = f"auth/token/roles/{name}"
            # A token of the role inherits its caller's entity, unless the role makes orphans.
            identity: Any = None if role.orphan else UNKNOWN_IDENTITY
            found.append(
                Principal(where, "token_role", name, policies or (), identity, why, policies, role)
            )
            # A token created with ``entity_alias`` carries that alias's entity and its policies.
            for (mount_accessor, alias), ident in sorted(known.by_alias.items()):
                if mount_accessor != accessor or not _glob_any(role.entity_aliases, alias.lower()):
                    continue
                extra = known.entity_policies[ident.entity_id]
                found.append(
                    Principal(
                        f"{where}/entity_alias/{alias}",
                        "token_role_alias",
                        alias,
                        tuple(dict.fromkeys((policies or ()) + extra)),
                        ident,
                        why,
                        policies,
                        role,
                        extra,
                    )
                )
        return found

    def _read_auth(
        self, reader: _Reader, mounts: Mapping[str, Any] | None, known: _Known
    ) -> list[Principal]:
        if mounts is None:
            return []
        found: list[Principal] = []
        for mount, info in sorted(mounts.items()):
            kind = str(info.get("type") or "")
            accessor = str(info.get("accessor") or "")
            folders = AUTH_METHODS.get(kind)
            if folders is None:
                if kind != "token":
                    reader.gap(f"auth/{mount}", None, f"auth method {kind!r} is not analysed")
                continue
            group_map: dict[str, tuple[str, ...]] = {}
            for folder, what in folders:
                base = f"/auth/{segments(mount, 'auth mount listed by the server')}/{folder}"
                names = reader.list_keys(base)
                paths = [f"{base}/{segment(n, 'name listed by the server')}" for n in names]
                datas = reader.read_all(paths)
                # An AppRole login's alias is the role's id: every login of a role is one entity.
                alias_of = dict(zip(names, names, strict=True))
                if what == "approle_role":
                    ids = reader.read_all([f"{p}/role-id" for p in paths])
                    alias_of = {
                        n: str((d or {}).get("role_id") or "")
                        for n, d in zip(names, ids, strict=True)
                    }
                for name, data in zip(names, datas, strict=True):
                    if data is None:
                        continue
                    own = _policies_of(data, "token_policies", "policies")
                    kind_of = what
                    if what in _JWT_KINDS and data.get("role_type") in ("jwt", "oidc"):
                        # One plugin serves both: the role's own type says how it logs in.
                        kind_of = f"{data['role_type']}_role"
                    if what == "ldap_group":
                        policies: tuple[str, ...] = tuple(own)
                        group_map[name.lower()] = policies
                    else:
                        if what == "ldap_user":  # its groups' policies come with each login
                            for group in _policies_of(data, "groups"):
                                own = [*own, *group_map.get(group.lower(), ())]
                        policies = _with_default(data, own)
                    identity: Any = UNKNOWN_IDENTITY
                    depends = ""
                    extra: tuple[str, ...] = ()
                    if what in _ALIASED_BY_NAME or what == "approle_role":
                        ident = known.by_alias.get((accessor, alias_of.get(name, "")))
                        if ident is not None:
                            identity = ident
                            extra = known.entity_policies[ident.entity_id]
                        elif known.identity_read and alias_of.get(name):
                            depends = "identity: never logged in, no entity yet (its first login makes one)"
                    found.append(
                        Principal(
                            f"{base.lstrip('/')}/{name}",
                            kind_of,
                            name,
                            tuple(dict.fromkeys(policies + extra)),
                            identity,
                            depends,
                            policies,
                            None,
                            extra,
                        )
                    )
        return found

    def _read_tokens(
        self,
        reader: _Reader,
        identities: Mapping[str, Identity],
        entity_policies: Mapping[str, tuple[str, ...]],
    ) -> list[Principal]:
        accessors = reader.list_keys("/auth/token/accessors")
        found = []
        for accessor, data in zip(
            accessors,
            reader.post_all("/auth/token/lookup-accessor", "accessor", accessors),
            strict=True,
        ):
            if data is None:
                continue
            own = tuple(listed_keys(data.get("policies"), "policies"))
            extra = tuple(listed_keys(data.get("identity_policies"), "identity_policies"))
            entity = str(data.get("entity_id") or "")
            identity: Any = None
            if entity:
                identity = identities.get(entity, UNKNOWN_IDENTITY)
            found.append(
                Principal(
                    f"auth/token/accessors/{accessor}",
                    "token",
                    str(data.get("display_name") or ""),
                    tuple(dict.fromkeys(own + extra)),
                    identity,
                    "",
                    own,
                    None,
                    extra,
                )
            )
        return found


@dataclass(frozen=True)
class _Known:
    """What the identity store told: entities by (mount accessor, alias name), each
    entity's policies (its groups' included), and whether it was read whole."""

    by_alias: Mapping[tuple[str, str], Identity]
    entity_policies: Mapping[str, tuple[str, ...]]
    identity_read: bool


def _group_policies(groups: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    """Each group's policies with those of every group above it (members inherit them)."""

    def above(gid: str, seen: set[str]) -> list[str]:
        group = groups.get(gid)
        if group is None or gid in seen:
            return []
        seen.add(gid)
        found = listed_keys(group.get("policies"), "policies")
        for parent in group.get("parent_group_ids") or []:
            found.extend(above(str(parent), seen))
        return found

    return {gid: tuple(dict.fromkeys(above(gid, set()))) for gid in groups}


def _identity_of(entity: Mapping[str, Any], groups: Mapping[str, Mapping[str, Any]]) -> Identity:
    ids: list[str] = []
    for key in ("direct_group_ids", "group_ids", "inherited_group_ids"):
        ids.extend(str(g) for g in entity.get(key) or [])
    # Groups above the entity's groups count too (the server passes inherited ones).
    todo = list(dict.fromkeys(ids))
    seen: list[str] = []
    while todo:
        gid = todo.pop(0)
        if gid in seen:
            continue
        seen.append(gid)
        todo.extend(str(p) for p in (groups.get(gid) or {}).get("parent_group_ids") or [])
    return Identity(
        entity_id=str(entity.get("id") or ""),
        entity_name=str(entity.get("name") or ""),
        metadata=dict(entity.get("metadata") or {}),
        aliases=tuple(
            Alias(
                str(a.get("mount_accessor") or ""),
                str(a.get("id") or ""),
                str(a.get("name") or ""),
                dict(a.get("metadata") or {}),
                dict(a.get("custom_metadata") or {}),
            )
            for a in entity.get("aliases") or []
        ),
        groups=tuple(
            Group(gid, str(groups[gid].get("name") or ""), dict(groups[gid].get("metadata") or {}))
            for gid in seen
            if gid in groups
        ),
    )


def _capabilities(capability: str | Sequence[str], *, one: bool = False) -> tuple[str, ...]:
    """``capability`` (a word or a list of them) as the server spells it; a word it does
    not know is refused in one line (``who_can("raed", ...)`` answering "nobody" would be
    a false finding), and so is ``write``, which the server splits in two."""
    words = [capability] if isinstance(capability, str) else list(capability)
    if not words or (one and len(words) != 1):
        raise InputError(
            "name one capability" if one else "name at least one capability, e.g. 'read'"
        )
    found = []
    for raw in words:
        word = str(raw).strip().lower()
        if word == "write":
            raise InputError(
                "'write' is not one capability: create or update? (create writes a new "
                "entry, update changes one; ask for ['create', 'update'] for both)"
            )
        if word not in CAPABILITIES or word == "deny":
            raise InputError(
                f"unknown capability {raw!r}: ask for one of "
                + ", ".join(c for c in CAPABILITIES if c != "deny")
            )
        found.append(word)
    return tuple(dict.fromkeys(found))
