"""JSON:API for the platform client: flattening resources, and following pages.

Pagination lives here and nowhere else: each list is followed until the
server's own ``next-page`` is empty, within a limit of pages; the first page's
``total-pages`` only says how many pages to ask for at once (concurrently,
:meth:`HTTPLayer.many`, bounded), and records come back in server order.
Several lists are read together: first pages of all (with the pages a count
the server gave elsewhere foretells), then the rest of all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from typing import Any, Optional, Protocol

import pandas as pd

from .._errors import DecodeError
from .._frames import Schema, frame_from_columns
from .._gc import collector_paused
from .._http import HTTPLayer, Request, decode_json
from .._progress import progress
from .._spec.jsonapi import MAX_PAGE_SIZE

__all__ = [
    "MAX_PAGES",
    "MAX_PAGE_SIZE",
    "PAGES_AHEAD",
    "FrameBuilder",
    "Listing",
    "PageSink",
    "flatten",
    "resource_of",
    "iter_resources",
    "read_lists",
    "resources_frame",
    "snake",
]


def snake(name: str) -> str:
    return name.replace("-", "_")


def flatten(resource: Any) -> dict[str, Any]:
    """One JSON:API resource as a flat dict: id, attributes in snake_case, related ids.

    A to-one relationship ``workspace`` becomes ``workspace_id``; a to-many
    ``allowed-workspaces`` becomes ``allowed_workspace_ids`` (a list).
    """
    if not isinstance(resource, Mapping):
        raise DecodeError("the server's JSON:API answer holds a resource that is not an object")
    attributes = resource.get("attributes") or {}
    relationships = resource.get("relationships") or {}
    if not isinstance(attributes, Mapping) or not isinstance(relationships, Mapping):
        raise DecodeError(
            "the server's JSON:API answer holds attributes or relationships that are not an object"
        )
    flat: dict[str, Any] = {"id": resource.get("id")}
    for key, value in attributes.items():
        flat[snake(key)] = value
    for key, rel in relationships.items():
        if not isinstance(rel, Mapping) or "data" not in rel:
            continue
        data = rel["data"]
        name = snake(key)
        if isinstance(data, list):
            base = name[:-1] if name.endswith("s") else name
            flat[f"{base}_ids"] = [d.get("id") for d in data if isinstance(d, Mapping)]
        elif isinstance(data, Mapping):
            flat[f"{name}_id"] = data.get("id")
        else:
            flat[f"{name}_id"] = None
    return flat


def _related(resource: Mapping[str, Any], name: str, many: bool) -> Any:
    rel = (resource.get("relationships") or {}).get(name)
    if not isinstance(rel, Mapping):
        return None
    data = rel.get("data")
    if many:
        return (
            [d.get("id") for d in data if isinstance(d, Mapping)]
            if isinstance(data, list)
            else None
        )
    return data.get("id") if isinstance(data, Mapping) else None


class PageSink(Protocol):
    """Where :func:`read_lists` puts each page's resources as it arrives: a
    :class:`FrameBuilder`, or anything else that takes them a page at a time.

    A sink that reads one attribute of each resource and nothing else says so
    with an ``attribute`` (its name in the answer) and an ``add_values``: it
    is then handed each page as that attribute's values, in order (None for a
    resource without it), read by :func:`_page_values` without decoding the rest.
    """

    def add(self, resources: Sequence[Mapping[str, Any]]) -> None: ...


# How many resources are read to learn the attribute and relationship names.
_SAMPLE = 64


class FrameBuilder:
    """A schema's frame of JSON:API resources, filled a page at a time.

    Each column is taken straight from the resources (one list each), without
    a flat dict a record, so a page's decoded documents can be let go as soon
    as it is added; ``constants`` fill columns the resources do not carry
    (``pool_id`` of a pool's agents). Where each column comes from (the id, an
    attribute, a relationship) is learnt from the first resources that show
    it; a column no resource has shown yet falls back to :func:`flatten`
    record by record.
    """

    def __init__(self, schema: Schema, constants: Mapping[str, Any] | None = None) -> None:
        self.schema = schema
        self.constants = dict(constants or {})
        self.columns: dict[str, list[Any]] = {c.name: [] for c in schema.columns}
        # column name -> ("attribute", original name) or ("related", original name, many)
        self._sources: dict[str, tuple[Any, ...]] = {}
        self._unknown = {
            c.name for c in schema.columns if c.key not in self.constants and c.key != "id"
        }

    def _learn(self, docs: Sequence[Mapping[str, Any]]) -> None:
        wanted = {c.key: c.name for c in self.schema.columns if c.name in self._unknown}
        for r in docs[:_SAMPLE]:
            for key in r.get("attributes") or {}:
                name = wanted.pop(snake(key), None)
                if name is not None:
                    self._sources[name] = ("attribute", key)
            for key, rel in (r.get("relationships") or {}).items():
                if isinstance(rel, Mapping) and "data" in rel:
                    flat = snake(key)
                    if isinstance(rel["data"], list):
                        base = flat[:-1] if flat.endswith("s") else flat
                        name = wanted.pop(f"{base}_ids", None)
                        many = True
                    else:
                        name = wanted.pop(f"{flat}_id", None)
                        many = False
                    if name is not None:
                        self._sources[name] = ("related", key, many)
            if not wanted:
                break
        self._unknown = set(wanted.values())

    def add(self, resources: Sequence[Mapping[str, Any]]) -> None:
        docs = resources
        if self._unknown and docs:
            self._learn(docs)
        attrs: list[Mapping[str, Any]] | None = None
        for col in self.schema.columns:
            key = col.key
            column = self.columns[col.name]
            source = self._sources.get(col.name)
            if key in self.constants:
                column.extend([self.constants[key]] * len(docs))
            elif key == "id":
                column.extend([r.get("id") for r in docs])
            elif source is not None and source[0] == "attribute":
                if attrs is None:
                    attrs = [r.get("attributes") or {} for r in docs]
                original = source[1]
                column.extend([a.get(original) for a in attrs])
            elif source is not None:
                _, original, many = source
                column.extend([_related(r, original, many) for r in docs])
            else:
                column.extend([flatten(r).get(key) for r in docs])

    def frame(self) -> pd.DataFrame:
        return frame_from_columns(self.columns, self.schema)


def resources_frame(
    resources: Iterable[Mapping[str, Any]],
    schema: Schema,
    constants: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The schema's frame of JSON:API resources: the columns :func:`flatten` names
    (see :class:`FrameBuilder`)."""
    builder = FrameBuilder(schema, constants)
    builder.add(resources if isinstance(resources, list) else list(resources))
    return builder.frame()


