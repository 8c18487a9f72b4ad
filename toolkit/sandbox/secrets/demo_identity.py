"""Demo identity: entities and groups for the demo users, a templated policy, token roles,
and an AppRole whose logins are one entity.

Loaded after the demo logins (:mod:`.demo_logins`), so that each entity's alias names a
login that exists: a login then finds its entity through the alias, and the templated
policy is filled from that entity's metadata and groups. Who-can and the access-review
runbook show the answers that depend on identity offline.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from .token_roles import StoredTokenRole

if TYPE_CHECKING:
    from .models import SecretsService

__all__ = ["TEAM_ACCESS_POLICY", "load_demo_identity"]

# A templated policy: each team reads its own database credentials and issues its own
# certificates; the platform group's members check out its library set.
TEAM_ACCESS_POLICY = """\
# Each team reads its own database credentials and issues its own certificates.
path "database/creds/{{identity.entity.metadata.team}}" {
  capabilities = ["read"]
}
path "pki/issue/{{identity.entity.metadata.team}}" {
  capabilities = ["update"]
}
# Members of the platform team borrow from the team's library set.
path "ad/library/{{identity.groups.names.platform-team.metadata.library}}/check-out" {
  capabilities = ["update"]
}
"""

ON_CALL_POLICY = """\
# On-call engineers renew and revoke any lease.
path "sys/leases/renew" {
  capabilities = ["update"]
}
path "sys/leases/revoke" {
  capabilities = ["update"]
}
"""

# entity name: (login method, alias name on it, metadata, the entity's own policies)
DEMO_ENTITIES: dict[str, tuple[str, str, dict[str, str], list[str]]] = {
    "olivia": ("userpass", "olivia", {"team": "platform"}, []),
    "arthur": ("userpass", "arthur", {"team": "security"}, []),
    "lena": ("ldap", "lena.ops", {"team": "platform"}, []),
    # The nightly audit AppRole: every login of the role is this entity (its alias is
    # the role id).
    "nightly-audit-bot": ("approle", "demo-role-nightly-audit", {"team": "security"}, []),
}

# group name: (member entities, member groups, policies, metadata)
DEMO_GROUPS: dict[str, tuple[list[str], list[str], list[str], dict[str, str]]] = {
    "platform-team": (["olivia", "lena"], [], ["team-access"], {"library": "dev-accounts"}),
    "security-team": (["arthur", "nightly-audit-bot"], [], ["team-access"], {}),
    # A parent group: its policies reach the members of its member groups.
    "engineering": ([], ["platform-team"], ["on-call"], {}),
}

DEMO_TOKEN_ROLES = [
    StoredTokenRole(
        "ci-deployer",
        allowed_policies=["db-readers"],
        disallowed_policies=["operators"],
        orphan=True,
        token_period=24 * 3600,
    ),
    StoredTokenRole("break-glass", allowed_policies_glob=["on-*"], token_explicit_max_ttl=3600),
    StoredTokenRole(
        "service-identity",
        allowed_policies=["db-readers"],
        allowed_entity_aliases=["svc-*"],
        token_no_default_policy=True,
    ),
]


def _demo_id(kind: str, name: str) -> str:
    """The same id for a demo record at every start (runbooks' saved outputs show them)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"toolkit-sandbox-demo/{kind}/{name}"))


def load_demo_identity(service: SecretsService) -> None:
    service.policies.put("acl", "team-access", TEAM_ACCESS_POLICY)
    service.policies.put("acl", "on-call", ON_CALL_POLICY)
    identity = service.identity
    ids: dict[str, str] = {}
    for name, (method, alias, metadata, policies) in DEMO_ENTITIES.items():
        entity, _ = identity.write_entity(
            name=name, metadata=metadata, policies=policies, new_id=_demo_id("entity", name)
        )
        ids[name] = entity.id
        mount = service.mounts.auth[method + "/"]
        identity.write_alias(
            name=alias,
            canonical_id=entity.id,
            mount_accessor=mount.accessor,
            mount_type=mount.type,
            mount_path=f"auth/{mount.path}",
            new_id=_demo_id("alias", name),
        )
    group_ids: dict[str, str] = {}
    for name, (members, member_groups, policies, metadata) in DEMO_GROUPS.items():
        group, _ = identity.write_group(
            name=name,
            policies=policies,
            metadata=metadata,
            member_entity_ids=[ids[m] for m in members],
            member_group_ids=[group_ids[g] for g in member_groups],
            new_id=_demo_id("group", name),
        )
        group_ids[name] = group.id
    for role in DEMO_TOKEN_ROLES:
        role.check()
        service.token_roles[role.name] = role
