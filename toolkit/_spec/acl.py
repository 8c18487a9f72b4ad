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
parsed with python-hcl2. A pattern is an exact path, a path ending in ``*``
(a prefix glob), or a path with ``+`` standing for exactly one segment; it
may hold identity templates (``secret/{{identity.entity.name}}/*``, see
:func:`render`). The rules, as the real server applies them:

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
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

__all__ = [
    "ACL",
    "CAPABILITIES",
    "BLOCKED_SUBSTITUTIONS",
    "CAPABILITIES_CHECK",
    "ForbiddenSubstitution",
    "TemplateMatcher",
    "UNKNOWN_IDENTITY",
    "Alias",
    "Decision",
    "Group",
    "Identity",
    "PathRule",
    "PolicyParseError",
    "blocks",
    "hcl_document",
    "parse_acl_policy",
    "parse_hcl",
    "priority",
    "render",
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
            parsed = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            # orjson refuses a few documents json reads (huge integers, NaN): the
            # standard reader decides, and words the error when there is one.
            try:
                parsed = json.loads(stripped)
            except ValueError as exc:
                raise PolicyParseError(f"failed to parse policy: {exc}") from None
            except RecursionError:
                raise PolicyParseError(
                    "failed to parse policy: the JSON document is nested too deep to read"
                ) from None
        if not isinstance(parsed, dict):
            raise PolicyParseError("failed to parse policy: the JSON document is not an object")
        return parsed
    plain = _go_document(text)
    if plain is not None:
        return plain
    try:
        # python-hcl2's grammar, parsed the way ``hcl2.parses_to_tree`` does (its
        # newline appended) but without position tracking: the same tree, in half the time.
        tree = _hcl_parser().parse(text + "\n")
    except Exception as exc:  # the parser raises several lark error types
        reason = " ".join(str(exc).split())
        raise PolicyParseError(f"failed to parse policy: {reason}") from None
    # The parse tree of a plain policy is read directly: python-hcl2's own transform
    # and serialization cost twice the parse, and a server holds thousands of policies.
    try:
        plain = _plain_body(tree.children[0]) if tree.children else {}
    except RecursionError:
        raise PolicyParseError("failed to parse policy: nested too deep to read") from None
    if plain is not None:
        return plain
    try:
        return hcl_document(text)
    except Exception as exc:  # noqa: BLE001 - as above
        reason = " ".join(str(exc).split())
        raise PolicyParseError(f"failed to parse policy: {reason}") from None


# What HashiCorp's HCL (pygohcl) reads differently from python-hcl2, or evaluates: escapes,
# interpolations and directives, heredocs; and non-ASCII text (HCL normalizes it to NFC).
_GO_UNSAFE = re.compile(r"\\|\$\{|%\{|<<|[^\x00-\x7f]")
# Quoted strings (no escapes, by the check above) and comments, in the order they start.
_GO_LEXEMES = re.compile(r'"[^"\n]*"|#[^\n]*|//[^\n]*|/\*.*?\*/', re.DOTALL)
_GO_WORD = r"[A-Za-z_][A-Za-z0-9_-]*+"  # possessive: a word never gives back, no backtracking
_GO_VALUE = r'(?:"|\[(?:"(?:,")*,?)?\])'
# A plain document with its strings as ``"`` and without comments or blanks: attributes
# whose values are strings or lists of strings, and blocks with one label holding such.
_GO_ITEM = re.compile(rf'({_GO_WORD})(?:=({_GO_VALUE})|"\{{((?:{_GO_WORD}={_GO_VALUE})*)\}})')
_GO_BLANKS = re.compile(r"\s+")
_go_reader: Any = None
_go_pid = 0


def _go_loads() -> Any:
    """pygohcl's ``loads`` (HashiCorp's HCL, compiled), or None: not installed, or this
    process is a fork of the one that loaded it (a Go runtime does not survive a fork)."""
    global _go_reader, _go_pid
    if _go_reader is None:
        try:
            import pygohcl
        except Exception:  # noqa: BLE001 - not installed or not loadable: python-hcl2 reads
            _go_reader = False
            return None
        _go_reader, _go_pid = pygohcl.loads, os.getpid()
    return _go_reader if _go_reader and os.getpid() == _go_pid else None


def _go_document(text: str) -> dict[str, Any] | None:
    """``text`` as python-hcl2 serializes it, read by HashiCorp's HCL, when the text is a
    plain policy: attributes and one-label blocks whose values are literal strings or
    lists of them. None for anything else (python-hcl2 reads it then), so the two readers
    never disagree: HCL evaluates expressions and templates python-hcl2 keeps as text.

    HCL returns one object per block type with the labels as keys (sorted; repeated
    labels as a list): the blocks are put back in the text's order here."""
    loads = _go_loads()
    if loads is None or _GO_UNSAFE.search(text):
        return None
    strings: list[str] = []

    def lexeme(match: re.Match[str]) -> str:
        if match.group().startswith('"'):
            strings.append(match.group()[1:-1])
            return '"'
        return " "

    skeleton = _GO_BLANKS.sub("", _GO_LEXEMES.sub(lexeme, text))
    order: list[tuple[str, str | None]] = []  # (name, block label or None: an attribute)
    at = position = 0
    # Item after item from the start, each matched where the last ended: a search
    # (finditer) would try every later offset after a failure, the square of the text.
    while position < len(skeleton):
        item = _GO_ITEM.match(skeleton, position)
        if item is None:
            return None
        position = item.end()
        if item.group(2) is not None:
            order.append((item.group(1), None))
        else:
            order.append((item.group(1), strings[at]))
        at += item.group().count('"')
    if position != len(skeleton):
        return None
    try:
        parsed = loads(text)
    except Exception:  # noqa: BLE001 - whatever HCL refuses, python-hcl2 reads or words
        return None
    if not isinstance(parsed, dict):
        return None
    found: dict[str, Any] = {}
    taken: dict[tuple[str, str], int] = {}
    for name, label in order:
        value = parsed.get(name)
        if label is None:
            if name in found or not isinstance(value, str | list):
                return None
            found[name] = value
            continue
        bodies = value.get(label) if isinstance(value, dict) else None
        if isinstance(bodies, dict):
            bodies = [bodies]
        index = taken.get((name, label), 0)
        taken[(name, label)] = index + 1
        if not isinstance(bodies, list) or index >= len(bodies):
            return None
        blocks_of = found.setdefault(name, [])
        if not isinstance(blocks_of, list) or not isinstance(bodies[index], dict):
            return None
        blocks_of.append({label: bodies[index]})
    # Every block HCL returned is one the text's order names (nothing merged or dropped).
    for name, value in parsed.items():
        if isinstance(value, dict):
            for label, bodies in value.items():
                count = len(bodies) if isinstance(bodies, list) else 1
                if taken.get((name, label), 0) != count:
                    return None
        elif name not in found:
            return None
    return found


def _cache_dir() -> Path | None:
    """This user's cache folder for the built parser (0700, owned by the user), or None
    when there is none that only this user can write: the file is a pickle, read back."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "operator-toolkit"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    private = stat.S_ISDIR(info.st_mode) and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return folder if private and info.st_uid == os.getuid() else None


def _owned_private_file(path: Path) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    return (
        stat.S_ISREG(info.st_mode)
        and info.st_uid == os.getuid()
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


@functools.lru_cache(maxsize=1)
def _hcl_parser() -> Any:
    """python-hcl2's LALR parser built without position tracking (nothing here reads
    positions; tracking them is ~40% of a parse). Building it takes seconds, so the built
    parser is saved with lark's ``Lark.save`` in the user's private cache folder, named by
    the grammar's digest and both libraries' versions, and loaded from there next time."""
    import hcl2
    import lark
    from hcl2.postlexer import PostLexer

    grammar = Path(hcl2.__file__).with_name("hcl2.lark")
    version = getattr(hcl2, "__version__", "")
    digest = hashlib.sha256(
        grammar.read_bytes() + f"|{lark.__version__}|{version}|nopos".encode()
    ).hexdigest()[:24]
    folder = _cache_dir()
    if folder is None:
        # Nowhere private to keep it: python-hcl2's own parser (its cache ships with it)
        # rather than seconds of building in every process.
        from hcl2.parser import parser

        return parser()
    cached = folder / f"hcl2-parser-{digest}.lark"
    if _owned_private_file(cached):
        try:
            with cached.open("rb") as f:
                return lark.Lark.load(f)
        except Exception:  # noqa: BLE001 - a damaged cache is rebuilt below
            pass
    built = lark.Lark(
        grammar.read_text(encoding="utf-8"),
        parser="lalr",
        propagate_positions=False,
        postlex=PostLexer(),
    )
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")  # 0600
        with os.fdopen(handle, "wb") as f:
            built.save(f)
        os.replace(temporary, cached)
    except OSError:
        pass
    return built


def hcl_document(text: str) -> dict[str, Any]:
    """``text`` as python-hcl2 serializes it (blocks as lists of ``{label: body}``, quotes
    stripped); the library's own exception when it cannot. The one HCL reader: policies
    here, the CLI configuration files in :mod:`toolkit._config`."""
    import hcl2
    from hcl2.utils import SerializationOptions

    options = SerializationOptions(
        with_comments=False,
        explicit_blocks=False,
        strip_string_quotes=True,
        preserve_heredocs=False,
    )
    parsed = hcl2.loads(text, serialization_options=options)
    return dict(parsed) if isinstance(parsed, dict) else {}


def _plain_value(node: Any) -> Any:
    """A string, a whole number or a list of strings from the parse tree; None for
    anything else, which python-hcl2's full transform then reads."""
    if getattr(node, "data", None) == "expr_term" and len(node.children) == 1:
        node = node.children[0]
    kind = getattr(node, "data", None)
    if kind == "string":
        parts = [c for c in node.children if getattr(c, "data", None) is not None]
        if not parts:
            return ""
        if len(parts) == 1 and parts[0].data == "string_part" and len(parts[0].children) == 1:
            chars = str(parts[0].children[0])
            if getattr(parts[0].children[0], "type", "") == "STRING_CHARS" and "\\" not in chars:
                return chars
        return None
    if kind == "tuple":
        items = [_plain_value(c) for c in node.children if getattr(c, "data", None) is not None]
        return items if all(isinstance(i, str) for i in items) else None
    if kind == "int_lit" and len(node.children) == 1:
        text = str(node.children[0])
        return int(text) if text.isdigit() else None
    return None