def resource_of(document: Any, what: str) -> dict[str, Any]:
    """The one resource a JSON:API document holds, flattened; ``{}`` for an empty
    answer (204 or ``data: null``), a :class:`DecodeError` naming ``what`` when the
    document is no object."""
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        raise DecodeError(f"the server's answer for {what} is not a JSON:API document")
    data = document.get("data")
    return flatten(data) if data else {}


def _page_params(params: Mapping[str, Any] | None, number: int, size: int) -> dict[str, Any]:
    merged = dict(params or {})
    merged["page[number]"] = number
    merged["page[size]"] = size
    return merged


@dataclass
class Listing:
    """All pages of one list: its resources in server order, the documents'
    ``included`` resources, and the first page's ``meta``."""

    data: list[dict[str, Any]] = field(default_factory=list)
    included: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    # When set, each page's resources go into it instead of ``data``.
    builder: PageSink | None = None

    def add(self, document: Any) -> None:
        document = document or {}
        data = document.get("data") or []
        if self.builder is not None:
            if data:
                self.builder.add(data)
        else:
            self.data.extend(data)
        self.included.extend(document.get("included") or [])


_AHEAD_OK = frozenset({404})
# The most pages one list is followed for (of 100 records: a million records): a
# server whose ``next-page`` never ends is refused here, not followed forever.
MAX_PAGES = 10_000
# The most pages of one list asked for at once on the word of its ``total-pages``,
# which is only a hint: a server that claims a billion pages costs this many
# requests at most, and an honest list of up to this many pages one round trip.
PAGES_AHEAD = 256


def _page_document(response: Any, path: str, number: int) -> dict[str, Any]:
    """A page's JSON:API document, or a :class:`DecodeError` naming the page."""
    document = decode_json(response)
    if document is None:
        return {}
    problem = _not_a_page(document)
    if problem:
        raise DecodeError(f"GET {path} page {number}: {problem}", method="GET", url=path)
    return document


