"""Thin HTTP handlers of the platform sandbox: request in, typed calls on the state, a document out.

Every handler is ``async def handler(req: PlatformRequest) -> Response`` and is
wrapped by :func:`endpoint`, which authenticates the bearer token (401
otherwise), parses the JSON body (400 when malformed;
``application/vnd.api+json`` and ``application/json`` alike), holds the
service lock, and renders a refusal as a JSON:API error document: the state's
typed errors through :func:`~.error_documents.from_state`, the wire's own
(:class:`~.error_documents.ErrorDocument`) as they are. The handlers turn
attribute dicts into typed arguments; the state never sees a document.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..._spec.access import ACCESS_LEVELS, AGENT_STATUSES, PERMISSION_ATTRIBUTES
from ..._time import parse_time
from . import documents as doc
from .error_documents import ErrorDocument, bad_parameter, from_state, invalid
from .errors import PlatformError
from .models import Caller, PlatformService
from .parameters import CATEGORY
from .pools import POOL_SORTS, PoolSort
from .team_access import PermissionSettings

__all__ = ["PlatformRequest", "endpoint"]

MEDIA_TYPE = "application/vnd.api+json"
INCLUDES = ("workspaces",)


@dataclass
class PlatformRequest:
    """One authenticated platform API request, as a handler sees it: the HTTP
    request, the service, who is calling, and the parsed JSON body."""

    request: Request
    service: PlatformService
    caller: Caller
    body: Any

    def param(self, name: str) -> str:
        return str(self.request.path_params[name])

    def query(self, name: str) -> str | None:
        return self.request.query_params.get(name)


Handler = Callable[[PlatformRequest], Awaitable[Response]]


def answer(document: dict[str, Any], status: int = 200) -> JSONResponse:
    return JSONResponse(document, status_code=status, media_type=MEDIA_TYPE)


def no_content() -> Response:
    return Response(status_code=204)


def error_response(exc: ErrorDocument) -> JSONResponse:
    return answer(exc.document, exc.status)


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
                caller = service.authenticate(_bearer(request))
                body = await _read_body(request) if request.method in ("POST", "PATCH") else None
                with service.lock:
                    return await handler(PlatformRequest(request, service, caller, body))
            except PlatformError as exc:
                raise from_state(exc) from None
        except ErrorDocument as exc:
            return error_response(exc)

    return run


def _list(
    req: PlatformRequest,
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
    request = doc.page_request(req.request.query_params, always=always)
    items, extra = doc.page(resources, request, req.request.url)
    document: dict[str, Any] = {"data": [render(r) for r in items], **extra}
    if extra_meta:
        document["meta"] = {**document.get("meta", {}), **extra_meta}
    if included is not None:
        document["included"] = included(items)
    return answer(document)


def _list_encoded(
    req: PlatformRequest,
    resources: Sequence[Any],
    encode_page: Callable[[Sequence[Any], int, int], str],
) -> Response:
    """A paginated list answer whose page is encoded as JSON text by
    ``encode_page(resources, start, stop)`` (see ``_list``)."""
    request = doc.page_request(req.request.query_params)
    items, extra = doc.page(resources, request, req.request.url)
    start = (request.number - 1) * request.size if request is not None else 0
    rest = doc.encode(extra)[1:-1]
    body = '{"data":[' + encode_page(resources, start, start + len(items)) + "]"
    body += ("," + rest if rest else "") + "}"
    return Response(body.encode(), media_type=MEDIA_TYPE)


# -- ping and read-only records ----------------------------------------------------------


# What the real service's ping says of itself; official clients read the API version.
PING_HEADERS = {"TFP-API-Version": "2.6", "TFP-AppName": "Operator toolkit sandbox"}


async def ping(request: Request) -> Response:
    """``GET /ping``: 204 with no body and the API version headers, as the real service;
    no token needed."""
    return Response(status_code=204, headers=PING_HEADERS)


async def account_details(req: PlatformRequest) -> Response:
    """``GET /account/details``: who the token stands for."""
    return answer(doc.account_document(req.service.org_store.account(req.caller)))


async def list_organizations(req: PlatformRequest) -> Response:
    """``GET /organizations``."""
    found = req.service.org_store.list_organizations(req.caller)
    return _list(req, found, _organization_renderer(req))


async def show_organization(req: PlatformRequest) -> Response:
    """``GET /organizations/:name``."""
    org = req.service.org_store.visible(req.caller, req.param("name"))
    return answer({"data": _organization_renderer(req)(org)})


def _organization_renderer(req: PlatformRequest) -> Callable[[Any], dict[str, Any]]:
    """An organization's document with its ``permissions`` for this caller."""
    store = req.service.org_store

    def render(org: Any) -> dict[str, Any]:
        return doc.organization_resource(org, owner=store.role(req.caller, org.name) == "owner")

    return render


