"""Reading the server for the access model: every ACL policy, the principals its auth
methods, token roles, identity store and tokens configure, and what could not be read.

Each answer that is not a success becomes a coverage gap; a store the server does not
serve at all (the sandbox has no identity store) is nothing missed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..._coverage import Coverage
from ..._errors import APIError, DecodeError, MountNotFound, one_line
from ..._http import HTTPLayer, Request, decode_json, segment, segments
from ..._spec.acl import PathRule, parse_acl_policy
from ..._spec.hcl import PolicyParseError
from ..._spec.identity_templates import (
    BLOCKED_SUBSTITUTIONS,
    UNKNOWN_IDENTITY,
    Alias,
    Group,
    Identity,
)
from .._base import error_of, listed_keys, unwrap
from .model import AccessModel
from .principals import Principal, TokenRole, glob_any

__all__ = ["AUTH_METHODS", "read_model"]

# Auth method type -> the folders of its configuration that name policies:
# (folder listed under the mount, the kind of principal it holds).
AUTH_METHODS: dict[str, tuple[tuple[str, str], ...]] = {
    "approle": (("role", "approle_role"),),
    "userpass": (("users", "userpass_user"),),
    "ldap": (("groups", "ldap_group"), ("users", "ldap_user")),
    "jwt": (("role", "jwt_role"),),
    "oidc": (("role", "oidc_role"),),
    "kubernetes": (("role", "kubernetes_role"),),
    "cert": (("certs", "cert_role"),),
}
# The JWT/OIDC plugin's kinds: a role's ``role_type`` (jwt or oidc) names it, whichever
# type its mount was enabled as.
_JWT_KINDS = frozenset({"jwt_role", "oidc_role"})
# Users whose entity alias is their name on the mount, so their entity can be found.
_ALIASED_BY_NAME = frozenset({"userpass_user", "ldap_user"})
_READ_OK = frozenset({400, 403, 404, 405})


def _policies_of(data: Mapping[str, Any], *fields: str) -> list[str]:
    for name in fields:
        value = data.get(name)
        if value:
            if isinstance(value, str):
                return [p.strip() for p in value.split(",") if p.strip()]
            if not isinstance(value, list):
                raise DecodeError(
                    f"the server's answer has {name!r} that is not a list of policies"
                )
            return [str(p) for p in value]
    return []


def _with_default(data: Mapping[str, Any], policies: list[str]) -> tuple[str, ...]:
    if not data.get("token_no_default_policy") and "default" not in policies:
        policies = [*policies, "default"]
    return tuple(dict.fromkeys(policies))


class _Reader:
    """Reads of one load: each answer that is not a success becomes a coverage gap."""

    def __init__(self, http: HTTPLayer) -> None:
        self.http = http
        self.coverage = Coverage("access.load")
        self.identity_read = False

    def gap(self, path: str, status: int | None, reason: str) -> None:
        self.coverage.note_gap(path.lstrip("/"), status, reason)

    def list_keys(self, path: str, *, empty_ok: bool = True) -> list[str]:
        try:
            (response,) = self.http.many([Request("LIST", path, ok_statuses=_READ_OK)])
        except MountNotFound:
            if not empty_ok:
                raise
            # The server has no such store at all (the sandbox has no identity store):
            # there is nothing of that kind to read, so nothing was missed.
            self.coverage.asked.append(f"{path.lstrip('/')} (not served)")
            return []
        if response.status_code == 404 and empty_ok:
            # An empty folder answers {"errors":[]}; a 404 with words ("unsupported
            # path": not the store asked for) is a place not read, never "nobody".
            error = error_of(self.http, response)
            if error.messages:
                self.gap(path, 404, one_line(str(error)))
            return []
        if response.status_code in _READ_OK:
            self.gap(path, response.status_code, _reason(response.status_code, "list"))
            return []
        data = unwrap(decode_json(response, "LIST"))
        self.coverage.note_read()
        return listed_keys(data.get("keys"), "keys")

    def read_each(self, paths: Sequence[str]) -> Iterator[dict[str, Any] | None]:
        """Each path's data (None where refused or gone), in order, as the answers come."""
        calls = [Request("GET", p, ok_statuses=_READ_OK) for p in paths]
        for path, response in zip(paths, self.http.many(calls), strict=True):
            if response.status_code in _READ_OK:
                if response.status_code != 404:  # gone between list and read
                    self.gap(path, response.status_code, _reason(response.status_code, "read"))
                yield None
            else:
                self.coverage.note_read()
                yield unwrap(decode_json(response, "GET"))

    def read_all(self, paths: Sequence[str]) -> list[dict[str, Any] | None]:
        return list(self.read_each(paths))

    def post_all(self, path: str, field_name: str, values: Sequence[str]) -> list[Any]:
        calls = [
            Request("POST", path, json={field_name: v}, idempotent=True, ok_statuses=_READ_OK)
            for v in values
        ]
        found: list[dict[str, Any] | None] = []
        for value, response in zip(values, self.http.many(calls), strict=True):
            if response.status_code in _READ_OK:
                if response.status_code not in (400, 404):
                    self.gap(
                        f"{path} {value}",
                        response.status_code,
                        _reason(response.status_code, "look up"),
                    )
                found.append(None)
            else:
                found.append(unwrap(decode_json(response, "POST")))
        return found


