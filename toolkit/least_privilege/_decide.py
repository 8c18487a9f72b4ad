"""Deciding logged requests with the one evaluator, each distinct key once."""

from __future__ import annotations

import multiprocessing as mp
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .._spec.acl import ACL, PathRule
from .._spec.identity_templates import Identity
from .._spec.sudo import needs_sudo
from ._policies import PolicyTexts

__all__ = ["Decider", "Verdict"]

# The pattern column of a request no ACL rule decided.
ROOT = "root"


@dataclass(frozen=True)
class Verdict:
    """One decision: allowed or not, the deciding pattern as written in the policy (a
    template stays a template; ``matched`` is what it became), the policies holding that
    pattern that grant the capability (``granting``) and all holding it (``holding``)."""

    allowed: bool
    pattern: str
    matched: str
    granting: tuple[str, ...]
    holding: tuple[str, ...]
    sudo: bool
    missing: tuple[str, ...] = ()
    constrained: bool = False


class _PolicySetACL:
    """One policy set's ACL for one identity, with each pattern's per-policy capabilities."""

    def __init__(self, rules: list[PathRule], identity: Identity | None) -> None:
        self.acl = ACL(rules, identity=identity)
        self.by_pattern: dict[str, dict[str, set[str]]] = {}
        for rule in self.acl.sources:
            self.by_pattern.setdefault(rule.pattern, {}).setdefault(rule.policy, set()).update(
                rule.capabilities
            )


class Decider:
    """Decides (policy set, identity, operation, path) with ``policies``; remembers each
    answer, so a log's millions of repeats cost one decision each distinct key.

    ``identities`` maps an entity id to the identity templated patterns are filled
    from (the identity store as it is now); an entity it lacks fills none of them.
    ``sudo`` says which paths need ``sudo`` too (the server's root-protected paths)."""

    def __init__(
        self,
        policies: PolicyTexts,
        identities: Mapping[str, Identity],
        sudo: Callable[[str], bool] = needs_sudo,
    ) -> None:
        self.policies = policies
        self.identities = identities
        self.sudo = sudo
        self._acls: dict[tuple[str, str], _PolicySetACL] = {}
        self._verdicts: dict[tuple[str, str, str, str], Verdict] = {}

    def compiled(self, policy_set: str, entity_id: str) -> _PolicySetACL:
        key = (policy_set, entity_id)
        found = self._acls.get(key)
        if found is None:
            names = [n for n in policy_set.split(",") if n]
            found = _PolicySetACL(
                self.policies.rules_of(names), self.identities.get(entity_id) if entity_id else None
            )
            self._acls[key] = found
        return found

    def decide(self, policy_set: str, entity_id: str, operation: str, path: str) -> Verdict:
        """The verdict on one request: ``policy_set`` its policy names joined by commas."""
        key = (policy_set, entity_id, operation, path)
        found = self._verdicts.get(key)
        if found is None:
            found = self._decide(policy_set, entity_id, operation, path)
            self._verdicts[key] = found
        return found

    def _decide(self, policy_set: str, entity_id: str, operation: str, path: str) -> Verdict:
        sudo = self.sudo(path)
        names = tuple(n for n in policy_set.split(",") if n)
        if ROOT in names:
            return Verdict(True, "", "", (ROOT,), (ROOT,), sudo)
        missing = tuple(n for n in names if n not in self.policies.rules and n != "root")
        compiled = self.compiled(policy_set, entity_id)
        decision = compiled.acl.decide(path, operation)
        if decision.pattern is None:
            return Verdict(False, "", "", (), (), sudo, missing)
        holders = compiled.by_pattern.get(decision.pattern, {})
        granting = tuple(
            sorted(p for p, caps in holders.items() if operation in caps and "deny" not in caps)
        )
        allowed = decision.allows(operation) and (not sudo or "sudo" in decision.capabilities)
        written = next(
            (
                compiled.acl.written_as[(p, decision.pattern)]
                for p in decision.policies
                if (p, decision.pattern) in compiled.acl.written_as
            ),
            decision.pattern,
        )
        constrained = any(
            written in self.policies.constrained.get(p, ()) for p in decision.policies
        )
        return Verdict(
            allowed,
            written,
            decision.pattern,
            granting if allowed else (),
            tuple(sorted(decision.policies)),
            sudo,
            missing,
            constrained,
        )

    def decide_many(
        self, keys: Sequence[tuple[str, str, str, str]], *, workers: int = 1
    ) -> list[Verdict]:
        """The verdicts of (policy_set, entity_id, operation, path) keys, in order.

        ``workers`` > 1 splits them by policy set over that many forked processes (each
        inherits the parsed policies; a policy set's ACL is built in one of them only),
        where the platform forks; the answers are kept here as if decided here."""
        if workers <= 1 or len(keys) < 2 or "fork" not in mp.get_all_start_methods():
            return [self.decide(*key) for key in keys]
        shares: list[list[int]] = [[] for _ in range(workers)]
        for index, key in enumerate(keys):
            shares[zlib.crc32(key[0].encode()) % workers].append(index)
        global _FORKED
        _FORKED = (self, keys)
        try:
            with mp.get_context("fork").Pool(workers) as pool:
                answers = pool.map(_decide_share, shares)
        finally:
            _FORKED = None
        found: list[Verdict | None] = [None] * len(keys)
        for share, verdicts in zip(shares, answers, strict=True):
            for index, verdict in zip(share, verdicts, strict=True):
                found[index] = verdict
                self._verdicts[keys[index]] = verdict
        return [v for v in found if v is not None]


# The decider and keys a forked worker reads (set only while a pool runs).
_FORKED: tuple[Decider, Sequence[tuple[str, str, str, str]]] | None = None


def _decide_share(indexes: list[int]) -> list[Verdict]:
    assert _FORKED is not None
    decider, keys = _FORKED
    return [decider.decide(*keys[i]) for i in indexes]