async def list_workspaces(req: PlatformRequest) -> Response:
    """``GET /organizations/:name/workspaces`` with ``search[name]``."""
    found = req.service.org_store.list_workspaces(
        req.caller, req.param("name"), req.query("search[name]")
    )
    return _list(req, found, doc.workspace_resource)


async def show_workspace(req: PlatformRequest) -> Response:
    """``GET /workspaces/:id``."""
    ws = req.service.org_store.workspace(req.caller, req.param("id"))
    return answer({"data": doc.workspace_resource(ws)})


async def list_teams(req: PlatformRequest) -> Response:
    """``GET /organizations/:name/teams``."""
    found = req.service.org_store.list_teams(req.caller, req.param("name"))
    return _list(req, found, doc.team_resource)


async def show_team(req: PlatformRequest) -> Response:
    """``GET /teams/:id``."""
    team = req.service.org_store.team(req.caller, req.param("id"))
    return answer({"data": doc.team_resource(team)})


async def list_policy_sets(req: PlatformRequest) -> Response:
    """``GET /organizations/:name/policy-sets``."""
    found = req.service.org_store.list_policy_sets(req.caller, req.param("name"))
    return _list(req, found, doc.policy_set_resource)


async def show_policy_set(req: PlatformRequest) -> Response:
    """``GET /policy-sets/:id``."""
    ps = req.service.org_store.policy_set(req.caller, req.param("id"))
    return answer({"data": doc.policy_set_resource(ps)})


# -- agent pools and agents (spec 4.1) ---------------------------------------------------


def _includes(req: PlatformRequest) -> list[str]:
    raw = req.query("include")
    wanted = [part.strip() for part in (raw or "").split(",") if part.strip()]
    for part in wanted:
        if part not in INCLUDES:
            raise bad_parameter(
                "invalid include parameter",
                f"include {part!r} is not allowed; allowed: {', '.join(INCLUDES)}",
                "include",
            )
    return wanted


def _sort(req: PlatformRequest) -> PoolSort | None:
    raw = req.query("sort")
    if not raw:
        return None
    if raw not in POOL_SORTS:
        raise bad_parameter(
            "invalid sort parameter",
            f"sort {raw!r} is not one of {', '.join(POOL_SORTS)}",
            "sort",
        )
    return cast(PoolSort, raw)


def _included_workspaces(req: PlatformRequest, pools: Sequence[Any]) -> list[dict[str, Any]]:
    seen: dict[str, None] = {}
    for pool in pools:
        seen.update(pool.workspace_ids)
    workspaces = req.service.org_store.workspaces
    return [doc.workspace_resource(workspaces[w]) for w in seen]


async def list_pools(req: PlatformRequest) -> Response:
    """``GET /organizations/:name/agent-pools`` with q, sort, filter, include and pages."""
    sort = _sort(req)
    includes = _includes(req)
    pools, total = req.service.pool_store.list_pools(
        req.caller,
        req.param("name"),
        q=req.query("q"),
        sort=sort,
        allowed_workspace=req.query("filter[allowed_workspaces][name]"),
    )
    return _list(
        req,
        pools,
        doc.pool_resource,
        extra_meta={"status-counts": {"total": total, "matching": len(pools)}},
        included=(lambda page: _included_workspaces(req, page)) if includes else None,
    )


async def show_pool(req: PlatformRequest) -> Response:
    """``GET /agent-pools/:id`` with ``include=workspaces``."""
    includes = _includes(req)
    pool = req.service.pool_store.get(req.caller, req.param("id"))
    document: dict[str, Any] = {"data": doc.pool_resource(pool)}
    if includes:
        document["included"] = _included_workspaces(req, [pool])
    return answer(document)