def _plain_body(body: Any) -> dict[str, Any] | None:
    """A body of attributes and one-label blocks as python-hcl2 serializes it, or None."""
    found: dict[str, Any] = {}
    for child in body.children:
        kind = getattr(child, "data", None)
        if kind == "new_line_or_comment":
            continue
        if kind == "attribute":
            name = str(child.children[0].children[0])
            value = _plain_value(child.children[2])
            if value is None or name in found:
                return None
            found[name] = value
        elif kind == "block":
            parts = [c for c in child.children if getattr(c, "data", None) is not None]
            if len(parts) != 3 or parts[1].data != "string" or parts[2].data != "body":
                return None
            label = _plain_value(parts[1])
            inner = _plain_body(parts[2])
            if not isinstance(label, str) or inner is None:
                return None
            found.setdefault(str(parts[0].children[0]), []).append({label: inner})
        else:
            return None
    return found


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


# -- identity templates ------------------------------------------------------------------


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


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN_IDENTITY"


# A principal whose entity is not known (a role: every login may be another entity).
UNKNOWN_IDENTITY: Final = _Unknown()

_TEMPLATE = re.compile(r"\{\{(.*?)\}\}")


class _NotFound(Exception):
    """A template the identity cannot fill: the server leaves the pattern out."""


def _metadata(values: Mapping[str, str], key: str) -> str:
    if key not in values:
        raise _NotFound(key)
    return str(values[key])