def _reason(status: int, verb: str) -> str:
    if status == 403:
        return f"permission denied: the token may not {verb} this; its principals are not known"
    if status == 405:
        return f"the server does not {verb} this here"
    return f"the server answered {status}"


def read_model(http: HTTPLayer) -> AccessModel:
    """The access model, read from the server through ``http``: what is read is listed
    in :meth:`toolkit.secrets.access.Access.load`; every refusal is a coverage gap."""
    reader = _Reader(http)
    policies, blocked = _read_policies(reader)
    principals: list[Principal] = []
    entities, groups = _read_identity(reader)
    auth_mounts = _read_mounts(reader, "/sys/auth")
    engines = _read_mounts(reader, "/sys/mounts")
    group_policies = _group_policies(groups)
    by_alias: dict[tuple[str, str], Identity] = {}
    entity_policies: dict[str, tuple[str, ...]] = {}
    identities: dict[str, Identity] = {}
    for entity in entities:
        ident = _identity_of(entity, groups)
        identities[ident.entity_id] = ident
        own = listed_keys(entity.get("policies"), "policies")
        for g in ident.groups:
            own.extend(group_policies.get(g.id, ()))
        entity_policies[ident.entity_id] = tuple(dict.fromkeys(own))
        for alias in ident.aliases:
            by_alias[(alias.mount_accessor, alias.name)] = ident
        principals.append(
            Principal(
                f"identity/entity/name/{entity.get('name') or ident.entity_id}",
                "entity",
                str(entity.get("name") or ""),
                entity_policies[ident.entity_id],
                ident,
            )
        )
    for group in groups.values():
        principals.append(
            Principal(
                f"identity/group/name/{group.get('name') or group.get('id')}",
                "group",
                str(group.get("name") or ""),
                group_policies.get(str(group.get("id")), ()),
                UNKNOWN_IDENTITY,
            )
        )
    known = _Known(by_alias, entity_policies, reader.identity_read)
    principals.extend(_read_token_roles(reader, auth_mounts, known))
    principals.extend(_read_auth(reader, auth_mounts, known))
    principals.extend(_read_tokens(reader, identities, entity_policies))
    return AccessModel(
        policies,
        principals,
        reader.coverage,
        blocked,
        None if engines is None else frozenset(engines),
    )


def _read_mounts(reader: _Reader, path: str) -> dict[str, Any] | None:
    """The mounts listed at ``path`` (``sys/auth``, ``sys/mounts``), None when refused."""
    try:
        mounts = unwrap(reader.http.json("GET", path))
    except APIError as exc:
        reader.gap(path, exc.status, _reason(exc.status, "read"))
        return None
    reader.coverage.note_read()
    return {str(k): v for k, v in mounts.items() if isinstance(v, Mapping)}


def _read_policies(reader: _Reader) -> tuple[dict[str, list[PathRule]], dict[str, str]]:
    names = reader.list_keys("/sys/policies/acl", empty_ok=False)
    # Every answer is read before any is parsed: parsing between answers holds the GIL
    # against the fan-out's event loop and slows the reads (docs/decisions.md, access).
    texts = reader.read_all(
        [f"/sys/policies/acl/{segment(n, 'policy name listed by the server')}" for n in names]
    )
    policies: dict[str, list[PathRule]] = {}
    blocked: dict[str, str] = {}
    for name, data in zip(names, texts, strict=True):
        if data is None or name == "root":
            continue
        try:
            policies[name] = parse_acl_policy(str(data.get("policy") or ""), name)
        except PolicyParseError as exc:
            reader.gap(f"sys/policies/acl/{name}", None, str(exc))
            continue
        except Exception as exc:  # noqa: BLE001 - whatever a policy does to the parser
            # (a RecursionError, a parser's own error): that policy is a gap, the rest stands.
            reason = f"the policy could not be read ({type(exc).__name__})"
            reader.gap(f"sys/policies/acl/{name}", None, reason)
            continue
        refused = "".join(
            chars
            for chars, allowed in (
                ("/", data.get("allow_slashes_in_identity_templates")),
                ("*+", data.get("allow_wildcards_in_identity_templates")),
            )
            if not allowed
        )
        if refused != BLOCKED_SUBSTITUTIONS:
            blocked[name] = refused
    return policies, blocked


