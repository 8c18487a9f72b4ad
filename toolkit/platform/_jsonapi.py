"""JSON:API for the platform client: flattening resources, and following pages.

Pagination lives here and nowhere else: the first page tells the page count,
the remaining pages are fetched concurrently (:meth:`HTTPLayer.many`, bounded
and pipelined), and records come back in server order. Several lists are read
together: first pages of all, then the rest of all.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from .._frames import Schema, frame_from_columns
from .._http import Call, HTTPLayer, decode_json
from .._progress import progress

__all__ = [
    "MAX_PAGE_SIZE",
    "Listing",
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


# How many resources are read to learn the attribute and relationship names.
_SAMPLE = 64


def resources_frame(
    resources: Iterable[Mapping[str, Any]],
    schema: Schema,
    constants: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The schema's frame of JSON:API resources: the columns :func:`flatten` names.

    Each column is taken straight from the resources (one list each), without a
    flat dict a record; ``constants`` fill columns the resources do not carry
    (``pool_id`` of a pool's agents). A column not seen in the first resources
    falls back to :func:`flatten` record by record.
    """
    docs = resources if isinstance(resources, list) else list(resources)
    attrs = [r.get("attributes") or {} for r in docs]
    attribute_names: dict[str, str] = {}
    related_names: dict[str, tuple[str, bool]] = {}
    for r, a in zip(docs[:_SAMPLE], attrs[:_SAMPLE], strict=True):
        for key in a:
            attribute_names.setdefault(snake(key), key)
        for key, rel in (r.get("relationships") or {}).items():
            if isinstance(rel, Mapping) and "data" in rel:
                name = snake(key)
                if isinstance(rel["data"], list):
                    base = name[:-1] if name.endswith("s") else name
                    related_names.setdefault(f"{base}_ids", (key, True))
                else:
                    related_names.setdefault(f"{name}_id", (key, False))
    columns: dict[str, list[Any]] = {}
    for col in schema.columns:
        key = col.key
        if constants is not None and key in constants:
            columns[col.name] = [constants[key]] * len(docs)
        elif key == "id":
            columns[col.name] = [r.get("id") for r in docs]
        elif key in attribute_names:
            original = attribute_names[key]
            columns[col.name] = [a.get(original) for a in attrs]
        elif key in related_names:
            original, many = related_names[key]
            columns[col.name] = [_related(r, original, many) for r in docs]
        else:
            columns[col.name] = [flatten(r).get(key) for r in docs]
    return frame_from_columns(columns, schema)


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

    def add(self, document: Any) -> None:
        document = document or {}
        self.data.extend(document.get("data") or [])
        self.included.extend(document.get("included") or [])


def read_lists(
    http: HTTPLayer,
    lists: Sequence[tuple[str, Mapping[str, Any] | None]],
    *,
    page_size: int = MAX_PAGE_SIZE,
    show_progress: bool = False,
    desc: str = "reading pages",
) -> list[Listing]:
    """Every page of each ``(path, params)`` list, in two concurrent waves.

    The first pages of all lists go out together; they tell each list's page
    count, and then all remaining pages of all lists go out together.
    ``show_progress`` shows a bar over the second wave.
    """
    firsts = http.many(
        Call("GET", path, params=_page_params(params, 1, page_size)) for path, params in lists
    )
    listings: list[Listing] = []
    rest: list[Call] = []
    owners: list[Listing] = []
    for (path, params), response in zip(lists, firsts, strict=True):
        document = decode_json(response) or {}
        listing = Listing(meta=dict(document.get("meta") or {}))
        listing.add(document)
        listings.append(listing)
        pagination = listing.meta.get("pagination") or {}
        for number in range(2, int(pagination.get("total-pages") or 1) + 1):
            rest.append(Call("GET", path, params=_page_params(params, number, page_size)))
            owners.append(listing)
    pages = progress(http.many(rest), desc=desc, total=len(rest), enabled=show_progress)
    for listing, response in zip(owners, pages, strict=True):
        listing.add(decode_json(response))
    return listings


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
