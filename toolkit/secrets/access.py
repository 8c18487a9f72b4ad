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

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .._coverage import Coverage
from .._errors import APIError, InputError, MountNotFound, one_line
from .._frames import Col, Schema, build_frame
from .._http import Request, decode_json, segment, segments
from .._spec.acl import (
    ACL,
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
class Principal:
    """Someone or something that ends up holding policies.

    ``principal`` is where it is configured (its id in every frame); ``identity``
    fills templated patterns: an :class:`~toolkit._spec.acl.Identity`, None (a
    token with no entity), or ``UNKNOWN_IDENTITY`` (a role: each login may be
    another entity).
    """

    principal: str
    kind: str
    name: str
    policies: tuple[str, ...]
    identity: Any = UNKNOWN_IDENTITY


@dataclass(repr=False)
class AccessModel:
    """Policies (name -> rules) and principals, read once; every question answered from them."""

    policies: dict[str, list[PathRule]]
    principals: list[Principal]
    coverage: Coverage = field(default_factory=lambda: Coverage("access.load"))

    def __post_init__(self) -> None:
        self._by_name = {p.principal: p for p in self.principals}
        # Patterns by the text before their first wildcard: a path is matched only
        # against patterns whose fixed start is one of its prefixes.
        # Each entry: (rule, whether it is exact, its priority key), worked out once.
        self._by_prefix: dict[str, list[tuple[PathRule, bool, Any]]] = {}
        self._templated: dict[str, list[PathRule]] = {}
        # Each templated pattern, written in however many policies, as the regex of what
        # some identity could make it match: compiled here, matched once per question.
        self._templated_regex: dict[str, re.Pattern[str]] = {}
        for rules in self.policies.values():
            for rule in rules:
                if rule.templated:
                    self._templated.setdefault(rule.policy, []).append(rule)
                    if rule.pattern not in self._templated_regex:
                        self._templated_regex[rule.pattern] = could_match(rule.pattern)
                else:
                    self._by_prefix.setdefault(rule.fixed_prefix, []).append(
                        (rule, rule.is_exact, priority(rule.pattern))
                    )

    def __repr__(self) -> str:
        kinds: dict[str, int] = {}
        for p in self.principals:
            kinds[p.kind] = kinds.get(p.kind, 0) + 1
        held = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none"
        gaps = "" if self.coverage.complete else f"; {len(self.coverage.gaps)} place(s) not read"
        return f"<AccessModel {len(self.policies)} ACL policies; principals: {held}{gaps}>"

    # -- lookups ---------------------------------------------------------------------
    def principal(self, ref: str | Principal | Sequence[str]) -> Principal:
        """The principal named ``ref`` (its configuration path), or an ad-hoc one holding
        the policies listed; :class:`InputError` naming it when there is none."""
        if isinstance(ref, Principal):
            return ref
        if not isinstance(ref, str):
            names = tuple(ref)
            return Principal("policies: " + ", ".join(names), "policies", "", names)
        key = ref.strip().strip("/")
        found = self._by_name.get(key)
        if found is None:
            raise InputError(
                f"no principal {ref!r}: name one by where it is configured, e.g. "
                "'auth/userpass/users/alice' or 'auth/token/roles/ci' (see who_can's index)"
            )
        return found

    def _rules_of(self, policies: Iterable[str]) -> list[PathRule]:
        return [rule for name in policies for rule in self.policies.get(name, ())]

    def acl(self, principal: Principal) -> ACL:
        """The principal's merged ACL, its identity filling templated patterns."""
        if "root" in principal.policies:
            return ACL(root=True)
        return ACL(self._rules_of(principal.policies), identity=principal.identity)

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

    def who_can(self, capability: str, path: str) -> pd.DataFrame:
        """Every principal holding ``capability`` on ``path``; see :meth:`Access.who_can`."""
        capability = _capability(capability)
        best = self._stage_bests(path, capability)
        maybe = self._maybe_policies(path, capability)
        rows: list[dict[str, Any]] = []
        cache: dict[tuple[tuple[str, ...], bool], dict[str, Any] | None] = {}
        # Policies with any pattern that matches (or could, by identity), and root.
        relevant = set(maybe).union(*best) | {"root"}
        for principal in self.principals:
            if relevant.isdisjoint(principal.policies):
                continue
            identity_known = principal.identity is not UNKNOWN_IDENTITY
            templated = any(p in self._templated for p in principal.policies)
            if "root" in principal.policies:
                row: dict[str, Any] | None = {
                    "status": "granted",
                    "pattern": "",
                    "policies": ["root"],
                    "capabilities": ["root"],
                }
            elif templated and identity_known:
                decision = self.acl(principal).decide(path, capability)
                row = _grant(decision.allows(capability), decision, capability)
            else:
                key = (principal.policies, templated)
                if key not in cache:
                    cache[key] = self._combine(principal.policies, best, maybe, capability)
                row = cache[key]
            if row is not None:
                rows.append(
                    {
                        "principal": principal.principal,
                        "kind": principal.kind,
                        "name": principal.name,
                        **row,
                    }
                )
        frame = build_frame(rows, WHO_CAN).sort_index(kind="stable")
        self.coverage.attach(frame)
        return frame

    def _maybe_policies(self, path: str, capability: str) -> dict[str, list[PathRule]]:
        """The templated rules, by policy, that some identity could make match ``path``."""
        if not self._templated:
            return {}
        candidates = {p for _, p in stages(path, capability)}
        hits = {
            pattern
            for pattern, regex in self._templated_regex.items()
            if any(regex.fullmatch(c) for c in candidates)
        }
        # Each policy's rules in its own order, as the answer names the first of them.
        return {
            policy: kept
            for policy, rules in self._templated.items()
            if (kept := [r for r in rules if r.pattern in hits])
        }

    @staticmethod
    def _combine(
        policies: Sequence[str],
        stage_bests: Sequence[Mapping[str, _Best]],
        maybe: Mapping[str, list[PathRule]],
        capability: str,
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
        holds = capability in caps and "deny" not in caps
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
    def can(self, ref: str | Principal | Sequence[str]) -> pd.DataFrame:
        """What ``ref`` may do; see :meth:`Access.can`."""
        principal = self.principal(ref)
        rows: list[dict[str, Any]] = []
        if "root" in principal.policies:
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
            acl = self.acl(principal)
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
        self, ref: str | Principal | Sequence[str], path: str, capability: str = "read"
    ) -> pd.DataFrame:
        """Which pattern decides ``path``; see :meth:`Access.explain`."""
        capability = _capability(capability)
        principal = self.principal(ref)
        rows: list[dict[str, Any]] = []
        if "root" in principal.policies:
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
            acl = self.acl(principal)
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
            for policy in decision.policies:
                rows.append(
                    {
                        "rank": 1,
                        "policy": policy,
                        "pattern": decision.pattern,
                        "capabilities": sorted(caps_of[(policy, decision.pattern or "")]),
                        "outcome": "decides"
                        if len(decision.policies) == 1
                        else "decides (merged with the other policies on this pattern)",
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
        self.coverage.attach(frame)
        return frame


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
        unless ``token_no_default_policy``); ``LIST``/``GET auth/token/roles``
        (``allowed_policies``); ``LIST``/``GET identity/entity/id`` and
        ``identity/group/id`` (group policies are inherited by member entities
        and member groups); ``LIST auth/token/accessors`` and ``lookup-accessor``
        each (``policies`` and ``identity_policies``). Every refusal is a
        coverage gap, and so is an auth method the toolkit does not analyse.
        """
        reader = _Reader(self)
        policies = self._read_policies(reader)
        principals: list[Principal] = []
        entities, groups = self._read_identity(reader)
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
        principals.extend(self._read_token_roles(reader))
        principals.extend(self._read_auth(reader, by_alias, entity_policies))
        principals.extend(self._read_tokens(reader, identities))
        model = AccessModel(policies, principals, reader.coverage)
        self._model = model
        return model

    def _current(self) -> AccessModel:
        return self._model if self._model is not None else self.load()

    def who_can(self, capability: str, path: str) -> pd.DataFrame:
        """Every principal that holds ``capability`` on ``path``, and through what.

        Index ``principal`` (where it is configured); columns ``kind``
        (``token_role``, ``approle_role``, ``userpass_user``, ``ldap_user``,
        ``ldap_group``, ``jwt_role``, ``oidc_role``, ``kubernetes_role``,
        ``cert_role``, ``entity``, ``group``, ``token``), ``name``, ``status``
        (``granted``, or ``depends on identity`` where a templated pattern could
        decide for some logins and not others), ``pattern`` (the pattern that
        decides), ``policies`` (those granting it on that pattern),
        ``capabilities`` (everything the deciding pattern grants). A holder of
        ``root`` shows ``root``. ``attrs["coverage"]`` lists what could not be read.
        """
        return self._current().who_can(capability, path)

    def can(self, principal: str | Principal | Sequence[str]) -> pd.DataFrame:
        """What ``principal`` may do: each pattern of its policies once, most specific
        first, with the capabilities left after merging its policies and ``deny``.

        ``principal`` is a configuration path (``auth/approle/role/ci``) or a list of
        policy names. Templated patterns are filled where the identity is known
        (``written_as`` shows the template) and listed as ``depends on identity``
        where it is not.
        """
        return self._current().can(principal)

    def explain(
        self, principal: str | Principal | Sequence[str], path: str, capability: str = "read"
    ) -> pd.DataFrame:
        """Which pattern of which policy decides ``path`` for ``principal``, and which
        others matched and lost: ``rank`` (1 decides), ``policy``, ``pattern``,
        ``capabilities`` (that policy's on that pattern), ``outcome``."""
        return self._current().explain(principal, path, capability)

    # -- reading ---------------------------------------------------------------------
    def _read_policies(self, reader: _Reader) -> dict[str, list[PathRule]]:
        names = reader.list_keys("/sys/policies/acl", empty_ok=False)
        # Every answer is read before any is parsed: parsing between answers holds the GIL
        # against the fan-out's event loop and slows the reads (docs/decisions.md, access).
        texts = reader.read_all(
            [f"/sys/policies/acl/{segment(n, 'policy name listed by the server')}" for n in names]
        )
        policies: dict[str, list[PathRule]] = {}
        for name, data in zip(names, texts, strict=True):
            if data is None or name == "root":
                continue
            try:
                policies[name] = parse_acl_policy(str(data.get("policy") or ""), name)
            except PolicyParseError as exc:
                reader.gap(f"sys/policies/acl/{name}", None, str(exc))
        return policies

    def _read_identity(
        self, reader: _Reader
    ) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
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
        return entities, groups

    def _read_token_roles(self, reader: _Reader) -> list[Principal]:
        names = reader.list_keys("/auth/token/roles")
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
            if data is not None:
                policies = _with_default(data, _policies_of(data, "allowed_policies"))
                found.append(Principal(f"auth/token/roles/{name}", "token_role", name, policies))
        return found

    def _read_auth(
        self,
        reader: _Reader,
        by_alias: Mapping[tuple[str, str], Identity],
        entity_policies: Mapping[str, tuple[str, ...]],
    ) -> list[Principal]:
        try:
            mounts = unwrap(self._http.json("GET", "/sys/auth"))
        except APIError as exc:
            reader.gap("sys/auth", exc.status, _reason(exc.status, "read"))
            return []
        found: list[Principal] = []
        for mount, info in sorted(mounts.items()):
            if not isinstance(info, Mapping):
                continue
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
                datas = reader.read_all(
                    [f"{base}/{segment(n, 'name listed by the server')}" for n in names]
                )
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
                    if what in _ALIASED_BY_NAME:
                        known = by_alias.get((accessor, name))
                        if known is not None:
                            identity = known
                            policies = tuple(
                                dict.fromkeys(policies + entity_policies[known.entity_id])
                            )
                    found.append(
                        Principal(f"{base.lstrip('/')}/{name}", kind_of, name, policies, identity)
                    )
        return found

    def _read_tokens(self, reader: _Reader, identities: Mapping[str, Identity]) -> list[Principal]:
        accessors = reader.list_keys("/auth/token/accessors")
        found = []
        for accessor, data in zip(
            accessors,
            reader.post_all("/auth/token/lookup-accessor", "accessor", accessors),
            strict=True,
        ):
            if data is None:
                continue
            policies = tuple(
                dict.fromkeys(
                    listed_keys(data.get("policies"), "policies")
                    + listed_keys(data.get("identity_policies"), "identity_policies")
                )
            )
            entity = str(data.get("entity_id") or "")
            identity: Any = None
            if entity:
                identity = identities.get(entity, UNKNOWN_IDENTITY)
            found.append(
                Principal(
                    f"auth/token/accessors/{accessor}",
                    "token",
                    str(data.get("display_name") or ""),
                    policies,
                    identity,
                )
            )
        return found


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


def _capability(capability: str) -> str:
    """``capability`` as the server spells it; a word it does not know is refused in
    one line (``who_can("raed", ...)`` answering "nobody" would be a false finding)."""
    from .._spec.acl import CAPABILITIES

    word = str(capability).strip().lower()
    if word not in CAPABILITIES or word == "deny":
        raise InputError(
            f"unknown capability {capability!r}: ask for one of "
            + ", ".join(c for c in CAPABILITIES if c != "deny")
        )
    return word