_ALLOWED = "/data/relationships/allowed-workspaces/data"


def _allowed_workspace_ids(data: Mapping[str, Any]) -> list[str] | None:
    """The ids of ``relationships.allowed-workspaces.data``; None when absent."""
    entries = doc.relationship_data(data, "allowed-workspaces")
    if entries is None:
        return None
    if not isinstance(entries, list):
        raise invalid("allowed-workspaces data must be an array", _ALLOWED)
    ids: list[str] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise invalid("each allowed workspace must be an object", f"{_ALLOWED}/{i}")
        if entry.get("type") != "workspaces":
            raise invalid(
                f"type {entry.get('type')!r} is not allowed here; use 'workspaces'",
                f"{_ALLOWED}/{i}/type",
            )
        ws_id = entry.get("id")
        if not isinstance(ws_id, str):
            raise invalid(f"workspace {ws_id!r} does not exist", f"{_ALLOWED}/{i}/id")
        ids.append(ws_id)
    return ids


def _organization_scoped(attrs: Mapping[str, Any]) -> bool:
    """``organization-scoped``: true when omitted or null, on create and update alike."""
    scoped = doc.bool_attribute(
        attrs, "organization-scoped", "organization-scoped must be a boolean"
    )
    return True if scoped is None else scoped


async def create_pool(req: PlatformRequest) -> Response:
    """``POST /organizations/:name/agent-pools``: 201."""
    req.service.org_store.visible(req.caller, req.param("name"), owner=True)  # 404 before 422
    data = doc.primary_data(req.body, "agent-pools")
    attrs = doc.attributes(data)
    if "name" not in attrs:
        raise invalid("name is required", doc.attribute_pointer("name"))
    name = doc.string_attribute(attrs, "name", "name must be a string")
    assert name is not None  # present, and a string
    pool = req.service.pool_store.create(
        req.caller,
        req.param("name"),
        name=name,
        organization_scoped=_organization_scoped(attrs),
        allowed_workspace_ids=_allowed_workspace_ids(data),
    )
    return answer({"data": doc.pool_resource(pool)}, 201)


async def update_pool(req: PlatformRequest) -> Response:
    """``PATCH /agent-pools/:id``: 200."""
    req.service.pool_store.get(req.caller, req.param("id"), owner=True)  # 404 before 422
    data = doc.primary_data(req.body, "agent-pools")
    attrs = doc.attributes(data)
    pool = req.service.pool_store.update(
        req.caller,
        req.param("id"),
        name=doc.string_attribute(attrs, "name", "name must be a string"),
        organization_scoped=_organization_scoped(attrs),
        allowed_workspace_ids=_allowed_workspace_ids(data),
    )
    return answer({"data": doc.pool_resource(pool)})


async def delete_pool(req: PlatformRequest) -> Response:
    """``DELETE /agent-pools/:id``: 204."""
    req.service.delete_pool(req.caller, req.param("id"))
    return no_content()


async def list_pool_tokens(req: PlatformRequest) -> Response:
    """``GET /agent-pools/:id/authentication-tokens``: the sandbox models no agent tokens."""
    req.service.pool_store.get(req.caller, req.param("id"))
    return _list(req, [], lambda r: r)


async def list_agents(req: PlatformRequest) -> Response:
    """``GET /agent-pools/:id/agents`` with ``filter[last-ping-since]``."""
    raw = req.query("filter[last-ping-since]")
    since = None
    if raw:
        try:
            since = parse_time(raw)
        except ValueError:
            raise bad_parameter(
                "invalid filter parameter",
                f"filter[last-ping-since] {raw!r} is not an ISO 8601 timestamp",
                "filter[last-ping-since]",
            ) from None
    pool_id = req.param("id")
    agents = req.service.agent_store.list_agents(req.caller, pool_id, last_ping_since=since)
    now = req.service.now()
    whole = pool_id if since is None else None  # a whole roster's pages are kept

    def encode_page(roster: Sequence[Any], start: int, stop: int) -> str:
        return doc.agents_json(req.service, roster, start, stop, now, whole)

    return _list_encoded(req, agents, encode_page)


