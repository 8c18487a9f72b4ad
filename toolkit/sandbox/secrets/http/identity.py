"""HTTP for ``identity/*``: entities, entity aliases and internal groups.

Thin over :mod:`..identity`. As on OpenBao: a write that creates answers 200
with the new ``id`` and ``name`` (an alias: ``id`` and ``canonical_id``), one
that updates answers 204; a read of an unknown id or name is 404 with no
message; a delete of an unknown one is 204; lists answer ``keys`` and
``key_info``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from starlette.responses import Response
from starlette.routing import Route

from ...._time import format_rfc3339
from .. import fields
from ..errors import InvalidRequest
from ..identity import IdentityStore
from ._base import WRITE, Handler, SecretsRequest, envelope, error, listing, no_content, route

if TYPE_CHECKING:
    from ..identity import Entity, EntityAlias, IdentityGroup
    from ..models import SecretsService

__all__ = ["routes"]


class _Record(Protocol):
    @property
    def id(self) -> str: ...


_Found = TypeVar("_Found", bound=_Record)


def _store(call: SecretsRequest) -> IdentityStore:
    return call.service.identity


def _optional_list(body: dict[str, Any], name: str) -> list[str] | None:
    return fields.string_list(body, name) if name in body else None


def _optional_map(body: dict[str, Any], name: str) -> dict[str, str] | None:
    return fields.string_map(body, name) if name in body else None


def _alias_document(alias: EntityAlias) -> dict[str, Any]:
    return {
        "canonical_id": alias.canonical_id,
        "creation_time": format_rfc3339(alias.creation_time),
        "custom_metadata": dict(alias.custom_metadata) or None,
        "id": alias.id,
        "last_update_time": format_rfc3339(alias.creation_time),
        "local": False,
        "merged_from_canonical_ids": None,
        "metadata": dict(alias.metadata) or None,
        "mount_accessor": alias.mount_accessor,
        "mount_path": alias.mount_path,
        "mount_type": alias.mount_type,
        "name": alias.name,
    }


def entity_document(store: IdentityStore, entity: Entity) -> dict[str, Any]:
    """An entity as ``GET identity/entity/id/:id`` shows it."""
    direct, inherited = store.groups_of(entity.id)
    return {
        "aliases": [_alias_document(a) for a in store.aliases_of(entity.id)],
        "creation_time": format_rfc3339(entity.creation_time),
        "direct_group_ids": [g.id for g in direct],
        "disabled": entity.disabled,
        "group_ids": [g.id for g in (*direct, *inherited)],
        "id": entity.id,
        "inherited_group_ids": [g.id for g in inherited],
        "last_update_time": format_rfc3339(entity.last_update_time),
        "merged_entity_ids": None,
        "metadata": dict(entity.metadata) or None,
        "name": entity.name,
        "namespace_id": "root",
        "policies": list(entity.policies),
    }


def group_document(store: IdentityStore, group: IdentityGroup) -> dict[str, Any]:
    """A group as ``GET identity/group/id/:id`` shows it."""
    return {
        "alias": {},
        "creation_time": format_rfc3339(group.creation_time),
        "id": group.id,
        "last_update_time": format_rfc3339(group.last_update_time),
        "member_entity_ids": list(group.member_entity_ids),
        "member_group_ids": list(group.member_group_ids) or None,
        "metadata": dict(group.metadata) or None,
        "modify_index": group.modify_index,
        "name": group.name,
        "namespace_id": "root",
        "parent_group_ids": store.parents_of(group.id) or None,
        "policies": list(group.policies),
        "type": "internal",
    }


def _given(call: SecretsRequest, name: str) -> str:
    """A record's ``id`` or ``name``: from the path when it names the record, else the body."""
    return call.params.get(name) or fields.string(call.body, name)


def _by_path(
    write: Callable[[SecretsRequest], Response],
    find: Callable[[IdentityStore, str], _Found | None],
    delete: Callable[[IdentityStore, str], None],
    document: Callable[[IdentityStore, _Found], dict[str, Any]],
) -> Handler:
    """The handler of a record named by the path (``.../id/:id``, ``.../name/:name``):
    ``POST``/``PUT`` writes it, ``GET`` reads it (404 when unknown), ``DELETE``
    deletes it (204 either way)."""

    async def handler(call: SecretsRequest) -> Response:
        method = call.request.method.upper()
        if method in ("POST", "PUT"):
            return write(call)
        store = _store(call)
        (key,) = call.params.values()
        found = find(store, key)
        if method == "DELETE":
            if found is not None:
                delete(store, found.id)
            return no_content()
        return envelope(document(store, found)) if found is not None else error(404)

    return handler


# -- entities -----------------------------------------------------------------------------
def _write_entity(call: SecretsRequest) -> Response:
    body = call.body
    entity, new = _store(call).write_entity(
        entity_id=_given(call, "id"),
        name=_given(call, "name"),
        policies=_optional_list(body, "policies"),
        metadata=_optional_map(body, "metadata"),
        disabled=fields.boolean(body, "disabled") if "disabled" in body else None,
    )
    if not new:
        return no_content()
    aliases = [a.id for a in _store(call).aliases_of(entity.id)]
    return envelope({"id": entity.id, "name": entity.name, "aliases": aliases or None})


async def entity_create(call: SecretsRequest) -> Response:
    """``POST identity/entity``: create an entity, or update the one named."""
    return _write_entity(call)


