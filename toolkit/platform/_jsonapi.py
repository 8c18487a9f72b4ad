"""JSON:API for the platform client: flattening resources, and following pages.

Pagination lives here and nowhere else: the first page tells the page count,
the remaining pages are fetched concurrently (:meth:`HTTPLayer.many`, bounded), and records come back in server order. Several lists are read
together: first pages of all, then the rest of all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from .._frames import Schema, frame_from_columns
from .._gc import collector_paused
from .._http import HTTPLayer, Request, decode_json
from .._progress import progress

__all__ = [
    "MAX_PAGE_SIZE",
    "FrameBuilder",
    "Listing",
    "PageSink",
    "flatten",
    "get_document",
    "iter_resources",
    "read_lists",
    "resources_frame",
    "snake",
]

# The largest page the platform serves; fewer requests for the same records.
MAX_PAGE_SIZE = 100
MEDIA_TYPE = "application/vnd.api+json"


def snake(name: str) -> str:
    return name.replace("-", "_")


def flatten(resource: Mapping[str, Any]) -> dict[str, Any]:
    """One JSON:API resource as a flat dict: id, attributes in snake_case, related ids.

    A to-one relationship ``workspace`` becomes ``workspace_id``; a to-many
    ``allowed-workspaces`` becomes ``allowed_workspace_ids`` (a list).
    """
    flat: dict[str, Any] = {"id": resource.get("id")}
    for key, value in (resource.get("attributes") or {}).items():
        flat[snake(key)] = value
    for key, rel in (resource.get("relationships") or {}).items():
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
    :class:`FrameBuilder`, or anything else that takes them a page at a time."""

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


def get_document(http: HTTPLayer, path: str, params: Mapping[str, Any] | None = None) -> Any:
    return http.json("GET", path, params=params)


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
            self.builder.add(data)
        else:
            self.data.extend(data)
        self.included.extend(document.get("included") or [])


def read_lists(
    http: HTTPLayer,
    lists: Sequence[tuple[str, Mapping[str, Any] | None]],
    *,
    page_size: int = MAX_PAGE_SIZE,
    show_progress: bool = False,
    desc: str = "reading pages",
    builders: Sequence[PageSink] | None = None,
) -> list[Listing]:
    """Every page of each ``(path, params)`` list, in two concurrent waves.

    The first pages of all lists go out together; they tell each list's page
    count, and then all remaining pages of all lists go out together.
    ``show_progress`` shows a bar over the lists, each counted once complete.
    With ``builders`` (one per list), each page's resources go into its list's
    builder as the page arrives, while later pages are still on their way.
    """
    with collector_paused():
        firsts = http.many(
            Request("GET", path, params=_page_params(params, 1, page_size))
            for path, params in lists
        )
        listings: list[Listing] = []
        rest: list[Request] = []
        owners: list[Listing] = []
        for k, ((path, params), response) in enumerate(zip(lists, firsts, strict=True)):
            document = decode_json(response) or {}
            listing = Listing(meta=dict(document.get("meta") or {}))
            listing.builder = builders[k] if builders is not None else None
            listing.add(document)
            listings.append(listing)
            pagination = listing.meta.get("pagination") or {}
            for number in range(2, int(pagination.get("total-pages") or 1) + 1):
                rest.append(Request("GET", path, params=_page_params(params, number, page_size)))
                owners.append(listing)
        done = progress(
            _completed(http.many(rest), owners, listings),
            desc=desc,
            total=len(listings),
            enabled=show_progress,
        )
        for _ in done:
            pass
    return listings


def _completed(
    pages: Iterable[Any], owners: list[Listing], listings: list[Listing]
) -> Iterator[Listing]:
    """Add each page to its list; yield each list once all its pages are in
    (the pages come in order, a list's pages one after another)."""
    last = {id(owner): k for k, owner in enumerate(owners)}
    for listing in listings:
        if id(listing) not in last:
            yield listing  # one page: complete with the first wave
    for k, (owner, response) in enumerate(zip(owners, pages, strict=True)):
        owner.add(decode_json(response))
        if last[id(owner)] == k:
            yield owner


def iter_resources(
    http: HTTPLayer,
    path: str,
    params: Mapping[str, Any] | None = None,
    *,
    page_size: int = MAX_PAGE_SIZE,
    included: list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> Iterator[dict[str, Any]]:
    """Every resource of a paginated list, in order, following all pages.

    ``included`` and ``meta``, when given, collect the documents' ``included``
    resources and the first page's ``meta``.
    """
    (listing,) = read_lists(http, [(path, params)], page_size=page_size)
    if included is not None:
        included.extend(listing.included)
    if meta is not None:
        meta.update(listing.meta)
    yield from listing.data