async def show_agent(req: PlatformRequest) -> Response:
    """``GET /agents/:id``."""
    agent = req.service.agent_store.get(req.caller, req.param("id"))
    return answer({"data": doc.agent_resource(req.service, agent)})


async def delete_agent(req: PlatformRequest) -> Response:
    """``DELETE /agents/:id``: 204; 412 while idle or busy."""
    req.service.agent_store.delete(req.caller, req.param("id"))
    return no_content()


def _ping_time(attrs: Mapping[str, Any]) -> datetime | None:
    raw = attrs.get("last-ping-at")
    if raw is None:
        return None
    try:
        if not isinstance(raw, str):
            raise ValueError
        return parse_time(raw)
    except ValueError:
        raise invalid(
            f"last-ping-at {raw!r} is not an ISO 8601 timestamp",
            doc.attribute_pointer("last-ping-at"),
        ) from None


_STATUS_MESSAGE = "status {value!r} is not one of " + ", ".join(AGENT_STATUSES)


async def sandbox_add_agent(req: PlatformRequest) -> Response:
    """``POST /_sandbox/agent-pools/:id/agents`` (sandbox only, owners): 201."""
    pool = req.service.pool_store.get(req.caller, req.param("id"), owner=True)
    attrs = doc.attributes(doc.primary_data(req.body, "agents"))
    last_ping_at = _ping_time(attrs)
    status = doc.string_attribute(attrs, "status", _STATUS_MESSAGE)
    name = doc.string_attribute(attrs, "name", "name must be a string or null", nullable=True)
    ip = doc.string_attribute(attrs, "ip-address", "ip-address must be a non-empty string")
    agent = req.service.agent_store.register(
        pool,
        name=name,
        status="idle" if status is None else status,
        ip_address="127.0.0.1" if ip is None else ip,
        last_ping_at=last_ping_at,
        unique=True,
    )
    return answer({"data": doc.agent_resource(req.service, agent)}, 201)


async def sandbox_update_agent(req: PlatformRequest) -> Response:
    """``PATCH /_sandbox/agents/:id`` (sandbox only, owners): status and last ping."""
    agent = req.service.agent_store.get(req.caller, req.param("id"), owner=True)
    attrs = doc.attributes(doc.primary_data(req.body, "agents"))
    last_ping_at = _ping_time(attrs)
    status = doc.string_attribute(attrs, "status", _STATUS_MESSAGE)
    req.service.agent_store.report(agent, status=status, last_ping_at=last_ping_at)
    return answer({"data": doc.agent_resource(req.service, agent)})


# -- policy set parameters (spec 4.2) ----------------------------------------------------

_CATEGORY_MESSAGE = "category {value!r} is not allowed; it must be " + repr(CATEGORY)


