"""A policy generated from use, proved on the log and on the patterns before it is shown."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .._errors import InputError
from .._spec.acl import ACL, PathRule, parse_acl_policy
from .._spec.identity_templates import UNKNOWN_IDENTITY, Identity

__all__ = ["Generated", "ProofFailed", "generate"]

_CAPS = ("create", "read", "update", "patch", "delete", "list", "sudo")
_ORDER = {c: i for i, c in enumerate(_CAPS)}
# What fills a ``+`` or a ``*`` in a witness path: a segment no policy names.
_FRESH = "lp-witness"
_MAX_FILLS = 24
_MAX_INSTANCES = 256


class ProofFailed(RuntimeError):
    """The generated policy did not prove: it is not shown (a bug, reported as such)."""


@dataclass
class Generated:
    """A generated ACL policy: ``hcl`` (the text), ``rules`` (a frame: ``pattern``,
    ``capabilities``, ``paths`` (how many logged paths it stands for), ``generalised``,
    ``kept_as_written`` (a rule with parameter constraints or a template, copied),
    ``note``), ``lost`` (what the current policies allowed that this does not),
    ``not_kept`` (requests allowed when made that the policies now deny) and ``proof``."""

    name: str
    principals: tuple[str, ...]
    hcl: str
    rules: pd.DataFrame
    lost: pd.DataFrame
    not_kept: pd.DataFrame
    proof: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"<Generated policy {self.name!r}: {len(self.rules)} rule(s) from "
            f"{self.proof.get('requests', 0)} request(s); covers every one, widens nothing; "
            f"{len(self.lost)} grant(s) lost>"
        )

    def _repr_markdown_(self) -> str:
        return f"```hcl\n{self.hcl}```\n\n{self!r}"


@dataclass
class _Need:
    pattern: str
    caps: set[str]
    paths: set[str]
    kept: dict[str, Any] | None = None
    template: bool = False
    generalised: bool = False
    note: str = ""


def _instances(pattern: str, fills: dict[int, list[str]]) -> list[str]:
    """Concrete paths of ``pattern``: each ``+`` filled with a fresh segment and with the
    names other patterns give that segment; a trailing ``*`` with nothing, a fresh
    segment, and a fresh deeper path."""
    glob = pattern.endswith("*")
    body = pattern[:-1] if glob else pattern
    segments = body.split("/")
    choices = [
        [_FRESH, *fills.get(i, [])[:_MAX_FILLS]] if s == "+" else [s]
        for i, s in enumerate(segments)
    ]
    tails = ["", _FRESH, f"{_FRESH}/{_FRESH}", "/", f"/{_FRESH}"] if glob else [""]
    found: list[str] = []
    for combo in itertools.islice(itertools.product(*choices), _MAX_INSTANCES):
        head = "/".join(combo)
        found.extend(head + t for t in tails)
    return found


def _witnesses(patterns: Iterable[str]) -> list[str]:
    """Paths on which two sets of patterns can differ: every pattern's instances, its
    ``+`` filled with every literal other patterns hold at that segment."""
    patterns = [p for p in dict.fromkeys(patterns) if "{{" not in p]
    fills: dict[int, set[str]] = {}
    for pattern in patterns:
        for i, s in enumerate(pattern.rstrip("*").split("/")):
            if s and s != "+":
                fills.setdefault(i, set()).add(s)
    ordered = {i: sorted(v) for i, v in fills.items()}
    return list(dict.fromkeys(w for p in patterns for w in _instances(p, ordered)))


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _hcl_value(value: Any, indent: str) -> str:
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], dict):
            return _hcl_value(value[0], indent)
        return "[" + ", ".join(_hcl_value(v, indent) for v in value) + "]"
    if isinstance(value, dict):
        inner = indent + "  "
        lines = [f"{inner}{_quote(str(k))} = {_hcl_value(v, inner)}" for k, v in value.items()]
        return "{\n" + "\n".join(lines) + f"\n{indent}}}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return _quote(str(value))


def _render(needs: Sequence[_Need], header: str) -> str:
    lines = [f"# {line}" for line in header.splitlines()]
    for need in needs:
        caps = ", ".join(_quote(c) for c in sorted(need.caps, key=_ORDER.__getitem__))
        if need.note:
            lines.append(f"# {need.note}")
        lines.append(f"path {_quote(need.pattern)} {{")
        lines.append(f"  capabilities = [{caps}]")
        for key, value in (need.kept or {}).items():
            lines.append(f"  {key} = {_hcl_value(value, '  ')}")
        lines.append("}")
    return "\n".join(lines) + "\n"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:60] or "principal"


def generate(
    review: Any,
    principals: str | Sequence[str],
    *,
    generalise_above: int | None = None,
    name: str | None = None,
) -> Generated:
    """The smallest ACL policy allowing every request ``principals`` made in the review's
    window, proved before it is returned (see :meth:`Review.generate`)."""
    names = review._names(principals)
    if generalise_above is not None and generalise_above < 2:
        raise InputError(f"generalise_above must be at least 2 (siblings), not {generalise_above}")
    needs: dict[str, _Need] = {}
    requests: list[tuple[Any, str, str, bool, str]] = []  # (principal, path, op, sudo, entity)
    not_kept: list[dict[str, Any]] = []
    for principal_name in names:
        principal = review.principals[principal_name]
        for row in review.used(principal_name).itertuples(index=False):
            entity = str(row.entity_id or "")
            acl = review._acl_of(principal, entity)
            path, op, sudo = str(row.path), str(row.operation), bool(row.sudo)
            if not acl.allows(path, op, sudo=sudo):
                not_kept.append({"principal": principal_name, "path": path, "operation": op,
                                 "last_used": row.last_used,
                                 "why": "allowed when made, denied by the policies now"})  # fmt: skip
                continue
            requests.append((principal, path, op, sudo, entity))
            decision = acl.decide(path, op)
            written = next(
                (acl.written_as[(p, decision.pattern)] for p in decision.policies
                 if (p, decision.pattern) in acl.written_as),
                decision.pattern,
            )  # fmt: skip
            caps = {op} | ({"sudo"} if sudo else set())
            kept = None
            for policy in decision.policies:
                kept = review.policies.constrained.get(policy, {}).get(written) or kept
            if kept is not None:
                need = needs.setdefault(f"k:{written}", _Need(written, set(), set(), kept))
                need.note = "kept as written: parameter constraints the log cannot judge"
            elif written != decision.pattern and principal.identity is UNKNOWN_IDENTITY:
                need = needs.setdefault(f"t:{written}", _Need(written, set(), set(), template=True))
                need.note = "kept as written: a template each login fills"
            else:
                exact = path if op != "list" or path.endswith("/") else path + "/"
                need = needs.setdefault(f"e:{exact}", _Need(exact, set(), set()))
            need.caps |= caps
            need.paths.add(path)
    olds = _old_acls(review, names, requests)
    refused: list[str] = []
    if generalise_above is not None:
        refused = _generalise(needs, generalise_above, olds)
    ordered = sorted(needs.values(), key=lambda n: n.pattern)
    start, end = review.window()["start"], review.window()["end"]
    title = name or f"least-privilege-{_slug(names[0]) if len(names) == 1 else 'group'}"
    header = (
        f"{title}: generated from {len(requests)} distinct request(s) of "
        f"{', '.join(names)}\nbetween {start} and {end}"
    )
    hcl = _render(ordered, header)
    new_rules = parse_acl_policy(hcl, title)
    proof = _prove(review, names, requests, new_rules, olds)
    lost = _lost(review, names, new_rules)
    rules = pd.DataFrame(
        {
            "pattern": pd.array([n.pattern for n in ordered], dtype="string"),
            "capabilities": [sorted(n.caps, key=_ORDER.__getitem__) for n in ordered],
            "paths": pd.array([len(n.paths) for n in ordered], dtype="int64"),
            "generalised": pd.array([n.generalised for n in ordered], dtype="bool"),
            "kept_as_written": pd.array([n.kept is not None or n.template for n in ordered],
                                        dtype="bool"),
            "note": pd.array([n.note for n in ordered], dtype="string"),
        }
    )  # fmt: skip
    frame_nk = pd.DataFrame(
        not_kept, columns=["principal", "path", "operation", "last_used", "why"]
    ).astype({"principal": "string", "path": "string", "operation": "string", "why": "string"})
    proof.update(requests=len(requests), window=review.window(), not_generalised=refused)
    for frame in (rules, lost, frame_nk):
        review._attach(frame, len(requests))
    return Generated(title, tuple(names), hcl, rules, lost, frame_nk, proof)


def _old_acls(
    review: Any, names: Sequence[str], requests: Sequence[tuple[Any, str, str, bool, str]]
) -> list[tuple[str, Identity | None, ACL]]:
    """Each principal's current ACL under every identity it was seen with (a role's
    logins are many entities), identity policies included."""
    found: dict[tuple[str, str], tuple[str, Identity | None, ACL]] = {}
    for principal_name in names:
        principal = review.principals[principal_name]
        entities = {e for p, _, _, _, e in requests if p is principal} or {""}
        if principal.identity is not UNKNOWN_IDENTITY:
            entities = {""}
        for entity in sorted(entities):
            identity = principal.identity
            if identity is UNKNOWN_IDENTITY:
                identity = review.identities.get(entity) if entity else None
            found[(principal_name, entity)] = (
                principal_name,
                identity,
                review._acl_of(principal, entity),
            )
    return list(found.values())


def _widens(
    rules: Sequence[PathRule], olds: Sequence[tuple[str, Identity | None, ACL]]
) -> list[tuple[str, str, str]]:
    """(principal, path, capability) the rules allow and a current ACL denies, on every
    path where the two sets of patterns could differ."""
    found = []
    for principal, identity, old in olds:
        new = ACL(rules, identity=identity)
        patterns = [r.pattern for r in new.sources] + [r.pattern for r in old.sources]
        for path in _witnesses(patterns):
            for cap in _CAPS:
                if new.allows(path, cap) and not old.allows(path, cap):
                    found.append((principal, path, cap))
    return found


def _generalise(
    needs: dict[str, _Need], threshold: int, olds: Sequence[tuple[str, Identity | None, ACL]]
) -> list[str]:
    """Siblings under one folder, at least ``threshold`` of them, become ``folder/+`` (all
    one segment below) or ``folder/*`` (deeper too), when that widens nothing; the
    generalisations refused, each with the first path it would have widened to."""
    refused: list[str] = []
    exact = {k: n for k, n in needs.items() if k.startswith("e:")}
    folders: dict[str, list[str]] = {}
    for key, need in exact.items():
        parts = need.pattern.rstrip("/").split("/")
        for depth in range(1, len(parts)):
            folders.setdefault("/".join(parts[:depth]) + "/", []).append(key)
    taken: set[str] = set()
    # Deepest folders first: the narrowest generalisation the evidence supports.
    for folder in sorted(folders, key=lambda f: (-f.count("/"), f)):
        keys = [k for k in folders[folder] if k not in taken]
        if len(keys) < threshold:
            continue
        rest = [exact[k].pattern[len(folder) :] for k in keys]
        one_level = all("/" not in r for r in rest)
        pattern = folder + ("+" if one_level else "*")
        caps = set().union(*(exact[k].caps for k in keys))
        rule = PathRule(pattern, frozenset(caps), "candidate")
        widened = _widens([rule], olds)
        if widened:
            who, path, cap = widened[0]
            refused.append(
                f"{pattern} (from {len(keys)} paths) not used: it would allow {cap} on "
                f"{path!r}, which {who}'s current policies deny"
            )
            continue
        paths = set().union(*(exact[k].paths for k in keys))
        for key in keys:
            del needs[key]
            taken.add(key)
        needs[f"g:{pattern}"] = _Need(
            pattern, caps, paths, generalised=True,
            note=f"generalised from {len(paths)} path(s) under {folder}",
        )  # fmt: skip
    return refused


def _prove(
    review: Any,
    names: Sequence[str],
    requests: Sequence[tuple[Any, str, str, bool, str]],
    rules: Sequence[PathRule],
    olds: Sequence[tuple[str, Identity | None, ACL]],
) -> dict[str, Any]:
    for principal, path, op, sudo, entity in requests:
        identity = principal.identity
        if identity is UNKNOWN_IDENTITY:
            identity = review.identities.get(entity) if entity else None
        if not ACL(rules, identity=identity).allows(path, op, sudo=sudo):
            raise ProofFailed(
                f"the generated policy does not allow {op} on {path!r} that "
                f"{principal.principal} made: not shown (report this)"
            )
    widened = _widens(rules, olds)
    if widened:
        who, path, cap = widened[0]
        raise ProofFailed(
            f"the generated policy allows {cap} on {path!r}, which {who}'s current policies "
            f"deny ({len(widened)} such): not shown (report this)"
        )
    return {
        "covers": True,
        "never_widens": True,
        "witness_paths": len(
            _witnesses(
                [r.pattern for r in rules] + [r.pattern for _, _, old in olds for r in old.sources]
            )
        ),
    }


def _lost(review: Any, names: Sequence[str], rules: Sequence[PathRule]) -> pd.DataFrame:
    """Each (pattern, capability) a principal's current policies allow on some path that
    the generated policy does not: an example path for each."""
    rows = []
    for principal_name in names:
        principal = review.principals[principal_name]
        identity = None if principal.identity is UNKNOWN_IDENTITY else principal.identity
        old = review._acl_of(principal, "")
        new = ACL(rules, identity=identity)
        for rule in old.rules.values():
            for cap in sorted(rule.capabilities - {"deny"}, key=lambda c: _ORDER.get(c, 99)):
                for path in _witnesses([rule.pattern])[:3]:
                    if old.allows(path, cap) and not new.allows(path, cap):
                        rows.append({"principal": principal_name, "pattern": rule.pattern,
                                     "capability": cap, "example_path": path})  # fmt: skip
                        break
    return pd.DataFrame(
        rows, columns=["principal", "pattern", "capability", "example_path"], dtype="string"
    )
