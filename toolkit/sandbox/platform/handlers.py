"""Thin HTTP handlers of the platform sandbox: request in, a service call, a document out.

Every handler is ``async def handler(call: Call) -> Response`` and is wrapped by
:func:`endpoint`, which authenticates the bearer token (401 otherwise), parses
the JSON body (400 when malformed; ``application/vnd.api+json`` and
``application/json`` alike), holds the service lock and renders a
:class:`~.errors.PlatformError` as a JSON:API error document.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..._time import parse_time
from . import documents as doc
from .errors import PlatformError, bad_parameter
from .models import Caller, PlatformService

__all__ = ["Call", "endpoint"]

MEDIA_TYPE = "application/vnd.api+json"
INCLUDES = ("workspaces",)


@dataclass
class Call:
    """One authenticated request, as a handler sees it."""

    request: Request
    service: PlatformService
    caller: Caller
    body: Any

    def param(self, name: str) -> str:
        return str(self.request.path_params[name])

    def query(self, name: str) -> str | None:
        return self.request.query_params.get(name)


Handler = Callable[[Call], Awaitable[Response]]


def answer(document: dict[str, Any], status: int = 200) -> JSONResponse:
    return JSONResponse(document, status_code=status, media_type=MEDIA_TYPE)


def no_content() -> Response:
    return Response(status_code=204)


def error_response(exc: PlatformError) -> JSONResponse:
    return answer({"errors": exc.errors}, exc.status)


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
        raise PlatformError.one(
            400, "malformed request body", "the request body is not valid JSON"
        ) from None


def endpoint(
    service: PlatformService, handlers: Mapping[str, Handler]
) -> Callable[[Request], Awaitable[Response]]:
    """The Starlette endpoint of one path: runs the method's handler for an authenticated caller."""

    async def run(request: Request) -> Response:
        handler = handlers.get(request.method) or handlers["GET"]  # HEAD is GET without a body
        try:
            caller = service.authenticate(_bearer(request))
            body = await _read_body(request) if request.method in ("POST", "PATCH") else None
            with service.lock:
                return await handler(Call(request, service, caller, body))
        except PlatformError as exc:
            return error_response(exc)

    return run