# GET/POST/DELETE identity/entity/id/:id
entity_by_id = _by_path(
    _write_entity, IdentityStore.entity, IdentityStore.delete_entity, entity_document
)

# GET/POST/DELETE identity/entity/name/:name
entity_by_name = _by_path(
    _write_entity, IdentityStore.entity_by_name, IdentityStore.delete_entity, entity_document
)


async def entity_ids(call: SecretsRequest) -> Response:
    """``LIST identity/entity/id``: ids, with each entity's name and aliases in ``key_info``."""
    store = _store(call)
    if not store.entities:
        return error(404)
    info = {
        e.id: {
            "name": e.name,
            "aliases": [
                {"id": a.id, "name": a.name, "mount_accessor": a.mount_accessor}
                for a in store.aliases_of(e.id)
            ],
        }
        for e in store.entities.values()
    }
    return envelope({"keys": sorted(info), "key_info": info})


async def entity_names(call: SecretsRequest) -> Response:
    """``LIST identity/entity/name``."""
    return listing([e.name for e in _store(call).entities.values()])


# -- aliases ------------------------------------------------------------------------------
async def alias_create(call: SecretsRequest) -> Response:
    """``POST identity/entity-alias``: tie a login name on a mount (by accessor) to an entity."""
    body = call.body
    accessor = fields.string(body, "mount_accessor")
    name = fields.string(body, "name")
    if not accessor or not name:
        raise InvalidRequest("'id' or 'mount_accessor' and 'name' must be provided")
    mount = next((m for m in call.service.mounts.auth.values() if m.accessor == accessor), None)
    if mount is None:
        raise InvalidRequest(f'invalid mount accessor "{accessor}"')
    canonical = fields.string(body, "canonical_id") or fields.string(body, "entity_id")
    alias = _store(call).write_alias(
        name=name,
        canonical_id=canonical,
        mount_accessor=accessor,
        mount_type=mount.type,
        mount_path=f"auth/{mount.path}",
        custom_metadata=_optional_map(body, "custom_metadata"),
    )
    return envelope({"id": alias.id, "canonical_id": alias.canonical_id})


async def alias_by_id(call: SecretsRequest) -> Response:
    """``GET``/``DELETE identity/entity-alias/id/:id``."""
    store = _store(call)
    alias = store.aliases.get(call.params["id"])
    if call.request.method.upper() == "DELETE":
        store.aliases.pop(call.params["id"], None)
        return no_content()
    if alias is None:
        return error(404)
    document = _alias_document(alias)
    for name in ("creation_time", "last_update_time", "local", "mount_path", "mount_type"):
        document.pop(name)
    return envelope({**document, "namespace_id": "root"})


async def alias_ids(call: SecretsRequest) -> Response:
    """``LIST identity/entity-alias/id``."""
    return listing(list(_store(call).aliases))


# -- groups -------------------------------------------------------------------------------
def _write_group(call: SecretsRequest) -> Response:
    body = call.body
    group, new = _store(call).write_group(
        group_id=_given(call, "id"),
        name=_given(call, "name"),
        kind=fields.string(body, "type"),
        policies=_optional_list(body, "policies"),
        metadata=_optional_map(body, "metadata"),
        member_entity_ids=_optional_list(body, "member_entity_ids"),
        member_group_ids=_optional_list(body, "member_group_ids"),
    )
    if not new:
        return no_content()
    return envelope({"id": group.id, "name": group.name})


async def group_create(call: SecretsRequest) -> Response:
    """``POST identity/group``: create an internal group, or update the one named."""
    return _write_group(call)


# GET/POST/DELETE identity/group/id/:id
group_by_id = _by_path(
    _write_group, IdentityStore.group, IdentityStore.delete_group, group_document
)

# GET/POST/DELETE identity/group/name/:name
group_by_name = _by_path(
    _write_group, IdentityStore.group_by_name, IdentityStore.delete_group, group_document
)


async def group_ids(call: SecretsRequest) -> Response:
    """``LIST identity/group/id``."""
    store = _store(call)
    if not store.groups:
        return error(404)
    info = {
        g.id: {
            "name": g.name,
            "num_member_entities": len(g.member_entity_ids),
            "num_parent_groups": len(store.parents_of(g.id)),
        }
        for g in store.groups.values()
    }
    return envelope({"keys": sorted(info), "key_info": info})


async def group_names(call: SecretsRequest) -> Response:
    """``LIST identity/group/name``."""
    return listing([g.name for g in _store(call).groups.values()])


def routes(service: SecretsService) -> list[Route]:
    every = ["GET", "DELETE", *WRITE]
    return [
        route(service, "identity/entity", entity_create, WRITE),
        route(service, "identity/entity/id", entity_ids, ["LIST"]),
        route(service, "identity/entity/id/{id}", entity_by_id, every),
        route(service, "identity/entity/name", entity_names, ["LIST"]),
        route(service, "identity/entity/name/{name}", entity_by_name, every),
        route(service, "identity/entity-alias", alias_create, WRITE),
        route(service, "identity/entity-alias/id", alias_ids, ["LIST"]),
        route(service, "identity/entity-alias/id/{id}", alias_by_id, ["GET", "DELETE"]),
        route(service, "identity/group", group_create, WRITE),
        route(service, "identity/group/id", group_ids, ["LIST"]),
        route(service, "identity/group/id/{id}", group_by_id, every),
        route(service, "identity/group/name", group_names, ["LIST"]),
        route(service, "identity/group/name/{name}", group_by_name, every),
    ]