def _read_identity(reader: _Reader) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    gaps, asked = len(reader.coverage.gaps), len(reader.coverage.asked)
    ids = reader.list_keys("/identity/entity/id")
    entities = [
        e
        for e in reader.read_all(
            [f"/identity/entity/id/{segment(i, 'entity id listed by the server')}" for i in ids]
        )
        if e
    ]
    gids = reader.list_keys("/identity/group/id")
    groups = {
        str(g.get("id")): g
        for g in reader.read_all(
            [f"/identity/group/id/{segment(i, 'group id listed by the server')}" for i in gids]
        )
        if g
    }
    reader.identity_read = len(reader.coverage.gaps) == gaps and not any(
        "not served" in a for a in reader.coverage.asked[asked:]
    )
    return entities, groups


def _read_token_roles(
    reader: _Reader, auth_mounts: Mapping[str, Any] | None, known: _Known
) -> list[Principal]:
    names = reader.list_keys("/auth/token/roles")
    accessor = str(((auth_mounts or {}).get("token/") or {}).get("accessor") or "")
    found = []
    for name, data in zip(
        names,
        reader.read_all(
            [f"/auth/token/roles/{segment(n, 'token role listed by the server')}" for n in names]
        ),
        strict=True,
    ):
        if data is None:
            continue
        role = TokenRole(
            allowed=tuple(_policies_of(data, "allowed_policies")),
            allowed_glob=tuple(_policies_of(data, "allowed_policies_glob")),
            disallowed=tuple(_policies_of(data, "disallowed_policies")),
            disallowed_glob=tuple(_policies_of(data, "disallowed_policies_glob")),
            no_default=bool(data.get("token_no_default_policy")),
            orphan=bool(data.get("orphan")),
            entity_aliases=tuple(a.lower() for a in _policies_of(data, "allowed_entity_aliases")),
        )
        policies, why = role.policies(None)
        where = f"auth/token/roles/{name}"
        # A token of the role inherits its caller's entity, unless the role makes orphans.
        identity: Any = None if role.orphan else UNKNOWN_IDENTITY
        found.append(
            Principal(where, "token_role", name, policies or (), identity, why, policies, role)
        )
        # A token created with ``entity_alias`` carries that alias's entity and its policies.
        for (mount_accessor, alias), ident in sorted(known.by_alias.items()):
            if mount_accessor != accessor or not glob_any(role.entity_aliases, alias.lower()):
                continue
            extra = known.entity_policies[ident.entity_id]
            found.append(
                Principal(
                    f"{where}/entity_alias/{alias}",
                    "token_role_alias",
                    alias,
                    tuple(dict.fromkeys((policies or ()) + extra)),
                    ident,
                    why,
                    policies,
                    role,
                    extra,
                )
            )
    return found