def _list(
    call: Call,
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
    request = doc.page_request(call.request.query_params, always=always)
    items, extra = doc.page(resources, request, call.request.url)
    document: dict[str, Any] = {"data": [render(r) for r in items], **extra}
    if extra_meta:
        document["meta"] = {**document.get("meta", {}), **extra_meta}
    if included is not None:
        document["included"] = included(items)
    return answer(document)


def _list_encoded(
    call: Call, resources: Sequence[Any], encode_page: Callable[[Sequence[Any], int, int], str]
) -> Response:
    """A paginated list answer whose page is encoded as JSON text by
    ``encode_page(resources, start, stop)`` (see ``_list``)."""
    request = doc.page_request(call.request.query_params)
    items, extra = doc.page(resources, request, call.request.url)
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


async def list_organizations(call: Call) -> Response:
    """``GET /organizations``."""
    return _list(call, call.service.organizations(call.caller), doc.organization_resource)


async def show_organization(call: Call) -> Response:
    """``GET /organizations/:name``."""
    org = call.service.organization(call.caller, call.param("name"))
    return answer({"data": doc.organization_resource(org)})


async def list_workspaces(call: Call) -> Response:
    """``GET /organizations/:name/workspaces`` with ``search[name]``."""
    found = call.service.workspaces(call.caller, call.param("name"), call.query("search[name]"))
    return _list(call, found, doc.workspace_resource)


async def show_workspace(call: Call) -> Response:
    """``GET /workspaces/:id``."""
    return answer(
        {"data": doc.workspace_resource(call.service.workspace(call.caller, call.param("id")))}
    )


async def list_teams(call: Call) -> Response:
    """``GET /organizations/:name/teams``."""
    return _list(call, call.service.teams(call.caller, call.param("name")), doc.team_resource)


async def show_team(call: Call) -> Response:
    """``GET /teams/:id``."""
    return answer({"data": doc.team_resource(call.service.team(call.caller, call.param("id")))})


async def list_policy_sets(call: Call) -> Response:
    """``GET /organizations/:name/policy-sets``."""
    found = call.service.policy_sets(call.caller, call.param("name"))
    return _list(call, found, doc.policy_set_resource)


async def show_policy_set(call: Call) -> Response:
    """``GET /policy-sets/:id``."""
    ps = call.service.policy_set(call.caller, call.param("id"))
    return answer({"data": doc.policy_set_resource(ps)})


# -- agent pools and agents (spec 4.1) ---------------------------------------------------


def _includes(call: Call) -> list[str]:
    raw = call.query("include")
    wanted = [part.strip() for part in (raw or "").split(",") if part.strip()]
    for part in wanted:
        if part not in INCLUDES:
            raise bad_parameter(
                "invalid include parameter",
                f"include {part!r} is not allowed; allowed: {', '.join(INCLUDES)}",
                "include",
            )
    return wanted


def _included_workspaces(call: Call, pools: Sequence[Any]) -> list[dict[str, Any]]:
    seen: dict[str, None] = {}
    for pool in pools:
        seen.update(pool.workspace_ids)
    return [doc.workspace_resource(call.service.workspace_record(w)) for w in seen]


async def list_pools(call: Call) -> Response:
    """``GET /organizations/:name/agent-pools`` with q, sort, filter, include and pages."""
    includes = _includes(call)
    pools, total = call.service.pools(
        call.caller,
        call.param("name"),
        q=call.query("q"),
        sort=call.query("sort"),
        allowed_workspace=call.query("filter[allowed_workspaces][name]"),
    )
    return _list(
        call,
        pools,
        doc.pool_resource,
        extra_meta={"status-counts": {"total": total, "matching": len(pools)}},
        included=(lambda page: _included_workspaces(call, page)) if includes else None,
    )


async def show_pool(call: Call) -> Response:
    """``GET /agent-pools/:id`` with ``include=workspaces``."""
    includes = _includes(call)
    pool = call.service.pool(call.caller, call.param("id"))
    document: dict[str, Any] = {"data": doc.pool_resource(pool)}
    if includes:
        document["included"] = _included_workspaces(call, [pool])
    return answer(document)


async def create_pool(call: Call) -> Response:
    """``POST /organizations/:name/agent-pools``: 201."""
    call.service.owned_organization(call.caller, call.param("name"))  # 404 before 422
    data = doc.primary_data(call.body, "agent-pools")
    pool = call.service.create_pool(
        call.caller,
        call.param("name"),
        doc.attributes(data),
        doc.relationship_data(data, "allowed-workspaces"),
    )
    return answer({"data": doc.pool_resource(pool)}, 201)


async def update_pool(call: Call) -> Response:
    """``PATCH /agent-pools/:id``: 200."""
    call.service.pool(call.caller, call.param("id"), owner=True)  # 404 before 422
    data = doc.primary_data(call.body, "agent-pools")
    pool = call.service.update_pool(
        call.caller,
        call.param("id"),
        doc.attributes(data),
        doc.relationship_data(data, "allowed-workspaces"),
    )
    return answer({"data": doc.pool_resource(pool)})


async def delete_pool(call: Call) -> Response:
    """``DELETE /agent-pools/:id``: 204."""
    call.service.delete_pool(call.caller, call.param("id"))
    return no_content()


async def list_pool_tokens(call: Call) -> Response:
    """``GET /agent-pools/:id/authentication-tokens``: the sandbox models no agent tokens."""
    call.service.pool(call.caller, call.param("id"))
    return _list(call, [], lambda r: r)


async def list_agents(call: Call) -> Response:
    """``GET /agent-pools/:id/agents`` with ``filter[last-ping-since]``."""
    raw = call.query("filter[last-ping-since]")
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
    pool_id = call.param("id")
    agents = call.service.agents(call.caller, pool_id, last_ping_since=since)
    now = call.service.now()
    whole = pool_id if since is None else None  # a whole roster's pages are kept

    def encode_page(roster: Sequence[Any], start: int, stop: int) -> str:
        return doc.agents_json(call.service, roster, start, stop, now, whole)

    return _list_encoded(call, agents, encode_page)


async def show_agent(call: Call) -> Response:
    """``GET /agents/:id``."""
    agent = call.service.agent(call.caller, call.param("id"))
    return answer({"data": doc.agent_resource(call.service, agent)})


async def delete_agent(call: Call) -> Response:
    """``DELETE /agents/:id``: 204; 412 while idle or busy."""
    call.service.delete_agent(call.caller, call.param("id"))
    return no_content()


async def sandbox_add_agent(call: Call) -> Response:
    """``POST /_sandbox/agent-pools/:id/agents`` (sandbox only, owners): 201."""
    call.service.pool(call.caller, call.param("id"), owner=True)
    data = doc.primary_data(call.body, "agents")
    agent = call.service.sandbox_add_agent(call.caller, call.param("id"), doc.attributes(data))
    return answer({"data": doc.agent_resource(call.service, agent)}, 201)


async def sandbox_update_agent(call: Call) -> Response:
    """``PATCH /_sandbox/agents/:id`` (sandbox only, owners): status and last ping."""
    call.service.agent(call.caller, call.param("id"), owner=True)
    data = doc.primary_data(call.body, "agents")
    agent = call.service.sandbox_update_agent(call.caller, call.param("id"), doc.attributes(data))
    return answer({"data": doc.agent_resource(call.service, agent)})


# -- policy set parameters (spec 4.2) ----------------------------------------------------


async def list_parameters(call: Call) -> Response:
    """``GET /policy-sets/:id/parameters``: every parameter unless a page parameter is sent."""
    found = call.service.parameters(call.caller, call.param("id"))
    return _list(call, found, doc.parameter_resource, always=False)


async def show_parameter(call: Call) -> Response:
    """``GET /policy-sets/:id/parameters/:parameter_id``."""
    param = call.service.parameter(call.caller, call.param("id"), call.param("parameter_id"))
    return answer({"data": doc.parameter_resource(param)})


async def create_parameter(call: Call) -> Response:
    """``POST /policy-sets/:id/parameters``: 201."""
    call.service.policy_set(call.caller, call.param("id"), owner=True)
    data = doc.primary_data(call.body, "vars")
    param = call.service.create_parameter(call.caller, call.param("id"), doc.attributes(data))
    return answer({"data": doc.parameter_resource(param)}, 201)


async def update_parameter(call: Call) -> Response:
    """``PATCH /policy-sets/:id/parameters/:parameter_id``: 200."""
    ps_id, param_id = call.param("id"), call.param("parameter_id")
    call.service.parameter(call.caller, ps_id, param_id, owner=True)
    data = doc.primary_data(call.body, "vars")
    if data.get("id") != param_id:
        raise PlatformError.one(
            422,
            "invalid attribute",
            f"data.id must be the id of the parameter in the path ({param_id})",
            pointer="/data/id",
        )
    param = call.service.update_parameter(call.caller, ps_id, param_id, doc.attributes(data))
    return answer({"data": doc.parameter_resource(param)})


async def delete_parameter(call: Call) -> Response:
    """``DELETE /policy-sets/:id/parameters/:parameter_id``: 204."""
    call.service.delete_parameter(call.caller, call.param("id"), call.param("parameter_id"))
    return no_content()


# -- team access (spec 4.3) --------------------------------------------------------------


async def list_team_access(call: Call) -> Response:
    """``GET /team-workspaces?filter[workspace][id]=``: unpaginated unless asked."""
    workspace_id = call.query("filter[workspace][id]")
    if not workspace_id:
        raise PlatformError.one(
            422,
            "missing filter",
            "filter[workspace][id] is required",
            parameter="filter[workspace][id]",
        )
    found = call.service.team_accesses(call.caller, workspace_id)
    return _list(call, found, doc.team_access_resource, always=False)


async def show_team_access(call: Call) -> Response:
    """``GET /team-workspaces/:id``."""
    record = call.service.team_access(call.caller, call.param("id"))
    return answer({"data": doc.team_access_resource(record)})


async def create_team_access(call: Call) -> Response:
    """``POST /team-workspaces``: 200, as the spec shows."""
    data = doc.primary_data(call.body, "team-workspaces")
    attrs = doc.attributes(data)
    workspace_id = doc.reference(data, "workspace", "workspaces")
    team_id = doc.reference(data, "team", "teams")
    record = call.service.create_team_access(call.caller, workspace_id, team_id, attrs)
    return answer({"data": doc.team_access_resource(record)})


async def update_team_access(call: Call) -> Response:
    """``PATCH /team-workspaces/:id``: 200."""
    call.service.team_access(call.caller, call.param("id"), owner=True)
    data = doc.primary_data(call.body, "team-workspaces")
    record = call.service.update_team_access(call.caller, call.param("id"), doc.attributes(data))
    return answer({"data": doc.team_access_resource(record)})


async def delete_team_access(call: Call) -> Response:
    """``DELETE /team-workspaces/:id``: 204."""
    call.service.delete_team_access(call.caller, call.param("id"))
    return no_content()