def _page_values(
    response: Any, path: str, number: int, attribute: str
) -> tuple[dict[str, Any], list[Any]]:
    """A page's JSON:API document without its ``data``, and the value of
    ``attribute`` of each of its resources (None where a resource has none).

    Read by a decoder typed for just that (msgspec): the resources' other
    members are skipped, not built, a third of the time of decoding the page
    whole. The text must be UTF-8 and JSON throughout; the members skipped are
    not converted (a number past a float's range in a resource's id is not
    looked at). What the typed reading refuses (a resource that is not an
    object, attributes or relationships that are not one, NaN, text that is
    not UTF-8, nesting past its limit, which depends on the stack it runs on)
    is judged by decoding the page whole, as every other page is: the same
    answer, or the same :class:`DecodeError`.
    """
    content = response.content
    if response.status_code == 204 or not content:
        return {}, []
    try:
        str(content, "utf-8")  # msgspec does not look inside the strings it skips
        page = _values_decoder(attribute).decode(content)
    except (ValueError, RecursionError):  # msgspec's errors are ValueErrors, as bad UTF-8 is
        document = _page_document(response, path, number)
        data = document.pop("data", None) or []
        return document, [(r.get("attributes") or {}).get(attribute) for r in data]
    document = {
        key: value
        for key in ("meta", "links", "included")
        if (value := getattr(page, key)) is not None
    }
    problem = _not_a_page(document)
    if problem:
        raise DecodeError(f"GET {path} page {number}: {problem}", method="GET", url=path)
    return document, [None if r.attributes is None else r.attributes.value for r in page.data or ()]


@lru_cache(maxsize=8)
def _values_decoder(attribute: str) -> Any:
    """A msgspec decoder of a JSON:API list page that keeps, of each resource,
    ``attributes.<attribute>`` only (and checks that its relationships are an object)."""
    import msgspec

    attributes = msgspec.defstruct(
        "Attributes", [("value", Any, None)], rename={"value": attribute}
    )
    resource = msgspec.defstruct(
        "Resource",
        [
            ("attributes", Optional[attributes], None),  # noqa: UP045 - built at run time
            ("relationships", Optional[dict[str, msgspec.Raw]], None),  # noqa: UP045
        ],
    )
    page = msgspec.defstruct(
        "Page",
        [
            ("data", Optional[list[resource]], None),  # type: ignore[valid-type]  # noqa: UP045
            ("meta", Optional[dict[str, Any]], None),  # noqa: UP045
            ("links", Optional[dict[str, Any]], None),  # noqa: UP045
            ("included", Optional[list[Any]], None),  # noqa: UP045
        ],
    )
    return msgspec.json.Decoder(page)


def _not_a_page(document: Any) -> str:
    """What makes ``document`` no JSON:API list page ("" when nothing does)."""
    if type(document) is not dict:
        return "the answer is not a JSON:API document"
    for key, kind in (("data", list), ("meta", dict), ("links", dict), ("included", list)):
        value = document.get(key)
        if value is not None and type(value) is not kind:
            return f"its {key!r} is not {_KIND_NAMES[kind]}"
    pagination = (document.get("meta") or {}).get("pagination")
    if pagination is not None and type(pagination) is not dict:
        return "its 'meta.pagination' is not an object"
    # The types are compared directly: a page of 100 resources is checked in microseconds.
    for resource in chain(document.get("data") or (), document.get("included") or ()):
        if type(resource) is not dict:
            return "a resource is not an object"
        attributes = resource.get("attributes")
        relationships = resource.get("relationships")
        if (attributes is not None and type(attributes) is not dict) or (
            relationships is not None and type(relationships) is not dict
        ):
            return "a resource's attributes or relationships are not an object"
    return ""


_KIND_NAMES = {dict: "an object", list: "a list"}


def _pagination(document: Mapping[str, Any]) -> Mapping[str, Any]:
    pagination = (document.get("meta") or {}).get("pagination")
    return pagination if isinstance(pagination, Mapping) else {}


def _next_page(document: Mapping[str, Any], path: str, number: int) -> int | None:
    """The page after ``number`` as the server names it (``meta.pagination.next-page``,
    else ``links.next``, else ``total-pages``), or None at the end. Pages must
    follow one by one."""
    pagination = _pagination(document)
    links = document.get("links") or {}
    if "next-page" in pagination:
        named = pagination["next-page"]
    elif "next" in links:
        named = number + 1 if links["next"] else None
    else:
        # Neither says: the count alone, never past the limit of pages (not a silent end).
        named = number + 1 if number < _hint(document) else None
    if named is None or named == "":
        return None
    if isinstance(named, str) and named.isdigit():
        named = int(named)
    if type(named) is not int or named != number + 1:
        raise DecodeError(
            f"GET {path}: page {number} names {str(named)[:40]!r} as the next page, "
            f"not {number + 1}: the server's paging is out of order",
            method="GET",
            url=path,
        )
    return named


def _hint(document: Mapping[str, Any]) -> int:
    """The server's ``total-pages``, for planning only (0 when it is not a count)."""
    total = _pagination(document).get("total-pages")
    if isinstance(total, str) and total.isdigit():
        total = int(total)
    return total if type(total) is int and total > 0 else 0


