"""JSON:API documents of the platform sandbox, in one place (spec 000, conventions 2-4).

Reading: :func:`primary_data` checks a request document's ``data`` member and
type; :func:`attributes` and :func:`relationship_data` take its parts;
:func:`string_attribute` and :func:`bool_attribute` check an attribute's JSON
type, so that the handlers hand the state typed values (422 with the
attribute's pointer otherwise).
Writing: one ``*_resource`` function per resource type, and :func:`page` for
convention 4 (``page[number]`` / ``page[size]``, ``links``, ``meta.pagination``).

Pagination choices where the spec says nothing, following the real service: a
``page[number]`` or ``page[size]`` that is not a positive integer falls back to
the default (1 and 20); a size above 100 is served as 100; a page past the last
answers an empty ``data`` with correct totals.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qsl, urlencode

from ..._time import format_iso_ms
from .error_documents import invalid

if TYPE_CHECKING:
    from starlette.datastructures import URL, QueryParams

    from .agents import Agent
    from .models import PlatformService
    from .organizations import Organization, PolicySet, Team, Workspace
    from .parameters import Parameter
    from .pools import AgentPool
    from .team_access import TeamAccess

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "PageRequest",
    "agent_json",
    "agents_json",
    "agent_resource",
    "encode",
    "attributes",
    "attribute_pointer",
    "bool_attribute",
    "organization_resource",
    "page",
    "page_request",
    "parameter_resource",
    "pool_resource",
    "policy_set_resource",
    "primary_data",
    "relationship_data",
    "string_attribute",
    "team_access_resource",
    "team_resource",
    "workspace_resource",
]

BASE = "/api/v2"
DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
T = TypeVar("T")


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


# -- resources -------------------------------------------------------------------------


def _ref(resource_type: str, resource_id: str) -> dict[str, str]:
    return {"id": resource_id, "type": resource_type}


def account_document(account: Mapping[str, Any]) -> dict[str, Any]:
    """``GET /account/details``: the caller's user (JSON:API ``users``)."""
    user_id = account["id"]
    return {
        "data": {
            "id": user_id,
            "type": "users",
            "attributes": {
                "username": account["username"],
                "email": account["email"],
                "is-service-account": account["service"],
                "is-site-admin": account["site_admin"],
                "is-sso-login": False,
                "auth-method": "tfc",
                "v2-only": False,
                "unconfirmed-email": None,
                "avatar-url": None,
                "two-factor": {"enabled": False, "verified": False},
                "permissions": {
                    "can-create-organizations": not account["service"],
                    "can-change-email": not account["service"],
                    "can-change-username": not account["service"],
                    "can-manage-user-tokens": not account["service"],
                },
            },
            "relationships": {
                "authentication-tokens": {
                    "links": {"related": f"{BASE}/users/{user_id}/authentication-tokens"}
                }
            },
            "links": {"self": f"{BASE}/users/{user_id}"},
        }
    }


def organization_resource(org: Organization, owner: bool | None = None) -> dict[str, Any]:
    """An organization; with ``owner`` (the caller's standing), its ``permissions``
    as the service shows them to that caller (an owner may update it and manage
    its users and teams; a member may not)."""
    attributes: dict[str, Any] = {
        "name": org.name,
        "email": org.email,
        "created-at": format_iso_ms(org.created_at),
    }
    if owner is not None:
        attributes["permissions"] = {
            "can-update": owner,
            "can-destroy": owner,
            "can-manage-users": owner,
            "can-create-team": owner,
            "can-create-workspace": owner,
            "can-update-agent-pools": owner,
            "can-access-via-teams": True,
            "can-traverse": True,
        }
    return {
        "id": org.name,
        "type": "organizations",
        "attributes": attributes,
        "links": {"self": f"{BASE}/organizations/{org.name}"},
    }


def _organization_relationship(name: str) -> dict[str, Any]:
    return {
        "data": _ref("organizations", name),
        "links": {"related": f"{BASE}/organizations/{name}"},
    }


def workspace_resource(ws: Workspace) -> dict[str, Any]:
    pool = (
        {
            "data": _ref("agent-pools", ws.agent_pool_id),
            "links": {"related": f"{BASE}/agent-pools/{ws.agent_pool_id}"},
        }
        if ws.agent_pool_id
        else {"data": None}
    )
    return {
        "id": ws.id,
        "type": "workspaces",
        "attributes": {
            "name": ws.name,
            "created-at": format_iso_ms(ws.created_at),
            "execution-mode": "agent" if ws.agent_pool_id else "remote",
        },
        "relationships": {
            "organization": _organization_relationship(ws.organization),
            "agent-pool": pool,
        },
        "links": {"self": f"{BASE}/workspaces/{ws.id}"},
    }


