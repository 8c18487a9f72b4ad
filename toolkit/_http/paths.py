"""The one rule for putting a name into an API address.

Every path parameter a caller gives and every key taken from a server's answer
(a listed lease folder, a policy name, a certificate serial) goes into a URL
through :func:`segment`, which refuses what the address would not carry as
written:

- ``.`` and ``..``: yarl (and any server) removes dot segments, so
  ``policies.delete("acl", "..")`` would delete at ``/sys/policies/``;
- an empty name where a name is due (``/sys/policies/acl/`` is the list);
- control characters (a newline read from a file, a NUL), and text that is not
  valid Unicode (a lone surrogate cannot be encoded);

and percent-encodes everything else, ``/``, ``?``, ``#`` and ``%`` included, so
that a name is always exactly one segment. A path of several segments the
operator gives (a mount, a lease prefix) goes through :func:`segments`, each of
its parts by the same rule. :func:`api_path` fills an endpoint's template
(``"/sys/policies/{kind}/{name}"``) that way, and :func:`check_path` is the last
look at the whole path before a request leaves: it must stay under the API
prefix with nothing for the URL library to rewrite.

A refusal is an :class:`~toolkit.InputError` that names the parameter (or says
the server listed the key), never the value, which could be a secret; nothing
is sent.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from string import Formatter
from typing import Any
from urllib.parse import quote, urlencode

from .._errors import InputError

__all__ = ["api_path", "check_path", "query_string", "segment", "segments", "yarl_url"]

# C0 and C1 controls, DEL, and lone surrogates (which have no UTF-8 encoding).
_UNSENDABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
# A dot segment as a server or yarl reads it once percent-decoded.
_DOTS = frozenset({".", "..", "%2e", "%2e%2e", ".%2e", "%2e."})


def segment(value: object, field: str) -> str:
    """``value`` as exactly one path segment, percent-encoded (``/`` too).

    Raises :class:`InputError` naming ``field`` (the parameter, or where a
    server's key came from) when ``value`` is missing, empty, ``.`` or ``..``,
    or holds a control character.
    """
    if value is None:
        raise InputError(f"{field} is required: give a name")
    text = value if isinstance(value, str) else str(value)
    if not text:
        raise InputError(f"{field} is empty: give a name")
    if text in (".", ".."):
        raise InputError(
            f"{field} is '.' or '..', which an address cannot carry as a name: give the name itself"
        )
    if _UNSENDABLE.search(text):
        raise InputError(
            f"{field} holds a control character or invalid text (a newline read from a file?): "
            "strip it and try again"
        )
    return quote(text, safe="")


def segments(value: object, field: str) -> str:
    """A path of one or more segments (``"databases/eu"``, a lease prefix), each
    one :func:`segment` by the same rule, joined by ``/``.

    Leading slashes and one trailing slash (a folder's) are dropped: the
    template places them. An empty part anywhere else (``a//b``, ``a//``) is
    refused like an empty name.
    """
    if value is None:
        raise InputError(f"{field} is required: give a path")
    text = (value if isinstance(value, str) else str(value)).lstrip("/")
    text = text[:-1] if text.endswith("/") else text
    if not text:
        raise InputError(f"{field} is empty: give a path")
    parts = text.split("/")
    if "" in parts:
        raise InputError(f"{field} has an empty part ('//'): remove the doubled '/' and try again")
    return "/".join(segment(part, field) for part in parts)


@functools.cache
def _template(template: str) -> tuple[tuple[str, str | None, str], ...]:
    return tuple(
        (literal, name, spec or "") for literal, name, spec, _ in Formatter().parse(template)
    )


def api_path(template: str, **values: object) -> str:
    """An endpoint's path from its template: each ``{name}`` filled with
    :func:`segment` of ``values[name]``, each ``{name:path}`` with :func:`segments`.

    ``api_path("/sys/policies/{kind}/{name}", kind="acl", name="ops team")`` is
    ``/sys/policies/acl/ops%20team``. The error of a bad value names its key.
    """
    parts: list[str] = []
    for literal, name, spec in _template(template):
        parts.append(literal)
        if name is not None:
            value = values[name]
            parts.append(segments(value, name) if spec == "path" else segment(value, name))
    return "".join(parts)


def check_path(method: str, prefix: str, path: str) -> None:
    """The last look at a request's path before it is sent: ``prefix + path``
    must stay under ``prefix``, with no dot segment, query, fragment or control
    character for the URL library to rewrite or cut.

    Paths built with :func:`segment` always pass; this catches one built
    another way. Raises :class:`InputError` (the path is not shown: it may
    hold a name that is a secret).
    """
    bad = not path.startswith("/") or "?" in path or "#" in path
    if bad or _UNSENDABLE.search(path) or any(part.lower() in _DOTS for part in path.split("/")):
        raise InputError(
            f"{method} under {prefix}: the path would leave {prefix} or be rewritten "
            "('.', '..', '?', '#' or a control character in a segment); "
            "build it with toolkit._http.paths.segment"
        )


def query_string(params: Mapping[str, Any]) -> str:
    """A query string of ``params`` (a list or tuple repeats its key; true and false in
    lower case, as both APIs read them)."""
    pairs = []
    for key, value in params.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            pairs.append((key, str(v).lower() if isinstance(v, bool) else str(v)))
    return urlencode(pairs)


@functools.cache
def yarl_url() -> Any:
    """yarl's URL class: aiohttp's, loaded with it on first use (not at import)."""
    from yarl import URL

    return URL
