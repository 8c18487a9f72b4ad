"""Identity templates in ACL patterns (secrets spec part 5): what fills them, and what could.

A pattern may hold templates (``secret/{{identity.entity.name}}/*``) filled from the
token's entity and its groups (:class:`Identity`) by :func:`render`; where the entity is
not known (:data:`UNKNOWN_IDENTITY`: a role, each login another entity),
:func:`could_match` says whether some identity could make the pattern match a path.
The evaluator (:mod:`toolkit._spec.acl`) reads both.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "BLOCKED_SUBSTITUTIONS",
    "UNKNOWN_IDENTITY",
    "Alias",
    "ForbiddenSubstitution",
    "Group",
    "Identity",
    "TemplateMatcher",
    "UnknownIdentity",
    "could_match",
    "is_templated",
    "render",
    "without_templates",
]


@dataclass(frozen=True)
class Alias:
    """An entity's alias on one auth mount (the mount named by its accessor)."""

    mount_accessor: str
    id: str
    name: str
    metadata: Mapping[str, str] = field(default_factory=dict)
    custom_metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Group:
    """An identity group the entity belongs to, directly or through a parent group."""

    id: str
    name: str
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Identity:
    """What a token's templated policies are filled in from: its entity and groups."""

    entity_id: str
    entity_name: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    aliases: tuple[Alias, ...] = ()
    groups: tuple[Group, ...] = ()


class UnknownIdentity:
    """The type of :data:`UNKNOWN_IDENTITY`: an entity not known, each login may be another."""

    def __repr__(self) -> str:
        return "UNKNOWN_IDENTITY"


# A principal whose entity is not known (a role: every login may be another entity).
UNKNOWN_IDENTITY: Final = UnknownIdentity()

_TEMPLATE = re.compile(r"\{\{(.*?)\}\}")


class _NotFound(Exception):
    """A template the identity cannot fill: the server leaves the pattern out."""


def _field(field_name: str, ident: str, name: str, **metadata: Mapping[str, str]) -> str:
    """``id``, ``name`` (none when empty) or ``<kind>.<key>`` of one record: an entity,
    an alias or a group, whose metadata of each kind it has is given by kind."""
    if field_name == "id":
        return ident
    if field_name == "name":
        if not name:
            raise _NotFound
        return name
    kind, dot, key = field_name.partition(".")
    if not dot or kind not in metadata or key not in metadata[kind]:
        raise _NotFound
    return str(metadata[kind][key])


def _entity_value(identity: Identity, rest: str) -> str:
    if rest.startswith("aliases."):
        accessor, _, field_name = rest.removeprefix("aliases.").partition(".")
        alias = next((a for a in identity.aliases if a.mount_accessor == accessor), None)
        if alias is None:
            raise _NotFound
        return _field(
            field_name,
            alias.id,
            alias.name,
            metadata=alias.metadata,
            custom_metadata=alias.custom_metadata,
        )
    return _field(rest, identity.entity_id, identity.entity_name, metadata=identity.metadata)


def _group_value(identity: Identity, rest: str) -> str:
    selector, _, tail = rest.partition(".")
    key, _, field_name = tail.partition(".")
    if selector not in ("ids", "names") or not field_name:
        raise _NotFound
    attribute = "id" if selector == "ids" else "name"
    group = next((g for g in identity.groups if getattr(g, attribute) == key), None)
    if group is None:
        raise _NotFound
    return _field(field_name, group.id, group.name, metadata=group.metadata)


def _fill(name: str, identity: Identity | None) -> str:
    name = name.strip()
    if name.startswith("identity.entity."):
        if identity is None:
            raise _NotFound
        return _entity_value(identity, name.removeprefix("identity.entity."))
    if name.startswith("identity.groups."):
        if identity is None:
            raise _NotFound
        return _group_value(identity, name.removeprefix("identity.groups."))
    raise _NotFound


def is_templated(pattern: str) -> bool:
    """Whether ``pattern`` holds an identity template (``{{...}}``)."""
    return "{{" in pattern


class ForbiddenSubstitution(ValueError):
    """A template's value holds a character the server refuses in a substitution
    (``/``, ``*`` or ``+`` unless the policy allows them): the server then refuses the
    token's whole ACL, so the token holds nothing. ``value`` is the refused character,
    ``pattern`` the path as the policy writes it."""

    def __init__(self, value: str, template: str, pattern: str) -> None:
        super().__init__(
            f"template substitution contains forbidden value {value!r} ({template} in {pattern!r})"
        )
        self.value = value
        self.pattern = pattern


# Refused in a substituted value unless the policy says otherwise
# (``allow_slashes_in_identity_templates``, ``allow_wildcards_in_identity_templates``).
BLOCKED_SUBSTITUTIONS = "/*+"


