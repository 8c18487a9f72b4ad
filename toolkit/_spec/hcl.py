"""The one HCL reader: ACL and password policies on both sides, and the CLI's configuration files.

:func:`parse_hcl` reads a policy document, HCL or JSON, into plain Python values
(blocks as lists of ``{label: body}``), raising :class:`PolicyParseError` with the
parser's reason; :func:`hcl_document` is python-hcl2's own reading, used for the CLI
configuration files (:mod:`toolkit._config`); :func:`blocks` walks the labelled
blocks of either form.

Who reads what: a plain policy (attributes and one-label blocks of literal strings)
goes to HashiCorp's HCL, compiled (``pygohcl``), when it is installed; anything else to
python-hcl2's grammar, parsed by a lark LALR parser built without position tracking and
kept in the user's private cache folder; JSON to orjson, ``json`` deciding what orjson
refuses. ``tests/test_acl_parsing.py`` holds all of them to python-hcl2's own reading.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

__all__ = ["PolicyParseError", "blocks", "hcl_document", "parse_hcl"]


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
        handle, temporary = tempfile.mkstemp(dir=folder)  # 0600, renamed once written
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
        return int(str(node.children[0]))  # digits, and a "-" before them at most
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
