"""JSON:API for the platform client: flattening resources, and following pages.

Pagination lives here and nowhere else: the first page tells the page count,
the remaining pages are fetched concurrently (bounded by the HTTP layer), and
records come back in server order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .._http import HTTPLayer

__all__ = ["MAX_PAGE_SIZE", "flatten", "get_document", "iter_resources", "snake"]

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


def get_document(http: HTTPLayer, path: str, params: Mapping[str, Any] | None = None) -> Any:
    return http.json("GET", path, params=params)


def _page_params(params: Mapping[str, Any] | None, number: int, size: int) -> dict[str, Any]:
    merged = dict(params or {})
    merged["page[number]"] = number
    merged["page[size]"] = size
    return merged


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
    first = http.json("GET", path, params=_page_params(params, 1, page_size))
    pages = [first]
    pagination = ((first or {}).get("meta") or {}).get("pagination") or {}
    total_pages = int(pagination.get("total-pages") or 1)
    if meta is not None:
        meta.update((first or {}).get("meta") or {})
    if total_pages > 1:
        numbers = range(2, total_pages + 1)
        pages.extend(
            http.map(
                lambda n: http.json("GET", path, params=_page_params(params, n, page_size)),
                numbers,
            )
        )
    for doc in pages:
        if included is not None:
            included.extend((doc or {}).get("included") or [])
        yield from (doc or {}).get("data") or []