def _parameter_fields(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The typed key, value, category and sensitive of a parameter document (None: not sent)."""
    return {
        "key": doc.string_attribute(attrs, "key", "key must be a non-empty string"),
        "category": doc.string_attribute(attrs, "category", _CATEGORY_MESSAGE),
        "value": doc.string_attribute(attrs, "value", "value must be a string", nullable=True),
        "sensitive": doc.bool_attribute(attrs, "sensitive", "sensitive must be a boolean"),
    }


async def list_parameters(req: PlatformRequest) -> Response:
    """``GET /policy-sets/:id/parameters``: every parameter unless a page parameter is sent."""
    found = req.service.parameter_store.list_parameters(req.caller, req.param("id"))
    return _list(req, found, doc.parameter_resource, always=False)


async def show_parameter(req: PlatformRequest) -> Response:
    """``GET /policy-sets/:id/parameters/:parameter_id``."""
    param = req.service.parameter_store.get(req.caller, req.param("id"), req.param("parameter_id"))
    return answer({"data": doc.parameter_resource(param)})


async def create_parameter(req: PlatformRequest) -> Response:
    """``POST /policy-sets/:id/parameters``: 201."""
    ps = req.service.org_store.policy_set(req.caller, req.param("id"), owner=True)
    attrs = doc.attributes(doc.primary_data(req.body, "vars"))
    if "key" not in attrs:
        raise invalid("key is required", doc.attribute_pointer("key"))
    if "category" not in attrs:
        raise invalid(
            f"category is required and must be {CATEGORY!r}", doc.attribute_pointer("category")
        )
    fields = _parameter_fields(attrs)
    param = req.service.parameter_store.add(
        ps,
        fields["key"],
        fields["value"] or "",
        category=fields["category"],
        sensitive=bool(fields["sensitive"]),
    )
    return answer({"data": doc.parameter_resource(param)}, 201)


async def update_parameter(req: PlatformRequest) -> Response:
    """``PATCH /policy-sets/:id/parameters/:parameter_id``: 200."""
    ps_id, param_id = req.param("id"), req.param("parameter_id")
    req.service.parameter_store.get(req.caller, ps_id, param_id, owner=True)
    data = doc.primary_data(req.body, "vars")
    if data.get("id") != param_id:
        raise invalid(
            f"data.id must be the id of the parameter in the path ({param_id})", "/data/id"
        )
    fields = _parameter_fields(doc.attributes(data))
    param = req.service.parameter_store.update(req.caller, ps_id, param_id, **fields)
    return answer({"data": doc.parameter_resource(param)})


async def delete_parameter(req: PlatformRequest) -> Response:
    """``DELETE /policy-sets/:id/parameters/:parameter_id``: 204."""
    req.service.parameter_store.delete(req.caller, req.param("id"), req.param("parameter_id"))
    return no_content()


# -- team access (spec 4.3) --------------------------------------------------------------

_ACCESS_MESSAGE = "access {value!r} is not one of " + ", ".join(ACCESS_LEVELS)


def _access_fields(attrs: Mapping[str, Any]) -> tuple[str | None, PermissionSettings]:
    """The typed access level and custom permissions of a team-workspaces document.

    The permission values go to the state unchecked: whether a level may set
    them at all comes first there (spec part 2, rule 1). A null is not sent.
    """
    access = doc.string_attribute(attrs, "access", _ACCESS_MESSAGE)
    given = {
        name.replace("-", "_"): attrs[name]
        for name in PERMISSION_ATTRIBUTES
        if attrs.get(name) is not None
    }
    return access, PermissionSettings(**given)


async def list_team_access(req: PlatformRequest) -> Response:
    """``GET /team-workspaces?filter[workspace][id]=``: unpaginated unless asked."""
    workspace_id = req.query("filter[workspace][id]")
    if not workspace_id:
        raise ErrorDocument.one(
            422,
            "missing filter",
            "filter[workspace][id] is required",
            parameter="filter[workspace][id]",
        )
    found = req.service.access_store.list_records(req.caller, workspace_id)
    return _list(req, found, doc.team_access_resource, always=False)


async def show_team_access(req: PlatformRequest) -> Response:
    """``GET /team-workspaces/:id``."""
    record = req.service.access_store.get(req.caller, req.param("id"))
    return answer({"data": doc.team_access_resource(record)})


async def create_team_access(req: PlatformRequest) -> Response:
    """``POST /team-workspaces``: 200, as the spec shows."""
    data = doc.primary_data(req.body, "team-workspaces")
    attrs = doc.attributes(data)
    workspace_id = doc.reference(data, "workspace", "workspaces")
    team_id = doc.reference(data, "team", "teams")
    access, permissions = _access_fields(attrs)
    if access is None:
        raise invalid(
            f"access is required; one of {', '.join(ACCESS_LEVELS)}",
            doc.attribute_pointer("access"),
        )
    record = req.service.access_store.create(req.caller, workspace_id, team_id, access, permissions)
    return answer({"data": doc.team_access_resource(record)})


async def update_team_access(req: PlatformRequest) -> Response:
    """``PATCH /team-workspaces/:id``: 200."""
    req.service.access_store.get(req.caller, req.param("id"), manage=True)  # 404 before 422
    data = doc.primary_data(req.body, "team-workspaces")
    access, permissions = _access_fields(doc.attributes(data))
    record = req.service.access_store.update(req.caller, req.param("id"), access, permissions)
    return answer({"data": doc.team_access_resource(record)})


async def delete_team_access(req: PlatformRequest) -> Response:
    """``DELETE /team-workspaces/:id``: 204."""
    req.service.access_store.delete(req.caller, req.param("id"))
    return no_content()