@dataclass
class _Follow:
    """Where one list's paging stands: the next page the server named, and its hint."""

    listing: Listing
    path: str
    params: Mapping[str, Any] | None
    next: int | None
    hint: int

    def planned(self, max_pages: int) -> list[int]:
        """The pages to ask for in the next wave: from ``next`` on, as far as the
        hint says (bounded), else just ``next``."""
        assert self.next is not None
        if self.next > max_pages:
            raise DecodeError(
                f"GET {self.path}: the server names more than {max_pages} pages; "
                "if the list really is that long, pass a larger max_pages",
                method="GET",
                url=self.path,
            )
        last = min(max(self.hint, self.next), self.next + PAGES_AHEAD - 1, max_pages)
        return list(range(self.next, last + 1))


def read_lists(
    http: HTTPLayer,
    lists: Sequence[tuple[str, Mapping[str, Any] | None]],
    *,
    page_size: int = MAX_PAGE_SIZE,
    show_progress: bool = False,
    desc: str = "reading pages",
    builders: Sequence[PageSink] | None = None,
    max_pages: int = MAX_PAGES,
    expected_pages: Sequence[int] | None = None,
) -> list[Listing]:
    """Every page of each ``(path, params)`` list, in concurrent waves.

    The first pages of all lists go out together. Each list is then followed
    until the server's own ``next-page`` (or ``links.next``) is empty, never
    past ``max_pages``: its ``total-pages`` only says how many pages to ask
    for at once (up to :data:`PAGES_AHEAD`), and a page past the end the
    server names is dropped. ``expected_pages`` (one a list) is the same kind
    of hint known before the first page, from a count the server gave
    elsewhere (a pool's ``agent-count``): those pages go out with the first.
    ``show_progress`` shows a bar over the lists, each counted once complete.
    With ``builders`` (one per list), each page's resources go into its list's
    builder as the page arrives.
    """
    hints = list(expected_pages) if expected_pages is not None else [0] * len(lists)
    with collector_paused():
        listings: list[Listing] = []
        following: list[_Follow] = []
        for k, ((path, params), hint) in enumerate(zip(lists, hints, strict=True)):
            listing = Listing(builder=builders[k] if builders is not None else None)
            listings.append(listing)
            following.append(_Follow(listing, path, params, 1, max(0, hint)))
        done = progress(
            _follow_pages(http, following, page_size, max_pages),
            desc=desc,
            total=len(listings),
            enabled=show_progress,
        )
        for _ in done:
            pass
    return listings


def _follow_pages(
    http: HTTPLayer, following: list[_Follow], page_size: int, max_pages: int
) -> Iterator[Listing]:
    """Waves of the lists' pages from the first; yields each list once its paging has ended."""
    open_lists = list(following)
    while open_lists:
        plans = [(s, s.planned(max_pages)) for s in open_lists]
        # A page asked for on the hint alone may be past the end: a 404 there is no error.
        requests = [
            Request(
                "GET",
                s.path,
                params=_page_params(s.params, n, page_size),
                ok_statuses=_AHEAD_OK if n > pages[0] else frozenset(),
            )
            for s, pages in plans
            for n in pages
        ]
        answers = iter(http.many(requests))
        for state, pages in plans:
            for number in pages:
                response = next(answers)
                if state.next != number:
                    continue  # past the end the server named: dropped
                if response.status_code == 404:
                    raise DecodeError(
                        f"GET {state.path}: page {number}, which the server named as the "
                        "next, answered 404",
                        method="GET",
                        url=state.path,
                    )
                sink = state.listing.builder
                attribute = getattr(sink, "attribute", None)
                if attribute is not None:
                    document, values = _page_values(response, state.path, number, attribute)
                    sink.add_values(values)  # type: ignore[union-attr]
                else:
                    document = _page_document(response, state.path, number)
                if number == 1:
                    # The list's meta is its first page's; its count of pages, once
                    # read, is the server's word, not the caller's.
                    state.listing.meta = dict(document.get("meta") or {})
                    state.hint = _hint(document) or state.hint
                state.listing.add(document)
                state.next = _next_page(document, state.path, number)
            if state.next is None:
                yield state.listing
        open_lists = [s for s in open_lists if s.next is not None]


def iter_resources(
    http: HTTPLayer,
    path: str,
    params: Mapping[str, Any] | None = None,
    *,
    page_size: int = MAX_PAGE_SIZE,
    included: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
    max_pages: int = MAX_PAGES,
) -> Iterator[dict[str, Any]]:
    """Every resource of a paginated list, in order, following all pages.

    ``included`` and ``meta``, when given, collect the documents' ``included``
    resources and the first page's ``meta``.
    """
    (listing,) = read_lists(http, [(path, params)], page_size=page_size, max_pages=max_pages)
    if included is not None:
        included.extend(listing.included)
    if meta is not None:
        meta.update(listing.meta)
    yield from listing.data