def _entity_value(identity: Identity, rest: str) -> str:
    if rest == "id":
        return identity.entity_id
    if rest == "name":
        if not identity.entity_name:
            raise _NotFound(rest)
        return identity.entity_name
    if rest.startswith("metadata."):
        return _metadata(identity.metadata, rest.removeprefix("metadata."))
    if rest.startswith("aliases."):
        accessor, _, field_name = rest.removeprefix("aliases.").partition(".")
        alias = next((a for a in identity.aliases if a.mount_accessor == accessor), None)
        if alias is None:
            raise _NotFound(rest)
        if field_name == "id":
            return alias.id
        if field_name == "name":
            if not alias.name:
                raise _NotFound(rest)
            return alias.name
        if field_name.startswith("metadata."):
            return _metadata(alias.metadata, field_name.removeprefix("metadata."))
        if field_name.startswith("custom_metadata."):
            return _metadata(alias.custom_metadata, field_name.removeprefix("custom_metadata."))
    raise _NotFound(rest)


def _group_value(identity: Identity, rest: str) -> str:
    selector, _, tail = rest.partition(".")
    key, _, field_name = tail.partition(".")
    if selector not in ("ids", "names") or not field_name:
        raise _NotFound(rest)
    attribute = "id" if selector == "ids" else "name"
    group = next((g for g in identity.groups if getattr(g, attribute) == key), None)
    if group is None:
        raise _NotFound(rest)
    if field_name == "id":
        return group.id
    if field_name == "name":
        if not group.name:
            raise _NotFound(rest)
        return group.name
    if field_name.startswith("metadata."):
        return _metadata(group.metadata, field_name.removeprefix("metadata."))
    raise _NotFound(rest)


def _fill(name: str, identity: Identity | None) -> str:
    name = name.strip()
    if name.startswith("identity.entity."):
        if identity is None:
            raise _NotFound(name)
        return _entity_value(identity, name.removeprefix("identity.entity."))
    if name.startswith("identity.groups."):
        if identity is None:
            raise _NotFound(name)
        return _group_value(identity, name.removeprefix("identity.groups."))
    raise _NotFound(name)


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


def _check_template(label: str) -> None:
    """Refuse unbalanced ``{{`` / ``}}``, as the server does when a policy is written."""
    rest = _TEMPLATE.sub("", label)
    if "{{" in rest or "}}" in rest:
        raise PolicyParseError(
            f'failed to parse policy: path "{label}": unbalanced templating characters'
        )


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
        if "*" in _TEMPLATE.sub("", pattern)[:-1]:
            raise PolicyParseError(
                f'failed to parse policy: path "{label}": "*" is allowed only at the end'
            )
        rules.append(PathRule(pattern, _capabilities(label, body), name))
    return rules


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

    ``identity`` fills the templated patterns: an :class:`Identity` (a token
    with an entity), None (no entity: templated patterns are left out, as the
    server does), or :data:`UNKNOWN_IDENTITY` (a role or user whose logins may
    be any entity: decisions a templated pattern could change say so).
    """

    def __init__(
        self,
        rules: Iterable[PathRule] = (),
        *,
        root: bool = False,
        identity: Identity | _Unknown | None = None,
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
            elif isinstance(identity, _Unknown):
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