def team_resource(team: Team) -> dict[str, Any]:
    return {
        "id": team.id,
        "type": "teams",
        "attributes": {
            "name": team.name,
            "visibility": team.visibility,
            "users-count": len(team.members),
            "organization-access": team.organization_permissions(),
        },
        "relationships": {"organization": _organization_relationship(team.organization)},
        "links": {"self": f"{BASE}/teams/{team.id}"},
    }


def policy_set_resource(ps: PolicySet) -> dict[str, Any]:
    return {
        "id": ps.id,
        "type": "policy-sets",
        "attributes": {
            "name": ps.name,
            "description": ps.description,
            "kind": ps.kind,
            "created-at": format_iso_ms(ps.created_at),
        },
        "relationships": {
            "organization": _organization_relationship(ps.organization),
            "parameters": {"links": {"related": f"{BASE}/policy-sets/{ps.id}/parameters"}},
        },
        "links": {"self": f"{BASE}/policy-sets/{ps.id}"},
    }


def pool_resource(pool: AgentPool) -> dict[str, Any]:
    path = f"{BASE}/agent-pools/{pool.id}"
    return {
        "id": pool.id,
        "type": "agent-pools",
        "attributes": {
            "name": pool.name,
            "created-at": format_iso_ms(pool.created_at),
            "organization-scoped": pool.organization_scoped,
            "agent-count": len(pool.agents),
        },
        "relationships": {
            "organization": _organization_relationship(pool.organization),
            "agents": {"links": {"related": f"{path}/agents"}},
            "authentication-tokens": {"links": {"related": f"{path}/authentication-tokens"}},
            "workspaces": {"data": [_ref("workspaces", w) for w in pool.workspace_ids]},
            "allowed-workspaces": {
                "data": [_ref("workspaces", w) for w in pool.allowed_workspace_ids]
            },
        },
        "links": {"self": path},
    }


def agent_resource(
    service: PlatformService, agent: Agent, now: datetime | None = None
) -> dict[str, Any]:
    """An agent; ``now`` (the clock read once for a whole page) dates its status."""
    return {
        "id": agent.id,
        "type": "agents",
        "attributes": {
            "name": agent.name,
            "status": agent.status_at(now) if now is not None else service.agent_status(agent),
            "ip-address": agent.ip_address,
            "last-ping-at": format_iso_ms(agent.last_ping_at),
        },
        "relationships": {
            "agent-pool": {
                "data": _ref("agent-pools", agent.pool_id),
                "links": {"related": f"{BASE}/agent-pools/{agent.pool_id}"},
            }
        },
        "links": {"self": f"{BASE}/agents/{agent.id}"},
    }


# Agents as JSON text, by everything their resource shows: paging through a big
# pool renders the same agents again and again, and rendering and encoding each
# one was most of the cost of a page. The key holds every shown field, so an
# entry is never stale; the table is emptied when it grows past the limit.
_AGENT_JSON: dict[tuple[Any, ...], str] = {}
_AGENT_JSON_LIMIT = 200_000
# Whole pages of a pool's agents as JSON text, by (pool id, start, stop). A
# pool's roster (``PlatformService.agents``) is a new tuple whenever what its
# agents show changes, so an entry is used only for the very roster it was
# rendered from, and only while the clock has not aged an agent's status.
_PAGES: dict[tuple[str, int, int], tuple[Sequence[Any], datetime, datetime | None, str]] = {}
_PAGES_LIMIT = 4096


def encode(document: Any) -> str:
    """JSON text as the list answers are encoded (compact, UTF-8, no NaN)."""
    return json.dumps(document, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


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


def parameter_resource(param: Parameter) -> dict[str, Any]:
    ps_path = f"{BASE}/policy-sets/{param.policy_set_id}"
    return {
        "id": param.id,
        "type": "vars",
        "attributes": {
            "key": param.key,
            # Written once, never shown again, as the real service does.
            "value": None if param.sensitive else param.value,
            "category": param.category,
            "sensitive": param.sensitive,
        },
        "relationships": {
            "configurable": {
                "data": _ref("policy-sets", param.policy_set_id),
                "links": {"related": ps_path},
            }
        },
        "links": {"self": f"{ps_path}/parameters/{param.id}"},
    }


def team_access_resource(record: TeamAccess) -> dict[str, Any]:
    return {
        "id": record.id,
        "type": "team-workspaces",
        "attributes": {"access": record.access, **record.permissions},
        "relationships": {
            "team": {
                "data": _ref("teams", record.team_id),
                "links": {"related": f"{BASE}/teams/{record.team_id}"},
            },
            "workspace": {
                "data": _ref("workspaces", record.workspace_id),
                "links": {"related": f"{BASE}/workspaces/{record.workspace_id}"},
            },
        },
        "links": {"self": f"{BASE}/team-workspaces/{record.id}"},
    }
