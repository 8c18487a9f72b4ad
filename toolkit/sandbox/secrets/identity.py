"""The identity store: entities, their aliases, internal groups, as OpenBao keeps them.

An entity is a person or a machine; an alias ties it to one login method's
name for it (a userpass user name, an AppRole role id), by the mount's
accessor. A login finds the entity through its alias, or creates both. An
internal group holds entities and other groups; an entity's groups are the
ones holding it directly and every group holding one of those (inherited).
The policies of the entity and of all its groups apply to its tokens beside
the tokens' own, and templated ACL paths are filled from what is kept here
(:class:`~toolkit._spec.identity_templates.Identity`).

This module knows nothing of HTTP: the handlers in :mod:`.http.identity` turn
request bodies into the typed arguments below.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from ..._spec.identity_templates import Alias, Group, Identity
from .._clock import Clock
from .errors import InvalidRequest

__all__ = ["Entity", "EntityAlias", "IdentityGroup", "IdentityStore"]


@dataclass
class EntityAlias:
    id: str
    name: str
    canonical_id: str
    mount_accessor: str
    mount_type: str
    mount_path: str
    creation_time: datetime
    metadata: dict[str, str] = field(default_factory=dict)
    custom_metadata: dict[str, str] = field(default_factory=dict)


@dataclass
class Entity:
    id: str
    name: str
    creation_time: datetime
    last_update_time: datetime
    policies: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    disabled: bool = False


@dataclass
class IdentityGroup:
    id: str
    name: str
    creation_time: datetime
    last_update_time: datetime
    policies: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    member_entity_ids: list[str] = field(default_factory=list)
    member_group_ids: list[str] = field(default_factory=list)
    modify_index: int = 1


def _policies(names: list[str]) -> list[str]:
    kept = sorted({n.strip().lower() for n in names if n.strip()})
    if "root" in kept:
        raise InvalidRequest("policies cannot contain root")
    return kept


_Record = TypeVar("_Record", Entity, IdentityGroup)


def _by_name(table: Mapping[str, _Record], name: str) -> _Record | None:
    """The entity or group of ``name``, compared without case as the real server does."""
    wanted = name.lower()
    return next((r for r in table.values() if r.name.lower() == wanted), None)


def _written(
    table: Mapping[str, _Record], record_id: str, name: str, *, unknown: str, taken: str
) -> _Record | None:
    """The entity or group a write updates: the one of ``record_id`` (``unknown`` when there
    is none), else the one of ``name``; None for a new one. A ``name`` another one has is
    ``taken``."""
    found: _Record | None = None
    if record_id:
        found = table.get(record_id)
        if found is None:
            raise InvalidRequest(unknown)
    if name:
        named = _by_name(table, name)
        if named is not None:
            if found is None:
                found = named
            elif named.id != found.id:
                raise InvalidRequest(taken)
    return found


class IdentityStore:
    """Every entity, alias and internal group of the server."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.entities: dict[str, Entity] = {}
        self.aliases: dict[str, EntityAlias] = {}
        self.groups: dict[str, IdentityGroup] = {}

    def __repr__(self) -> str:
        return (
            f"<IdentityStore {len(self.entities)} entities, {len(self.aliases)} aliases, "
            f"{len(self.groups)} groups>"
        )

    # -- entities ---------------------------------------------------------------------
    def entity(self, entity_id: str) -> Entity | None:
        return self.entities.get(entity_id)

    def entity_by_name(self, name: str) -> Entity | None:
        return _by_name(self.entities, name)

    def write_entity(
        self,
        *,
        entity_id: str = "",
        name: str = "",
        policies: list[str] | None = None,
        metadata: dict[str, str] | None = None,
        disabled: bool | None = None,
        new_id: str = "",
    ) -> tuple[Entity, bool]:
        """Create an entity, or update the one named by ``entity_id`` or ``name``
        (``POST identity/entity``); answers it and whether it is new. ``new_id``: the id
        a new one gets (demo data, to be the same each start), a random one otherwise."""
        entity = _written(
            self.entities,
            entity_id,
            name,
            unknown="entity not found from id",
            taken="entity name is already in use",
        )
        kept = _policies(policies) if policies is not None else None
        now = self.clock.now()
        new = entity is None
        if entity is None:
            new_id = new_id or str(uuid.uuid4())
            entity = Entity(new_id, name or f"entity_{new_id[:8]}", now, now)
        elif name:
            entity.name = name
        if kept is not None:
            entity.policies = kept
        if metadata is not None:
            entity.metadata = dict(metadata)
        if disabled is not None:
            entity.disabled = disabled
        entity.last_update_time = now
        self.entities[entity.id] = entity
        return entity, new

    def delete_entity(self, entity_id: str) -> None:
        """Delete an entity with its aliases, and take it out of every group."""
        if self.entities.pop(entity_id, None) is None:
            return
        for alias in [a for a in self.aliases.values() if a.canonical_id == entity_id]:
            del self.aliases[alias.id]
        for group in self.groups.values():
            if entity_id in group.member_entity_ids:
                group.member_entity_ids.remove(entity_id)

    def aliases_of(self, entity_id: str) -> list[EntityAlias]:
        return [a for a in self.aliases.values() if a.canonical_id == entity_id]

    # -- aliases ----------------------------------------------------------------------
    def alias_for(self, mount_accessor: str, name: str) -> EntityAlias | None:
        return next(
            (
                a
                for a in self.aliases.values()
                if a.mount_accessor == mount_accessor and a.name == name
            ),
            None,
        )

    def write_alias(
        self,
        *,
        name: str,
        canonical_id: str,
        mount_accessor: str,
        mount_type: str,
        mount_path: str,
        custom_metadata: dict[str, str] | None = None,
        new_id: str = "",
    ) -> EntityAlias:
        """``POST identity/entity-alias``: tie ``name`` on a mount to an entity."""
        if canonical_id not in self.entities:
            raise InvalidRequest("invalid canonical ID")
        existing = self.alias_for(mount_accessor, name)
        if existing is not None:
            if existing.canonical_id == canonical_id:
                if custom_metadata is not None:
                    existing.custom_metadata = dict(custom_metadata)
                return existing
            raise InvalidRequest("alias with combination of mount accessor and name already exists")
        if any(a.mount_accessor == mount_accessor for a in self.aliases_of(canonical_id)):
            raise InvalidRequest("Alias already exists for requested entity and mount accessor")
        alias = EntityAlias(
            new_id or str(uuid.uuid4()),
            name,
            canonical_id,
            mount_accessor,
            mount_type,
            mount_path,
            self.clock.now(),
            custom_metadata=dict(custom_metadata or {}),
        )
        self.aliases[alias.id] = alias
        return alias

    def forget_mount(self, mount_accessor: str) -> None:
        """Drop every alias made on an auth mount (the mount was disabled)."""
        for alias in [a for a in self.aliases.values() if a.mount_accessor == mount_accessor]:
            del self.aliases[alias.id]

    def login(
        self, mount_accessor: str, mount_type: str, mount_path: str, alias_name: str
    ) -> Entity:
        """The entity of a login: found through its alias, or created with one."""
        alias = self.alias_for(mount_accessor, alias_name)
        if alias is not None and alias.canonical_id in self.entities:
            return self.entities[alias.canonical_id]
        entity, _ = self.write_entity()
        self.write_alias(
            name=alias_name,
            canonical_id=entity.id,
            mount_accessor=mount_accessor,
            mount_type=mount_type,
            mount_path=mount_path,
        )
        return entity

    # -- groups -----------------------------------------------------------------------
    def group(self, group_id: str) -> IdentityGroup | None:
        return self.groups.get(group_id)

    def group_by_name(self, name: str) -> IdentityGroup | None:
        return _by_name(self.groups, name)

    def write_group(
        self,
        *,
        group_id: str = "",
        name: str = "",
        kind: str = "",
        policies: list[str] | None = None,
        metadata: dict[str, str] | None = None,
        member_entity_ids: list[str] | None = None,
        member_group_ids: list[str] | None = None,
        new_id: str = "",
    ) -> tuple[IdentityGroup, bool]:
        """``POST identity/group``: create an internal group, or update the one named."""
        if kind not in ("", "internal"):
            if kind == "external":
                raise InvalidRequest("the sandbox keeps internal groups only")
            raise InvalidRequest(f"invalid group type {kind!r}")
        group = _written(
            self.groups,
            group_id,
            name,
            unknown="invalid group ID",
            taken="group name is already in use",
        )
        kept = _policies(policies) if policies is not None else None
        for member in member_entity_ids or []:
            if member not in self.entities:
                raise InvalidRequest(f"entity {member!r} does not exist")
        new = group is None
        candidate_id = group.id if group is not None else new_id or str(uuid.uuid4())
        for member in member_group_ids or []:
            if member not in self.groups:
                raise InvalidRequest(f"group {member!r} does not exist")
            if member == candidate_id or member in self._ancestors_of(candidate_id):
                raise InvalidRequest(
                    f"member group ID {member!r} is already a parent of this group: "
                    "that would make a cycle"
                )
        now = self.clock.now()
        if group is None:
            group = IdentityGroup(candidate_id, name or f"group_{candidate_id[:8]}", now, now)
        else:
            group.modify_index += 1
            if name:
                group.name = name
        if kept is not None:
            group.policies = kept
        if metadata is not None:
            group.metadata = dict(metadata)
        if member_entity_ids is not None:
            group.member_entity_ids = list(dict.fromkeys(member_entity_ids))
        if member_group_ids is not None:
            group.member_group_ids = list(dict.fromkeys(member_group_ids))
        group.last_update_time = now
        self.groups[group.id] = group
        return group, new

    def delete_group(self, group_id: str) -> None:
        if self.groups.pop(group_id, None) is None:
            return
        for other in self.groups.values():
            if group_id in other.member_group_ids:
                other.member_group_ids.remove(group_id)

    def parents_of(self, group_id: str) -> list[str]:
        return [g.id for g in self.groups.values() if group_id in g.member_group_ids]

    def _ancestors_of(self, group_id: str) -> set[str]:
        found: set[str] = set()
        pending = [group_id]
        while pending:
            for parent in self.parents_of(pending.pop()):
                if parent not in found:
                    found.add(parent)
                    pending.append(parent)
        return found

    def groups_of(self, entity_id: str) -> tuple[list[IdentityGroup], list[IdentityGroup]]:
        """The groups holding the entity: (direct, inherited through parent groups)."""
        direct = [g for g in self.groups.values() if entity_id in g.member_entity_ids]
        direct_ids = {g.id for g in direct}
        inherited_ids: set[str] = set()
        for group in direct:
            inherited_ids |= self._ancestors_of(group.id)
        inherited = [self.groups[i] for i in sorted(inherited_ids - direct_ids)]
        return direct, inherited

    # -- what a token of the entity carries ------------------------------------------
    def policies_of(self, entity_id: str) -> list[str]:
        """The identity policies of an entity: its own and all its groups' (none if disabled
        or unknown)."""
        entity = self.entities.get(entity_id)
        if entity is None:
            return []
        direct, inherited = self.groups_of(entity_id)
        names = set(entity.policies)
        for group in (*direct, *inherited):
            names.update(group.policies)
        return sorted(names)

    def identity_of(self, entity_id: str) -> Identity | None:
        """What templated ACL paths are filled from, for a token of this entity."""
        entity = self.entities.get(entity_id)
        if entity is None:
            return None
        direct, inherited = self.groups_of(entity_id)
        return Identity(
            entity_id=entity.id,
            entity_name=entity.name,
            metadata=dict(entity.metadata),
            aliases=tuple(
                Alias(a.mount_accessor, a.id, a.name, dict(a.metadata), dict(a.custom_metadata))
                for a in self.aliases_of(entity_id)
            ),
            groups=tuple(Group(g.id, g.name, dict(g.metadata)) for g in (*direct, *inherited)),
        )