def _read_auth(reader: _Reader, mounts: Mapping[str, Any] | None, known: _Known) -> list[Principal]:
    if mounts is None:
        return []
    found: list[Principal] = []
    for mount, info in sorted(mounts.items()):
        kind = str(info.get("type") or "")
        accessor = str(info.get("accessor") or "")
        folders = AUTH_METHODS.get(kind)
        if folders is None:
            if kind != "token":
                reader.gap(f"auth/{mount}", None, f"auth method {kind!r} is not analysed")
            continue
        group_map: dict[str, tuple[str, ...]] = {}
        for folder, what in folders:
            base = f"/auth/{segments(mount, 'auth mount listed by the server')}/{folder}"
            names = reader.list_keys(base)
            paths = [f"{base}/{segment(n, 'name listed by the server')}" for n in names]
            datas = reader.read_all(paths)
            # An AppRole login's alias is the role's id: every login of a role is one entity.
            alias_of = dict(zip(names, names, strict=True))
            if what == "approle_role":
                ids = reader.read_all([f"{p}/role-id" for p in paths])
                alias_of = {
                    n: str((d or {}).get("role_id") or "") for n, d in zip(names, ids, strict=True)
                }
            for name, data in zip(names, datas, strict=True):
                if data is None:
                    continue
                own = _policies_of(data, "token_policies", "policies")
                kind_of = what
                if what in _JWT_KINDS and data.get("role_type") in ("jwt", "oidc"):
                    # One plugin serves both: the role's own type says how it logs in.
                    kind_of = f"{data['role_type']}_role"
                if what == "ldap_group":
                    policies: tuple[str, ...] = tuple(own)
                    group_map[name.lower()] = policies
                else:
                    if what == "ldap_user":  # its groups' policies come with each login
                        for group in _policies_of(data, "groups"):
                            own = [*own, *group_map.get(group.lower(), ())]
                    policies = _with_default(data, own)
                identity: Any = UNKNOWN_IDENTITY
                depends = ""
                extra: tuple[str, ...] = ()
                if what in _ALIASED_BY_NAME or what == "approle_role":
                    ident = known.by_alias.get((accessor, alias_of.get(name, "")))
                    if ident is not None:
                        identity = ident
                        extra = known.entity_policies[ident.entity_id]
                    elif known.identity_read and alias_of.get(name):
                        depends = (
                            "identity: never logged in, no entity yet (its first login makes one)"
                        )
                found.append(
                    Principal(
                        f"{base.lstrip('/')}/{name}",
                        kind_of,
                        name,
                        tuple(dict.fromkeys(policies + extra)),
                        identity,
                        depends,
                        policies,
                        None,
                        extra,
                    )
                )
    return found


def _read_tokens(
    reader: _Reader,
    identities: Mapping[str, Identity],
    entity_policies: Mapping[str, tuple[str, ...]],
) -> list[Principal]:
    accessors = reader.list_keys("/auth/token/accessors")
    found = []
    for accessor, data in zip(
        accessors,
        reader.post_all("/auth/token/lookup-accessor", "accessor", accessors),
        strict=True,
    ):
        if data is None:
            continue
        own = tuple(listed_keys(data.get("policies"), "policies"))
        extra = tuple(listed_keys(data.get("identity_policies"), "identity_policies"))
        entity = str(data.get("entity_id") or "")
        identity: Any = None
        if entity:
            identity = identities.get(entity, UNKNOWN_IDENTITY)
        found.append(
            Principal(
                f"auth/token/accessors/{accessor}",
                "token",
                str(data.get("display_name") or ""),
                tuple(dict.fromkeys(own + extra)),
                identity,
                "",
                own,
                None,
                extra,
            )
        )
    return found


@dataclass(frozen=True)
class _Known:
    """What the identity store told: entities by (mount accessor, alias name), each
    entity's policies (its groups' included), and whether it was read whole."""

    by_alias: Mapping[tuple[str, str], Identity]
    entity_policies: Mapping[str, tuple[str, ...]]
    identity_read: bool


def _group_policies(groups: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    """Each group's policies with those of every group above it (members inherit them)."""

    def above(gid: str, seen: set[str]) -> list[str]:
        group = groups.get(gid)
        if group is None or gid in seen:
            return []
        seen.add(gid)
        found = listed_keys(group.get("policies"), "policies")
        for parent in group.get("parent_group_ids") or []:
            found.extend(above(str(parent), seen))
        return found

    return {gid: tuple(dict.fromkeys(above(gid, set()))) for gid in groups}


def _identity_of(entity: Mapping[str, Any], groups: Mapping[str, Mapping[str, Any]]) -> Identity:
    ids: list[str] = []
    for key in ("direct_group_ids", "group_ids", "inherited_group_ids"):
        ids.extend(str(g) for g in entity.get(key) or [])
    # Groups above the entity's groups count too (the server passes inherited ones).
    todo = list(dict.fromkeys(ids))
    seen: list[str] = []
    while todo:
        gid = todo.pop(0)
        if gid in seen:
            continue
        seen.append(gid)
        todo.extend(str(p) for p in (groups.get(gid) or {}).get("parent_group_ids") or [])
    return Identity(
        entity_id=str(entity.get("id") or ""),
        entity_name=str(entity.get("name") or ""),
        metadata=dict(entity.get("metadata") or {}),
        aliases=tuple(
            Alias(
                str(a.get("mount_accessor") or ""),
                str(a.get("id") or ""),
                str(a.get("name") or ""),
                dict(a.get("metadata") or {}),
                dict(a.get("custom_metadata") or {}),
            )
            for a in entity.get("aliases") or []
        ),
        groups=tuple(
            Group(gid, str(groups[gid].get("name") or ""), dict(groups[gid].get("metadata") or {}))
            for gid in seen
            if gid in groups
        ),
    )