def render(
    pattern: str, identity: Identity | None, blocked: str = BLOCKED_SUBSTITUTIONS
) -> str | None:
    """``pattern`` with its templates filled from ``identity``; None when one cannot be.

    The templates OpenBao fills in ACL paths: ``identity.entity.id``,
    ``.name``, ``.metadata.<key>``, ``.aliases.<mount accessor>.id``,
    ``.name``, ``.metadata.<key>``, ``.custom_metadata.<key>``;
    ``identity.groups.ids.<group id>.name`` / ``.metadata.<key>`` and
    ``identity.groups.names.<group name>.id`` / ``.metadata.<key>``. A
    template it cannot fill (no entity, a key the entity lacks, a group it is
    not in, a name it does not know) leaves the whole pattern out: None.
    Templates are filled left to right, as the server does: the first that cannot be
    filled leaves the pattern out; a value holding a character of ``blocked`` raises
    :class:`ForbiddenSubstitution`.
    """
    parts: list[str] = []
    at = 0
    try:
        for match in _TEMPLATE.finditer(pattern):
            value = _fill(match.group(1), identity)
            bad = next((c for c in blocked if c in value), None)
            if bad is not None:
                raise ForbiddenSubstitution(bad, match.group(), pattern)
            parts += [pattern[at : match.start()], value]
            at = match.end()
    except _NotFound:
        return None
    return "".join(parts) + pattern[at:]


def without_templates(text: str) -> str:
    """``text`` with its templates (``{{...}}``) left out."""
    return _TEMPLATE.sub("", text)


class TemplateMatcher:
    """Whether some identity could fill a templated pattern so that it matches a path.

    Linear in the path and the pattern (a set of positions stepped a character at a
    time, no backtracking): a pattern holding many templates, sent by the server, cannot
    make a question take exponential time, as a regex of ``.*`` pieces can. A template
    stands for one or more characters other than those the server refuses in a
    substituted value (``blocked``: ``/``, ``*`` and ``+`` unless the policy allows them);
    ``+`` for one segment (an empty one too); a trailing ``*`` for any rest.
    """

    __slots__ = ("_tokens", "_blocked", "_glob", "_prefix")

    def __init__(self, pattern: str, blocked: str = "/*+") -> None:
        self._glob = pattern.endswith("*")
        body = pattern[:-1] if self._glob else pattern
        tokens: list[str | None] = []  # a literal character, "" for a template, None for +
        pieces = re.split(r"(\{\{.*?\}\})", body)
        for at, piece in enumerate(pieces):
            if piece.startswith("{{"):
                tokens.append("")
                continue
            segments = piece.split("/")
            for i, segment in enumerate(segments):
                if i:
                    tokens.append("/")
                # ``+`` is a wildcard only as a whole segment, not beside a template.
                whole = (i or not at) and (i < len(segments) - 1 or at == len(pieces) - 1)
                if segment == "+" and whole:
                    tokens.append(None)
                else:
                    tokens.extend(segment)
        self._tokens = tuple(tokens)
        self._blocked = blocked
        fixed = []
        for token in tokens:
            if not token:
                break
            fixed.append(token)
        self._prefix = "".join(fixed)

    def _closure(self, states: set[int]) -> set[int]:
        """``states`` with every position reachable without a character: past a ``+``
        (it may be empty) and past a template that has taken one (a negative position)."""
        todo = list(states)
        while todo:
            i = todo.pop()
            nxt = (
                -i
                if i < 0
                else (i + 1 if i < len(self._tokens) and self._tokens[i] is None else None)
            )
            if nxt is not None and nxt not in states:
                states.add(nxt)
                todo.append(nxt)
        return states

    def fullmatch(self, path: str) -> bool:
        """Whether ``path`` is matched by the pattern for some value of its templates."""
        if not path.startswith(self._prefix):
            return False
        tokens, end, blocked = self._tokens, len(self._tokens), self._blocked
        # Position i: about to match token i; -(i + 1): inside the template at i, which
        # has taken at least one character.
        states = self._closure({len(self._prefix)})
        for char in path[len(self._prefix) :]:
            if self._glob and end in states:
                return True
            after: set[int] = set()
            for i in states:
                if i < 0:
                    if char not in blocked:
                        after.add(i)
                    continue
                if i == end:
                    continue
                token = tokens[i]
                if token is None:
                    if char != "/":
                        after.add(i)
                elif token == "":
                    if char not in blocked:
                        after.add(-(i + 1))
                elif token == char:
                    after.add(i + 1)
            if not after:
                return False
            states = self._closure(after)
        return end in states


@functools.lru_cache(maxsize=65536)
def could_match(pattern: str, blocked: str = "/*+") -> TemplateMatcher:
    """The :class:`TemplateMatcher` of ``pattern`` (its ``fullmatch`` says whether some
    identity could make it match a path)."""
    return TemplateMatcher(pattern, blocked)
