"""The platform API's HTTP conventions, in one place (spec 000, conventions 2-4).

Every handler is ``async def handler(call: PlatformRequest)``, declared in its
area's module under the decorator that adds its row to that module's
``ROUTES`` (:class:`Routes`: ``(method, path, handler)``, the path relative to
``/api/v2``): ``@ROUTES.handles("GET", "/agents/{id}")``. A handler returns
the record it read or wrote (the decorator names its ``render``), the answer's
document (sent with the status the decorator names, 200 unless told), a
:class:`~starlette.responses.Response` of its own (a list page), or None
(204). ``routes`` gathers every area's rows. :func:`endpoint` serves one path: it
authenticates the bearer token (401 otherwise), parses the JSON body (400
when malformed; ``application/vnd.api+json`` and ``application/json``
alike), holds the service lock, and renders a refusal as a JSON:API error
document: the state's typed errors through :func:`~._errors.from_state`, the
wire's own (:class:`~._errors.ErrorDocument`) as they are.

Handlers call the stores of :class:`~..models.PlatformService`
(``call.service.pool_store.create(...)``), as the secrets half's handlers
call theirs, under the lock the endpoint holds; they turn attribute dicts
into typed arguments, and the state never sees a document.

Reading documents: :func:`primary_data` checks a request document's ``data``
member and type; :func:`attributes` and :func:`relationship_data` take its
parts; :func:`string_attribute` and :func:`bool_attribute` check an
attribute's JSON type (422 with the attribute's pointer otherwise), and
:func:`require` and :func:`required_string` that a required one was sent.
Writing: each area renders its own resources in the frame of
:func:`resource` (:func:`owned_resource` for a record of an organization,
:func:`related` for a to-one relationship); :func:`page` does convention 4
(``page[number]`` / ``page[size]``, ``links``, ``meta.pagination``), and
:func:`listing` a whole list answer.

Pagination choices where the spec says nothing, following the real service: a
``page[number]`` or ``page[size]`` that is not a positive integer falls back to
the default (1 and 20); a size above 100 is served as 100; a page past the last
answers an empty ``data`` with correct totals.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...._spec.jsonapi import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from ..._wire import JSON_API, SandboxRequest
from ..errors import PlatformError
from ..models import Caller, PlatformService
from ._errors import ErrorDocument, from_state, invalid

if TYPE_CHECKING:
    from starlette.datastructures import URL, QueryParams

__all__ = [
    "BASE",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "Handler",
    "PageRequest",
    "PlatformRequest",
    "RouteRow",
    "Routes",
    "answer",
    "attribute_pointer",
    "attributes",
    "bool_attribute",
    "encode",
    "endpoint",
    "listing",
    "no_content",
    "owned_resource",
    "page",
    "page_request",
    "primary_data",
    "ref",
    "reference",
    "related",
    "relationship_data",
    "require",
    "required_string",
    "resource",
    "string_attribute",
]

BASE = "/api/v2"
MEDIA_TYPE = JSON_API
T = TypeVar("T")

# The one request class of the sandbox, as the platform's handlers see it.
PlatformRequest: TypeAlias = SandboxRequest[PlatformService, Caller]
Handler = Callable[[PlatformRequest], Awaitable[Response]]
# One row of an area's ``ROUTES``: (HTTP method, path relative to /api/v2, handler).
RouteRow = tuple[str, str, Handler]


def answer(document: dict[str, Any], status: int = 200) -> JSONResponse:
    return JSONResponse(document, status_code=status, media_type=MEDIA_TYPE)


def no_content() -> Response:
    return Response(status_code=204)


class Routes(list[RouteRow]):
    """An area's route rows, each added by the decorator of its handler (:meth:`handles`)."""

    def handles(
        self,
        method: str,
        path: str,
        *,
        status: int = 200,
        render: Callable[[Any], dict[str, Any]] | None = None,
    ) -> Callable[[Callable[[PlatformRequest], Awaitable[Any]]], Handler]:
        """Serve ``method`` at ``path`` with the decorated handler.

        With ``render``, the handler returns a record, answered as the document of that one
        resource (``{"data": render(record)}``) with ``status``. Without, it returns the
        answer's document (sent with ``status``), a response of its own, or None (204).
        """

        def add(handler: Callable[[PlatformRequest], Awaitable[Any]]) -> Handler:
            @functools.wraps(handler)
            async def run(call: PlatformRequest) -> Response:
                result = await handler(call)
                if render is not None:
                    return answer({"data": render(result)}, status)
                if result is None:
                    return no_content()
                if isinstance(result, Response):
                    return result
                return answer(result, status)

            self.append((method, path, run))
            return run

        return add


