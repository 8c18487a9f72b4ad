"""The one walker of a LIST tree (the lease lookup tree, above all), in waves.

:func:`walk_tree` lists the folders of one level concurrently (a wave), then
the folders found under them, and so on. For each folder it yields the leaf
keys in chunks of at most ``chunk`` keys, parsed from the answer with ijson's
C parser as the keys come, so a folder of a million leases is never held as a
decoded list beside its body.

- ``LIST`` refused (405) is asked again as ``GET ?list=true``; a 404 is an
  empty folder (the real server's answer).
- A folder that cannot be read (403, 5xx after the layer's retries, a body
  that is not a listing) is recorded in :attr:`Walk.unread` with its status and
  the walk goes on: the caller files it as incomplete coverage, never as
  "nothing there".
- A walk has a depth limit, and a folder key already met on the same path
  (``a/`` under ``a/``), a ``.`` or ``..`` segment, an empty segment or a
  control character is refused and recorded, never listed: a server that
  lists ``a/`` under every ``a/`` cannot hang the walk, and a listed key can
  never point a LIST outside the tree.

OpenBao ignores ``after``/``limit`` on ``sys/leases/lookup`` and
``auth/token/accessors``; :func:`stream_keys` is also what those whole
answers are parsed with.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from .._coverage import Coverage, Gap
from .._errors import APIError, DecodeError, InputError, one_line
from .._http import HTTPLayer, Request, Response
from ._base import error_of

__all__ = ["MAX_DEPTH", "Walk", "stream_key_batches", "stream_keys", "walk_tree"]

# Deeper than any lease id an engine makes (``auth/<method>/<path...>/<id>``).
MAX_DEPTH = 32
# Folders one walk lists at most. A lease tree has a folder a role (thousands on a
# large server); a server that lists the same folder keys under every folder grows a
# tree of every order of them (12 keys: a billion folders), which no walk may follow.
MAX_FOLDERS = 100_000
# Leaf keys handed over at a time.
CHUNK = 10_000
# Answers to a LIST that are reported, not raised: empty (404), refused (405),
# not permitted (403). The server's own failures (5xx) are tried again by the
# layer and then raised: a walk stops there (and resumes from its checkpoint).
_LIST_REPORTED = frozenset({403, 404, 405})


@dataclass
class Walk:
    """What a walk read: folders listed, leaf keys handed over, what it could not read."""

    folders: int = 0
    leaves: int = 0
    # Each folder the walk could not read, and why (status None: a key refused before
    # it was sent, or a limit).
    unread: list[Gap] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.unread

    def coverage(self, view: str, asked: Sequence[str] = ()) -> dict[str, Any]:
        """The coverage record (:class:`toolkit.Coverage`) filed in
        ``frame.attrs["coverage"]``: what ``view`` was asked, read, and could not read."""
        record = Coverage(view, asked=list(asked), read=self.leaves, gaps=list(self.unread))
        return record.as_dict()


def stream_keys(content: bytes) -> Iterator[str]:
    """The keys of a LIST answer's body (``data.keys`` or a bare ``keys``), one at a time,
    parsed incrementally (ijson's yajl2 C backend). Raises :class:`DecodeError` on a body
    that is not JSON."""
    for batch in stream_key_batches(content):
        yield from batch


# How deep a LIST answer may nest. Its shape is three levels deep; ijson keeps the
# path of every open level as text, so its memory grows with the square of the
# nesting: 20,000 open brackets took a gigabyte, 200,000 (a 200 kB answer) all of it.
MAX_NESTING = 64
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*+"')
_BRACKET = re.compile(rb"[\[\]{}]")


def _check_nesting(content: bytes) -> None:
    """Raise :class:`DecodeError` when ``content`` nests deeper than ``MAX_NESTING``
    (brackets inside strings do not count). An answer with few brackets, as every
    list of keys is, is passed by two counts in C."""
    if content.count(b"[") + content.count(b"{") <= MAX_NESTING:
        return
    depth = 0
    for bracket in _BRACKET.findall(_JSON_STRING.sub(b"", content)):
        depth += 1 if bracket in (b"[", b"{") else -1
        if depth > MAX_NESTING:
            raise DecodeError(
                f"a LIST answer nests deeper than {MAX_NESTING} levels: not a list of keys"
            )


def stream_key_batches(content: bytes, size: int = CHUNK) -> Iterator[list[str]]:
    """:func:`stream_keys` in lists of at most ``size`` keys: the keys are taken from
    the parser and made strings in C (``islice``, ``map``), so a folder of a million
    keys costs no Python-level step a key (that step was most of the client's time
    counting a million leases)."""
    import ijson  # the C backend loads with it; kept off `import toolkit`

    _check_nesting(content)
    yielded = False
    try:
        for prefix in ("data.keys.item", "keys.item"):
            if yielded:
                return
            items = ijson.items(io.BytesIO(content), prefix, use_float=True)
            while batch := list(map(str, islice(items, size))):
                yielded = True
                yield batch
    except ijson.JSONError as exc:
        raise DecodeError(f"a LIST answer is not valid JSON: {exc}") from None


def walk_tree(
    http: HTTPLayer,
    starts: Sequence[str],
    *,
    path_of: Callable[[str], str],
    walk: Walk | None = None,
    max_depth: int = MAX_DEPTH,
    max_folders: int = MAX_FOLDERS,
    chunk: int = CHUNK,
    skip: Callable[[str], bool] | None = None,
) -> Iterator[tuple[str, list[str]]]:
    """``(folder, leaf keys)`` for every folder under ``starts``, wave by wave.

    ``path_of(folder)`` is the API path that lists ``folder`` (it encodes each
    segment). A folder with more than ``chunk`` leaves comes in several
    pairs, keys in the server's order. ``walk`` collects the counts and what
    could not be read. ``skip(folder)`` true leaves a folder's leaves out (a
    resumed walk's folders already done) while still walking under it. At most
    ``max_folders`` folders are listed; the folders past that limit are one gap of
    ``walk``, never walked and never silently left out.
    """
    if max_depth < 1:
        raise InputError(f"max_depth must be at least 1, not {max_depth}")
    if max_folders < 1:
        raise InputError(f"max_folders must be at least 1, not {max_folders}")
    if chunk < 1:
        raise InputError(f"chunk must be at least 1, not {chunk}")
    seen = walk if walk is not None else Walk()
    level = [s for s in dict.fromkeys(starts)]
    depth = 0
    beyond: list[str] = []  # the first folder past the limit, and how many there were
    over = 0
    if len(level) > max_folders:
        beyond, over = level[max_folders : max_folders + 1], len(level) - max_folders
        level = level[:max_folders]
    taken = len(level)  # folders listed, or queued to be
    while level:
        depth += 1
        calls = [Request("LIST", path_of(f), ok_statuses=_LIST_REPORTED) for f in level]
        answers = list(http.many(calls))
        folders, level = level, []
        for folder, response in zip(folders, answers, strict=True):
            content = _listing(http, folder, path_of, response, seen, start=depth == 1)
            if content is None:
                continue
            seen.folders += 1
            dropping = skip is not None and skip(folder)
            try:
                for batch in stream_key_batches(content, chunk):
                    subfolders = [k for k in batch if k.endswith("/")]
                    if subfolders:
                        for key in subfolders:
                            refused = _refusal(folder, key, depth, max_depth)
                            if refused:
                                seen.unread.append(Gap(folder + key, None, refused))
                            elif taken >= max_folders:
                                beyond = beyond or [folder + key]
                                over += 1
                            else:
                                taken += 1
                                level.append(folder + key)
                        batch = [k for k in batch if not k.endswith("/")]
                    if batch and not dropping:
                        seen.leaves += len(batch)
                        yield folder, batch
            except DecodeError as exc:
                seen.unread.append(Gap(folder, response.status_code, str(exc)))
            del content
        del answers
    if over:
        seen.unread.append(
            Gap(
                beyond[0],
                None,
                f"not walked, nor {over - 1} more folder(s) found past it: a walk lists "
                f"at most {max_folders} folders (max_folders)",
            )
        )


def _listing(
    http: HTTPLayer,
    folder: str,
    path_of: Callable[[str], str],
    response: Response,
    seen: Walk,
    *,
    start: bool = False,
) -> bytes | None:
    """The body of ``folder``'s listing, asked again as ``GET ?list=true`` when LIST is
    refused; None for an empty folder, or one recorded as unread. A start folder
    that is not permitted raises :class:`~toolkit.PermissionDenied`: nothing at all
    could be read, and an empty answer would read as "nothing there"."""
    status = response.status_code
    if status == 405:
        try:
            response = http.request(
                "GET", path_of(folder), params={"list": "true"}, ok_statuses=_LIST_REPORTED
            )
        except APIError as exc:
            seen.unread.append(Gap(folder, exc.status, str(exc)))
            return None
        status = response.status_code
    if status == 404:
        # An empty folder answers {"errors":[]}; a 404 with words is not one (the
        # layer has raised already for a missing namespace or mount).
        error = error_of(http, response)
        if not error.messages:
            return None
        if start:
            explained = getattr(http, "explained", None)
            raise explained(error) if explained is not None else error
        seen.unread.append(Gap(folder, 404, one_line(str(error))))
        return None
    if status == 204 or (status < 300 and not response.content):
        return None
    if status == 403 and start:
        # The layer's own error, told and worded as every other refusal (one line,
        # a refused token apart from a missing permission, the credentials masked).
        error = error_of(http, response)
        explained = getattr(http, "explained", None)
        raise explained(error) if explained is not None else error
    if status >= 300:
        why = {403: "not permitted", 405: "LIST refused, and GET ?list=true as well"}
        seen.unread.append(Gap(folder, status, why.get(status, f"answered {status}")))
        return None
    return response.content


def _refusal(folder: str, key: str, depth: int, max_depth: int) -> str:
    """Why the folder key ``key`` listed under ``folder`` is not walked ('' to walk it)."""
    name = key[:-1]
    if not name or name in (".", "..") or "/" in name:
        return f"refused the key {key!r}: not one path segment"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "refused a key holding a control character"
    if key in _segments(folder):
        return f"refused {key!r}: met before on the same path (a cycle)"
    if depth >= max_depth:
        return f"not walked: deeper than the depth limit of {max_depth}"
    return ""


def _segments(folder: str) -> set[str]:
    return {part + "/" for part in folder.split("/") if part}
