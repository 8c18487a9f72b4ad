"""Agents (spec 4.1): list with ``filter[last-ping-since]``, show, delete; and the
sandbox's own ``/_sandbox`` paths that add agents and move their status, which
the real API leaves to the agents.

Their state is :mod:`..agents`; these are their endpoints and documents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...._spec.team_access import AGENT_STATUSES
from ...._time import format_iso_ms, parse_time
from ._base import (
    PlatformRequest,
    Routes,
    attribute_pointer,
    attributes,
    encode,
    listing_encoded,
    primary_data,
    related,
    resource,
    string_attribute,
)
from ._errors import bad_parameter, invalid

if TYPE_CHECKING:
    from starlette.responses import Response

    from ..agents import Agent
    from ..models import PlatformService

__all__ = ["ROUTES", "agent_json", "agent_resource", "agents_json"]


# -- documents -------------------------------------------------------------------------


def agent_resource(
    service: PlatformService, agent: Agent, now: datetime | None = None
) -> dict[str, Any]:
    """An agent; ``now`` (the clock read once for a whole page) dates its status."""
    attrs = {
        "name": agent.name,
        "status": agent.status_at(now) if now is not None else service.agent_store.status(agent),
        "ip-address": agent.ip_address,
        "last-ping-at": format_iso_ms(agent.last_ping_at),
    }
    pool = related("agent-pools", agent.pool_id)
    return resource("agents", agent.id, attrs, {"agent-pool": pool})


# Agents as JSON text, by everything their resource shows: paging through a big
# pool renders the same agents again and again, and rendering and encoding each
# one was most of the cost of a page. The key holds every shown field, so an
# entry is never stale; the table is emptied when it grows past the limit.
_AGENT_JSON: dict[tuple[Any, ...], str] = {}
_AGENT_JSON_LIMIT = 200_000
# Whole pages of a pool's agents as JSON text, by (pool id, start, stop). A
# pool's roster (``AgentStore.list_agents``) is a new tuple whenever what its
# agents show changes, so an entry is used only for the very roster it was
# rendered from, and only while the clock has not aged an agent's status.
_PAGES: dict[tuple[str, int, int], tuple[Sequence[Any], datetime, datetime | None, str]] = {}
_PAGES_LIMIT = 4096


def agent_json(service: PlatformService, agent: Agent, now: datetime) -> str:
    """:func:`agent_resource` as JSON text, rendered once per distinct content."""
    status = agent.status_at(now)
    key = (agent.id, agent.pool_id, agent.name, status, agent.ip_address, agent.last_ping_at)
    text = _AGENT_JSON.get(key)
    if text is None:
        if len(_AGENT_JSON) >= _AGENT_JSON_LIMIT:
            _AGENT_JSON.clear()
        text = encode(agent_resource(service, agent, now))
        _AGENT_JSON[key] = text
    return text


def agents_json(
    service: PlatformService,
    roster: Sequence[Agent],
    start: int,
    stop: int,
    now: datetime,
    pool_id: str | None = None,
) -> str:
    """The agents ``roster[start:stop]`` as comma-separated JSON texts; with
    ``pool_id`` (``roster`` is then that pool's whole roster) the text is kept."""
    if pool_id is None:
        return ",".join(agent_json(service, a, now) for a in roster[start:stop])
    key = (pool_id, start, stop)
    kept = _PAGES.get(key)
    if kept is not None:
        rendered_from, rendered_at, until, text = kept
        if rendered_from is roster and rendered_at <= now and (until is None or now < until):
            return text
    agents = roster[start:stop]
    text = ",".join(agent_json(service, a, now) for a in agents)
    changes = [t for a in agents if (t := a.status_settled_until(now)) is not None]
    if len(_PAGES) >= _PAGES_LIMIT:
        _PAGES.clear()
    _PAGES[key] = (roster, now, min(changes, default=None), text)
    return text


# -- handlers --------------------------------------------------------------------------

ROUTES = Routes()


@ROUTES.handles("GET", "/agent-pools/{id}/agents")
async def list_agents(call: PlatformRequest) -> Response:
    """With ``filter[last-ping-since]``."""
    raw = call.query.get("filter[last-ping-since]")
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
    pool_id = call.params["id"]
    agents = call.service.agent_store.list_agents(call.caller, pool_id, last_ping_since=since)
    now = call.service.clock.now()
    whole = pool_id if since is None else None  # a whole roster's pages are kept

    def encode_page(roster: Sequence[Any], start: int, stop: int) -> str:
        return agents_json(call.service, roster, start, stop, now, whole)

    return listing_encoded(call, agents, encode_page)


@ROUTES.handles("GET", "/agents/{id}")
async def show_agent(call: PlatformRequest) -> dict[str, Any]:
    agent = call.service.agent_store.get(call.caller, call.params["id"])
    return {"data": agent_resource(call.service, agent)}


@ROUTES.handles("DELETE", "/agents/{id}")
async def delete_agent(call: PlatformRequest) -> None:
    """412 while idle or busy."""
    call.service.agent_store.delete(call.caller, call.params["id"])


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
            attribute_pointer("last-ping-at"),
        ) from None


_STATUS_MESSAGE = "status {value!r} is not one of " + ", ".join(AGENT_STATUSES)


# The sandbox's own paths (owners only): the real API leaves these to the agents.


@ROUTES.handles("POST", "/_sandbox/agent-pools/{id}/agents", status=201)
async def sandbox_add_agent(call: PlatformRequest) -> dict[str, Any]:
    call.service.pool_store.get(call.caller, call.params["id"], owner=True)  # 404 before 422
    attrs = attributes(primary_data(call.body, "agents"))
    last_ping_at = _ping_time(attrs)
    status = string_attribute(attrs, "status", _STATUS_MESSAGE)
    name = string_attribute(attrs, "name", "name must be a string or null", nullable=True)
    ip = string_attribute(attrs, "ip-address", "ip-address must be a non-empty string")
    agent = call.service.agent_store.create(
        call.caller,
        call.params["id"],
        name=name,
        status="idle" if status is None else status,
        ip_address="127.0.0.1" if ip is None else ip,
        last_ping_at=last_ping_at,
    )
    return {"data": agent_resource(call.service, agent)}


@ROUTES.handles("PATCH", "/_sandbox/agents/{id}")
async def sandbox_update_agent(call: PlatformRequest) -> dict[str, Any]:
    """Status and last ping."""
    agent = call.service.agent_store.get(call.caller, call.params["id"], owner=True)
    attrs = attributes(primary_data(call.body, "agents"))
    last_ping_at = _ping_time(attrs)
    status = string_attribute(attrs, "status", _STATUS_MESSAGE)
    call.service.agent_store.report(agent, status=status, last_ping_at=last_ping_at)
    return {"data": agent_resource(call.service, agent)}