def _bearer(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return None


async def _read_body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise ErrorDocument.one(
            400, "malformed request body", "the request body is not valid JSON"
        ) from None


def endpoint(
    service: PlatformService, handlers: Mapping[str, Handler]
) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of one path: runs the method's handler for an authenticated caller."""

    async def run(request: Request) -> Response:
        handler = handlers.get(request.method) or handlers["GET"]  # HEAD is GET without a body
        try:
            try:
                with service.lock:
                    caller = service.org_store.authenticate(_bearer(request))
                # The body is read outside the lock: a slow sender holds up no one else.
                body = await _read_body(request) if request.method in ("POST", "PATCH") else None
                with service.lock:
                    return await handler(SandboxRequest(request, service, caller, body))
            except PlatformError as exc:
                raise from_state(exc) from None
        except ErrorDocument as exc:
            return exc.response()

    return run


# -- list answers ----------------------------------------------------------------------


def listing(
    call: PlatformRequest,
    resources: Sequence[Any],
    render: Callable[[Any], dict[str, Any]],
    *,
    always: bool = True,
    extra_meta: dict[str, Any] | None = None,
    included: Callable[[Sequence[Any]], list[dict[str, Any]]] | None = None,
) -> Response:
    """A list answer: paginated unless ``always`` is false and no page parameter was sent.

    ``included`` renders the ``included`` member from the page's records.
    """
    request = page_request(call.query, always=always)
    items, extra = page(resources, request, call.request.url)
    document: dict[str, Any] = {"data": [render(r) for r in items], **extra}
    if extra_meta:
        document["meta"] = {**document.get("meta", {}), **extra_meta}
    if included is not None:
        document["included"] = included(items)
    return answer(document)


def listing_encoded(
    call: PlatformRequest,
    resources: Sequence[Any],
    encode_page: Callable[[Sequence[Any], int, int], str],
) -> Response:
    """A paginated list answer whose page is encoded as JSON text by
    ``encode_page(resources, start, stop)`` (see :func:`listing`)."""
    request = page_request(call.query)
    items, extra = page(resources, request, call.request.url)
    start = (request.number - 1) * request.size if request is not None else 0
    rest = encode(extra)[1:-1]
    body = '{"data":[' + encode_page(resources, start, start + len(items)) + "]"
    body += ("," + rest if rest else "") + "}"
    return Response(body.encode(), media_type=MEDIA_TYPE)


def encode(document: Any) -> str:
    """JSON text as the list answers are encoded (compact, UTF-8, no NaN)."""
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


# -- reading request documents ---------------------------------------------------------


def primary_data(body: Any, resource_type: str) -> dict[str, Any]:
    """The ``data`` object of a request document, checked to be of ``resource_type``."""
    if not isinstance(body, dict):
        raise invalid("the request body must be a JSON:API document (a JSON object)", "")
    data = body.get("data")
    if not isinstance(data, dict):
        raise invalid("data is required and must be an object", "/data")
    if data.get("type") != resource_type:
        raise invalid(
            f"type {data.get('type')!r} is not allowed here; use {resource_type!r}", "/data/type"
        )
    return data


def attributes(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data.attributes`` (empty when absent)."""
    attrs = data.get("attributes")
    if attrs is None:
        return {}
    if not isinstance(attrs, dict):
        raise invalid("attributes must be an object", "/data/attributes")
    return attrs


def attribute_pointer(name: str) -> str:
    """The JSON pointer of attribute ``name`` of a request document."""
    return f"/data/attributes/{name}"


def require(attrs: Mapping[str, Any], name: str, detail: str | None = None) -> None:
    """A 422 when attribute ``name`` was not sent: ``detail``, or "<name> is required"."""
    if name not in attrs:
        raise invalid(detail or f"{name} is required", attribute_pointer(name))


def required_string(
    attrs: Mapping[str, Any], name: str, message: str, *, missing: str | None = None
) -> str:
    """``attrs[name]``, which must be sent (422 with ``missing`` otherwise, see
    :func:`require`) and be a string (422 with ``message``, see :func:`string_attribute`)."""
    require(attrs, name, missing)
    value = string_attribute(attrs, name, message)
    assert value is not None  # sent, and string_attribute refuses a null
    return value


def string_attribute(
    attrs: Mapping[str, Any], name: str, message: str, *, nullable: bool = False
) -> str | None:
    """``attrs[name]`` when it is a string; None when absent (or null, with ``nullable``).

    Anything else is a 422 with ``message`` (``{value!r}`` in it shows what was sent).
    """
    if name not in attrs:
        return None
    value = attrs[name]
    if isinstance(value, str) or (value is None and nullable):
        return value
    raise invalid(message.format(value=value), attribute_pointer(name))


def bool_attribute(attrs: Mapping[str, Any], name: str, message: str) -> bool | None:
    """``attrs[name]`` when it is a boolean; None when absent or null; a 422 with ``message``
    otherwise."""
    value = attrs.get(name)
    if value is None or isinstance(value, bool):
        return value
    raise invalid(message.format(value=value), attribute_pointer(name))


def relationship_data(data: Mapping[str, Any], name: str) -> Any:
    """``data.relationships.<name>.data``; None when the relationship is absent."""
    rels = data.get("relationships")
    if rels is None:
        return None
    if not isinstance(rels, dict):
        raise invalid("relationships must be an object", "/data/relationships")
    rel = rels.get(name)
    if rel is None:
        return None
    if not isinstance(rel, dict) or "data" not in rel:
        raise invalid(
            f"relationship {name} must be an object with data", f"/data/relationships/{name}"
        )
    return rel["data"]


def reference(data: Mapping[str, Any], name: str, resource_type: str) -> str:
    """The id of a required to-one relationship ``{type, id}`` of ``resource_type``."""
    pointer = f"/data/relationships/{name}/data"
    ref = relationship_data(data, name)
    if not isinstance(ref, dict):
        raise invalid(f"relationship {name} is required", pointer)
    if ref.get("type") != resource_type:
        raise invalid(
            f"type {ref.get('type')!r} is not allowed here; use {resource_type!r}",
            f"{pointer}/type",
        )
    ref_id = ref.get("id")
    if not isinstance(ref_id, str) or not ref_id:
        raise invalid(f"{name} id is required", f"{pointer}/id")
    return ref_id


# -- pagination (convention 4) ---------------------------------------------------------


@dataclass(frozen=True)
class PageRequest:
    number: int
    size: int


def _positive(raw: str | None, default: int) -> int:
    try:
        value = int(raw) if raw is not None else default
    except ValueError:
        return default
    return value if value > 0 else default


def page_request(query: QueryParams, *, always: bool = True) -> PageRequest | None:
    """The page asked for; None when ``always`` is false and no page parameter was sent."""
    number, size = query.get("page[number]"), query.get("page[size]")
    if not always and number is None and size is None:
        return None
    return PageRequest(_positive(number, 1), min(_positive(size, DEFAULT_PAGE_SIZE), MAX_PAGE_SIZE))


_PAGE_KEYS = frozenset({"page[number]", "page[size]"})


def _link_base(url: URL) -> str:
    """The request's address without its page parameters, ending where they go
    (as ``include_query_params`` would put them: after the others)."""
    query = url.query
    if query:
        kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in _PAGE_KEYS]
        query = urlencode(kept)
    return f"{url.scheme}://{url.netloc}{url.path}?" + (f"{query}&" if query else "")


def page(
    items: Sequence[T], request: PageRequest | None, url: URL
) -> tuple[Sequence[T], dict[str, Any]]:
    """(the items of the page, the ``links`` and ``meta`` members) for a list answer.

    With ``request`` None the list is not paginated: every item, no links or meta.
    """
    if request is None:
        return items, {}
    count = len(items)
    pages = max(1, math.ceil(count / request.size))
    number = request.number
    start = (number - 1) * request.size
    prev_page = number - 1 if number > 1 else None
    next_page = number + 1 if number < pages else None

    base = _link_base(url)
    tail = f"&page%5Bsize%5D={request.size}"

    def link(n: int | None) -> str | None:
        return None if n is None else f"{base}page%5Bnumber%5D={n}{tail}"

    extra = {
        "links": {
            "self": link(number),
            "first": link(1),
            "prev": link(prev_page),
            "next": link(next_page),
            "last": link(pages),
        },
        "meta": {
            "pagination": {
                "current-page": number,
                "page-size": request.size,
                "prev-page": prev_page,
                "next-page": next_page,
                "total-pages": pages,
                "total-count": count,
            }
        },
    }
    return items[start : start + request.size], extra


# -- parts of resources ----------------------------------------------------------------


def ref(resource_type: str, resource_id: str) -> dict[str, str]:
    """A resource identifier object."""
    return {"id": resource_id, "type": resource_type}


def related(resource_type: str, resource_id: str) -> dict[str, Any]:
    """A to-one relationship: the related resource's identifier and its address."""
    return {
        "data": ref(resource_type, resource_id),
        "links": {"related": f"{BASE}/{resource_type}/{resource_id}"},
    }


def resource(
    resource_type: str,
    record_id: str,
    attributes: dict[str, Any],
    relationships: dict[str, Any] | None = None,
    *,
    path: str | None = None,
) -> dict[str, Any]:
    """A resource object: its attributes, its relationships (when it has any) and its
    ``self`` link, at ``path`` (relative to /api/v2; ``/<resource_type>/<record_id>``
    unless given)."""
    document: dict[str, Any] = {"id": record_id, "type": resource_type, "attributes": attributes}
    if relationships is not None:
        document["relationships"] = relationships
    document["links"] = {"self": BASE + (path or f"/{resource_type}/{record_id}")}
    return document


def owned_resource(
    resource_type: str,
    record_id: str,
    organization: str,
    attributes: dict[str, Any],
    relationships: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The document of a record that belongs to an organization (:func:`resource`), its
    ``organization`` relationship first (then ``relationships``)."""
    owner = {"organization": related("organizations", organization)}
    return resource(resource_type, record_id, attributes, {**owner, **(relationships or {})})
