"""Differential scenarios of identity, token roles, token options, login role options, and
the routes around them (trailing-slash LISTs, paging, the token and AppRole endpoints).

Written once, run against the sandbox and a dev OpenBao (``scenarios.SCENARIOS``). Names
start with ``diff-`` and everything made is removed at the end, so the dev server is
left as it was for the other scenarios.
"""

from __future__ import annotations

from typing import Any

from ._differential import Target

TEMPLATED = """path "secret/data/team/{{identity.entity.metadata.team}}/*" {
  capabilities = ["read"]
}
path "secret/data/by-name/{{identity.entity.name}}" {
  capabilities = ["read", "list"]
}
path "secret/data/tier/{{identity.groups.names.diff-parent.metadata.tier}}/*" {
  capabilities = ["update"]
}
path "secret/data/fixed" {
  capabilities = ["read"]
}
"""


def _policy(path: str, capability: str = "read") -> str:
    return f'path "{path}" {{\n  capabilities = ["{capability}"]\n}}\n'


def _keys(body: Any) -> list[str]:
    return sorted(body["data"]["keys"])


def _auth(*names: str) -> dict[str, Any]:
    def pick(body: Any, name: str) -> Any:
        value = body["auth"][name]
        return sorted(value) if isinstance(value, list) else value

    return {name: (lambda b, name=name: pick(b, name)) for name in names}


def _data(*names: str) -> dict[str, Any]:
    def pick(body: Any, name: str) -> Any:
        value = body["data"][name]
        return sorted(value) if isinstance(value, list) else value

    return {name: (lambda b, name=name: pick(b, name)) for name in names}


def _caps(t: Target, step: str, token: str, path: str, **extra: Any) -> Any:
    return t.call(
        step,
        "POST",
        "sys/capabilities",
        json={"token": token, "paths": [path]},
        checks={"capabilities": lambda b: b["capabilities"]},
        **extra,
    )


def _enable_logins(t: Target) -> str:
    """Enable userpass and AppRole at their usual paths; answers userpass's accessor."""
    t.call("enable userpass", "POST", "sys/auth/userpass", json={"type": "userpass"})
    t.call("enable approle", "POST", "sys/auth/approle", json={"type": "approle"})
    t.call(
        "read userpass mount",
        "GET",
        "sys/auth/userpass",
        checks={"type": lambda b: b["data"]["type"]},
    )
    table = t.call("", "GET", "sys/auth", record=False)
    return str(table["data"]["userpass/"]["accessor"])


def _disable_logins(t: Target) -> None:
    t.call("disable userpass", "DELETE", "sys/auth/userpass")
    t.call("disable approle", "DELETE", "sys/auth/approle")


# -- identity ------------------------------------------------------------------------------
def identity(t: Target) -> None:
    accessor = _enable_logins(t)
    for name, text in (
        ("diff-tpl", TEMPLATED),
        ("diff-ent", _policy("secret/data/ent")),
        ("diff-grp", _policy("secret/data/grp")),
        ("diff-top", _policy("secret/data/top")),
    ):
        t.call(f"policy {name}", "PUT", f"sys/policies/acl/{name}", json={"policy": text})
    alice = t.call(
        "entity create",
        "POST",
        "identity/entity",
        json={"name": "diff-alice", "policies": ["diff-ent"], "metadata": {"team": "blue"}},
        checks={"name": lambda b: b["data"]["name"]},
    )["data"]["id"]
    t.call(
        "entity update by name",
        "POST",
        "identity/entity",
        json={"name": "diff-alice", "metadata": {"team": "blue", "site": "x"}},
    )
    t.call(
        "entity create root policy",
        "POST",
        "identity/entity",
        json={"name": "diff-root", "policies": ["root"]},
        errors=True,
    )
    t.call(
        "entity read by name",
        "GET",
        "identity/entity/name/diff-alice",
        checks={
            **_data("name", "policies", "disabled", "direct_group_ids"),
            "metadata": lambda b: sorted(b["data"]["metadata"].items()),
            "aliases": lambda b: len(b["data"]["aliases"]),
            "is alice": lambda b: b["data"]["id"] == alice,
        },
    )
    t.call("entity read unknown", "GET", "identity/entity/id/no-such-entity")
    t.call(
        "alias create",
        "POST",
        "identity/entity-alias",
        json={"name": "alice", "mount_accessor": accessor, "canonical_id": alice},
        checks={"canonical": lambda b: b["data"]["canonical_id"] == alice},
    )
    t.call(
        "alias unknown accessor",
        "POST",
        "identity/entity-alias",
        json={"name": "x", "mount_accessor": "auth_nope_1234", "canonical_id": alice},
    )
    child = t.call(
        "group create",
        "POST",
        "identity/group",
        json={"name": "diff-child", "policies": ["diff-grp"], "member_entity_ids": [alice]},
        checks={"name": lambda b: b["data"]["name"]},
    )["data"]["id"]
    parent = t.call(
        "group create parent",
        "POST",
        "identity/group",
        json={
            "name": "diff-parent",
            "policies": ["diff-top"],
            "member_group_ids": [child],
            "metadata": {"tier": "gold"},
        },
    )["data"]["id"]
    t.call(
        "group read",
        "GET",
        "identity/group/name/diff-child",
        checks={
            **_data("name", "policies", "type"),
            "members": lambda b: b["data"]["member_entity_ids"] == [alice],
            "parents": lambda b: b["data"]["parent_group_ids"] == [parent],
        },
    )
    t.call(
        "group cycle",
        "POST",
        f"identity/group/id/{child}",
        json={"member_group_ids": [parent]},
    )
    t.call(
        "entity groups",
        "GET",
        f"identity/entity/id/{alice}",
        checks={
            "direct": lambda b: b["data"]["direct_group_ids"] == [child],
            "inherited": lambda b: b["data"]["inherited_group_ids"] == [parent],
            "alias": lambda b: [a["name"] for a in b["data"]["aliases"]],
            "alias mount": lambda b: [a["mount_type"] for a in b["data"]["aliases"]],
        },
    )
    t.call(
        "user write",
        "POST",
        "auth/userpass/users/alice",
        json={"password": "diff-pass-1", "token_policies": ["diff-tpl"]},
    )
    token = t.call(
        "login through the alias",
        "POST",
        "auth/userpass/login/alice",
        json={"password": "diff-pass-1"},
        checks={
            **_auth("token_policies", "identity_policies", "policies"),
            "entity": lambda b: b["auth"]["entity_id"] == alice,
        },
    )["auth"]["client_token"]
    for step, path in (
        ("filled metadata", "secret/data/team/blue/x"),
        ("other team", "secret/data/team/red/x"),
        ("filled name", "secret/data/by-name/diff-alice"),
        ("filled group metadata", "secret/data/tier/gold/x"),
        ("entity policy", "secret/data/ent"),
        ("group policy", "secret/data/grp"),
        ("parent group policy", "secret/data/top"),
    ):
        _caps(t, f"capabilities {step}", token, path)
    t.call(
        "metadata with a slash",
        "POST",
        f"identity/entity/id/{alice}",
        json={"metadata": {"team": "a/b"}},
    )
    _caps(t, "capabilities refused for a slash", token, "secret/data/fixed", errors=True)
    t.call("lookup-self refused for a slash", "GET", "auth/token/lookup-self", token=token)
    t.call(
        "metadata with a star",
        "POST",
        f"identity/entity/id/{alice}",
        json={"metadata": {"team": "a*"}},
    )
    _caps(t, "capabilities refused for a star", token, "secret/data/fixed", errors=True)
    t.call(
        "metadata without the key",
        "POST",
        f"identity/entity/id/{alice}",
        json={"metadata": {"site": "a/b"}},
    )
    _caps(t, "capabilities without the key", token, "secret/data/fixed")
    t.call(
        "user bob",
        "POST",
        "auth/userpass/users/bob",
        json={"password": "diff-pass-2", "token_policies": ["default"]},
    )
    bob = t.call(
        "first login makes an entity",
        "POST",
        "auth/userpass/login/bob",
        json={"password": "diff-pass-2"},
        checks={"has entity": lambda b: bool(b["auth"]["entity_id"])},
    )["auth"]["entity_id"]
    t.call(
        "second login finds it",
        "POST",
        "auth/userpass/login/bob",
        json={"password": "diff-pass-2"},
        checks={"same": lambda b: b["auth"]["entity_id"] == bob},
    )
    t.call(
        "made entity",
        "GET",
        f"identity/entity/id/{bob}",
        checks={
            "name prefix": lambda b: b["data"]["name"].split("_")[0],
            "alias": lambda b: [(a["name"], a["mount_type"]) for a in b["data"]["aliases"]],
            **_data("policies", "metadata"),
        },
    )
    t.call(
        "approle role",
        "POST",
        "auth/approle/role/diff-app",
        json={"token_policies": ["diff-ent"], "secret_id_num_uses": 0},
    )
    role_id = t.call("approle role id", "GET", "auth/approle/role/diff-app/role-id")["data"][
        "role_id"
    ]
    secret = t.call("approle secret id", "POST", "auth/approle/role/diff-app/secret-id")["data"][
        "secret_id"
    ]
    app = t.call(
        "approle login makes an entity",
        "POST",
        "auth/approle/login",
        json={"role_id": role_id, "secret_id": secret},
        checks={"has entity": lambda b: bool(b["auth"]["entity_id"])},
    )["auth"]["entity_id"]
    t.call(
        "approle login again",
        "POST",
        "auth/approle/login",
        json={"role_id": role_id, "secret_id": secret},
        checks={"same": lambda b: b["auth"]["entity_id"] == app},
    )
    t.call(
        "approle entity alias is the role id",
        "GET",
        f"identity/entity/id/{app}",
        checks={"alias": lambda b: [a["name"] == role_id for a in b["data"]["aliases"]]},
    )
    t.call(
        "entity names",
        "LIST",
        "identity/entity/name",
        checks={"has alice": lambda b: "diff-alice" in b["data"]["keys"]},
    )
    t.call("group names", "LIST", "identity/group/name/", checks={"keys": _keys})
    t.call(
        "entity ids",
        "LIST",
        "identity/entity/id",
        checks={"alice named": lambda b: b["data"]["key_info"][alice]["name"]},
    )
    t.call(
        "disable the entity",
        "POST",
        f"identity/entity/id/{alice}",
        json={"disabled": True, "metadata": {"team": "blue"}},
    )
    t.call("disabled entity's token", "GET", "auth/token/lookup-self", token=token)
    for group in (parent, child):
        t.call(f"group delete {group == parent}", "DELETE", f"identity/group/id/{group}")
    t.call("group read deleted", "GET", f"identity/group/id/{child}")
    for who, entity in (("alice", alice), ("bob", bob), ("app", app)):
        t.call(f"entity delete {who}", "DELETE", f"identity/entity/id/{entity}")
    t.call("entity delete again", "DELETE", f"identity/entity/id/{alice}")
    for name in ("diff-tpl", "diff-ent", "diff-grp", "diff-top"):
        t.call(f"policy delete {name}", "DELETE", f"sys/policies/acl/{name}")
    _disable_logins(t)


# -- token roles ---------------------------------------------------------------------------
def token_roles(t: Target) -> None:
    for name in ("diff-a", "diff-b", "diff-c", "diff-gx"):
        t.call(f"policy {name}", "PUT", f"sys/policies/acl/{name}", json={"policy": _policy(name)})
    t.call(
        "role write",
        "POST",
        "auth/token/roles/diff-role",
        json={
            "allowed_policies": ["diff-a", "diff-b"],
            "disallowed_policies": ["diff-c"],
            "allowed_policies_glob": ["diff-g*"],
        },
    )
    t.call(
        "role read",
        "GET",
        "auth/token/roles/diff-role",
        checks={"data": lambda b: sorted((k, str(v)) for k, v in b["data"].items())},
    )
    policies = _auth("token_policies", "orphan", "token_type", "renewable")
    t.call("create through the role", "POST", "auth/token/create/diff-role", checks=policies)
    t.call(
        "create a subset",
        "POST",
        "auth/token/create/diff-role",
        json={"policies": ["diff-a"]},
        checks=policies,
    )
    t.call(
        "create a glob policy",
        "POST",
        "auth/token/create/diff-role",
        json={"policies": ["diff-gx"]},
        checks=policies,
    )
    t.call(
        "create outside the role",
        "POST",
        "auth/token/create/diff-role",
        json={"policies": ["diff-c"]},
        errors=True,
    )
    t.call(
        "role disallowing default",
        "POST",
        "auth/token/roles/diff-nodef",
        json={"allowed_policies": ["diff-a"], "disallowed_policies": ["default"]},
    )
    t.call("create without default", "POST", "auth/token/create/diff-nodef", checks=policies)
    t.call(
        "role disallowing only",
        "POST",
        "auth/token/roles/diff-dis",
        json={"disallowed_policies": ["diff-c"]},
    )
    limited = t.call(
        "limited caller",
        "POST",
        "auth/token/create",
        json={"policies": ["diff-c", "diff-a"], "ttl": "1h"},
        record=False,
    )["auth"]["client_token"]
    t.call(
        "caller's policies disallowed",
        "POST",
        "auth/token/create/diff-dis",
        token=limited,
        errors=True,
    )
    t.call(
        "role without lists ignores token_no_default_policy",
        "POST",
        "auth/token/roles/diff-plain",
        json={"token_no_default_policy": True},
    )
    t.call(
        "create through the plain role",
        "POST",
        "auth/token/create/diff-plain",
        json={"policies": ["diff-a"]},
        checks=policies,
    )
    t.call(
        "role with no default",
        "POST",
        "auth/token/roles/diff-nodefault",
        json={"allowed_policies": ["diff-a"], "token_no_default_policy": True},
    )
    t.call("create with no default", "POST", "auth/token/create/diff-nodefault", checks=policies)
    t.call(
        "role with aliases",
        "POST",
        "auth/token/roles/diff-alias",
        json={"allowed_policies": ["diff-a"], "allowed_entity_aliases": ["diff-svc-*"]},
    )
    entity = t.call(
        "create with an entity alias",
        "POST",
        "auth/token/create/diff-alias",
        json={"entity_alias": "diff-svc-1"},
        checks={"has entity": lambda b: bool(b["auth"]["entity_id"]), **policies},
    )["auth"]["entity_id"]
    t.call(
        "the alias's entity",
        "GET",
        f"identity/entity/id/{entity}",
        checks={"alias": lambda b: [(a["name"], a["mount_type"]) for a in b["data"]["aliases"]]},
    )
    t.call(
        "create with an alias not allowed",
        "POST",
        "auth/token/create/diff-alias",
        json={"entity_alias": "other"},
        errors=True,
    )
    t.call("create through an unknown role", "POST", "auth/token/create/diff-nope", errors=True)
    t.call(
        "role ttl above max",
        "POST",
        "auth/token/roles/diff-bad",
        json={"token_ttl": "2h", "token_max_ttl": "1h"},
        errors=True,
    )
    t.call(
        "role batch with a parent",
        "POST",
        "auth/token/roles/diff-bad",
        json={"token_type": "batch"},
        errors=True,
    )
    t.call(
        "role periodic orphan",
        "POST",
        "auth/token/roles/diff-period",
        json={"allowed_policies": ["diff-a"], "orphan": True, "token_period": "1h"},
    )
    t.call(
        "create periodic",
        "POST",
        "auth/token/create/diff-period",
        checks={**policies, **_auth("lease_duration")},
    )
    t.call(
        "role limited uses",
        "POST",
        "auth/token/roles/diff-uses",
        json={"allowed_policies": ["diff-a"], "token_num_uses": 3},
    )
    t.call(
        "create limited",
        "POST",
        "auth/token/create/diff-uses",
        json={"num_uses": 5},
        checks=_auth("num_uses"),
    )
    t.call(
        "role read limited",
        "GET",
        "auth/token/roles/diff-uses",
        checks=_data("token_num_uses", "allowed_policies"),
    )
    t.call("roles listed with a slash", "LIST", "auth/token/roles/", checks={"keys": _keys})
    for name in (
        "diff-bad",
        "diff-role",
        "diff-nodef",
        "diff-dis",
        "diff-plain",
        "diff-nodefault",
        "diff-alias",
        "diff-period",
        "diff-uses",
    ):
        t.call(f"role delete {name}", "DELETE", f"auth/token/roles/{name}")
    t.call("roles after delete", "LIST", "auth/token/roles")
    t.call("entity delete", "DELETE", f"identity/entity/id/{entity}")
    for name in ("diff-a", "diff-b", "diff-c", "diff-gx"):
        t.call(f"policy delete {name}", "DELETE", f"sys/policies/acl/{name}")


# -- token options ---------------------------------------------------------------------------
CREATOR = """path "auth/token/create*" {
  capabilities = ["update"]
}
path "auth/token/revoke-orphan" {
  capabilities = ["update"]
}
"""


def token_options(t: Target) -> None:
    t.call("policy creator", "PUT", "sys/policies/acl/diff-creator", json={"policy": CREATOR})
    lookup = {"num_uses": lambda b: b["data"]["num_uses"]}
    limited = t.call(
        "create with uses",
        "POST",
        "auth/token/create",
        json={"num_uses": 2, "policies": ["default"]},
        checks=_auth("num_uses"),
    )["auth"]["client_token"]
    for step in ("first use", "last use", "used up"):
        t.call(step, "GET", "auth/token/lookup-self", token=limited, checks=lookup, errors=True)
    t.call(
        "create negative uses",
        "POST",
        "auth/token/create",
        json={"num_uses": -1},
        errors=True,
    )
    batch = t.call(
        "create batch",
        "POST",
        "auth/token/create",
        json={"type": "batch", "policies": ["default"], "ttl": "1h"},
        checks={
            **_auth("token_type", "accessor", "renewable", "lease_duration", "orphan"),
            "prefix": lambda b: b["auth"]["client_token"][:2],
        },
    )["auth"]["client_token"]
    t.call(
        "batch lookup",
        "GET",
        "auth/token/lookup-self",
        token=batch,
        checks=_data("type", "accessor", "renewable"),
    )
    t.call("batch renew", "POST", "auth/token/renew-self", token=batch, errors=True)
    t.call("batch creates", "POST", "auth/token/create", token=batch, errors=True)
    t.call(
        "batch with uses",
        "POST",
        "auth/token/create",
        json={"type": "batch", "num_uses": 2},
        errors=True,
    )
    t.call("bad type", "POST", "auth/token/create", json={"type": "other"}, errors=True)
    t.call(
        "explicit max",
        "POST",
        "auth/token/create",
        json={"policies": ["default"], "ttl": "5h", "explicit_max_ttl": "2h"},
        checks=_auth("lease_duration", "renewable"),
    )
    periodic = t.call(
        "periodic",
        "POST",
        "auth/token/create",
        json={"policies": ["default"], "period": "1h"},
        checks=_auth("lease_duration", "renewable"),
    )["auth"]["client_token"]
    t.call(
        "periodic renew",
        "POST",
        "auth/token/renew-self",
        token=periodic,
        json={"increment": "10h"},
        checks=_auth("lease_duration"),
    )
    t.call(
        "periodic lookup",
        "GET",
        "auth/token/lookup-self",
        token=periodic,
        checks=_data("period", "explicit_max_ttl", "type"),
    )
    t.call(
        "custom id",
        "POST",
        "auth/token/create",
        json={"policies": ["default"], "id": "diff-custom-id-1", "ttl": "1h"},
        checks={
            "id": lambda b: b["auth"]["client_token"],
            "warnings": lambda b: b["warnings"],
        },
    )
    t.call(
        "custom id again",
        "POST",
        "auth/token/create",
        json={"policies": ["default"], "id": "diff-custom-id-1"},
    )
    t.call(
        "custom id without sudo",
        "POST",
        "auth/token/create",
        token="diff-custom-id-1",
        json={"id": "diff-custom-id-2"},
        errors=True,
    )
    t.call(
        "entity alias without a role",
        "POST",
        "auth/token/create",
        json={"entity_alias": "x"},
        errors=True,
    )
    parent = t.call(
        "create parent",
        "POST",
        "auth/token/create",
        json={"policies": ["default", "diff-creator"], "ttl": "1h"},
        checks=_auth("orphan"),
    )["auth"]
    child = t.call(
        "create child",
        "POST",
        "auth/token/create",
        token=parent["client_token"],
        json={"ttl": "30m"},
        checks=_auth("orphan", "token_policies"),
    )["auth"]
    t.call(
        "create orphan",
        "POST",
        "auth/token/create-orphan",
        token=parent["client_token"],
        json={"ttl": "30m"},
        checks=_auth("orphan", "token_policies"),
    )
    t.call(
        "orphan without sudo",
        "POST",
        "auth/token/create",
        token=parent["client_token"],
        json={"no_parent": True},
        errors=True,
    )
    t.call(
        "renew",
        "POST",
        "auth/token/renew",
        json={"token": child["client_token"], "increment": "10m"},
        checks=_auth("lease_duration"),
    )
    t.call(
        "capabilities by accessor",
        "POST",
        "sys/capabilities-accessor",
        json={"accessor": child["accessor"], "paths": ["auth/token/lookup-self", "secret/x"]},
        checks={
            "self": lambda b: b["auth/token/lookup-self"],
            "secret": lambda b: b["secret/x"],
        },
    )
    t.call(
        "capabilities by unknown accessor",
        "POST",
        "sys/capabilities-accessor",
        json={"accessor": "nope", "paths": ["secret/x"]},
        errors=True,
    )
    t.call(
        "revoke orphan without sudo",
        "POST",
        "auth/token/revoke-orphan",
        token=parent["client_token"],
        json={"token": child["client_token"]},
        errors=True,
    )
    t.call(
        "revoke orphan", "POST", "auth/token/revoke-orphan", json={"token": parent["client_token"]}
    )
    t.call(
        "child is an orphan now",
        "POST",
        "auth/token/lookup",
        json={"token": child["client_token"]},
        checks=_data("orphan"),
    )
    t.call(
        "revoke accessor",
        "POST",
        "auth/token/revoke-accessor",
        json={"accessor": child["accessor"]},
    )
    t.call(
        "revoked accessor",
        "POST",
        "auth/token/lookup-accessor",
        json={"accessor": child["accessor"]},
        errors=True,
    )
    t.call("tidy", "POST", "auth/token/tidy", checks={"warnings": lambda b: b["warnings"]})
    t.call(
        "accessors listed with a slash",
        "LIST",
        "auth/token/accessors/",
        checks={"some": lambda b: bool(b["data"]["keys"])},
    )
    t.call("revoke custom", "POST", "auth/token/revoke", json={"token": "diff-custom-id-1"})
    t.call("policy creator delete", "DELETE", "sys/policies/acl/diff-creator")


# -- role options of the login methods -------------------------------------------------------
ROLE_OPTIONS = (
    "token_bound_cidrs",
    "token_explicit_max_ttl",
    "token_max_ttl",
    "token_no_default_policy",
    "token_num_uses",
    "token_period",
    "token_policies",
    "token_type",
    "token_ttl",
)


def role_options(t: Target) -> None:
    _enable_logins(t)
    t.call(
        "user ttl above max",
        "POST",
        "auth/userpass/users/carol",
        json={"password": "diff-pass-3", "token_ttl": "2h", "token_max_ttl": "1h"},
        errors=True,
    )
    t.call(
        "user with options",
        "POST",
        "auth/userpass/users/carol",
        json={
            "password": "diff-pass-3",
            "token_policies": ["diff-x"],
            "token_no_default_policy": True,
            "token_num_uses": 2,
            "token_period": "1h",
            "token_bound_cidrs": ["127.0.0.1/32"],
        },
    )
    t.call("user read", "GET", "auth/userpass/users/carol", checks=_data(*ROLE_OPTIONS))
    t.call(
        "login with options",
        "POST",
        "auth/userpass/login/carol",
        json={"password": "diff-pass-3"},
        checks=_auth("token_policies", "num_uses", "lease_duration", "renewable", "token_type"),
    )
    t.call(
        "user with legacy policies",
        "POST",
        "auth/userpass/users/dave",
        json={"password": "diff-pass-4", "policies": ["diff-x"]},
    )
    t.call("legacy user read", "GET", "auth/userpass/users/dave", checks=_data("policies"))
    t.call(
        "user batch",
        "POST",
        "auth/userpass/users/dave",
        json={"password": "diff-pass-4", "token_type": "batch", "token_policies": ["diff-x"]},
    )
    t.call(
        "login batch",
        "POST",
        "auth/userpass/login/dave",
        json={"password": "diff-pass-4"},
        checks={
            **_auth("token_type", "renewable"),
            "prefix": lambda b: b["auth"]["client_token"][:2],
        },
    )
    t.call(
        "user bad cidr",
        "POST",
        "auth/userpass/users/dave",
        json={"token_bound_cidrs": ["not-a-cidr"]},
    )
    t.call(
        "batch with uses",
        "POST",
        "auth/userpass/users/dave",
        json={"token_type": "batch", "token_num_uses": 2},
        errors=True,
    )
    for name in ("diff-r1", "diff-r2", "diff-r3"):
        t.call(
            f"approle {name}",
            "POST",
            f"auth/approle/role/{name}",
            json={"token_policies": ["diff-x"], "token_ttl": "1h", "token_max_ttl": "2h"},
        )
    t.call(
        "approle ttl above max",
        "POST",
        "auth/approle/role/diff-r1",
        json={"token_ttl": "3h"},
        errors=True,
    )
    t.call(
        "approle options",
        "POST",
        "auth/approle/role/diff-r1",
        json={"token_no_default_policy": True, "token_type": "service", "token_num_uses": 1},
    )
    t.call("approle read", "GET", "auth/approle/role/diff-r1", checks=_data(*ROLE_OPTIONS))
    t.call("approle list", "LIST", "auth/approle/role/", checks={"keys": _keys})
    t.call(
        "approle page",
        "LIST",
        "auth/approle/role",
        params={"limit": "1"},
        checks={"keys": _keys},
    )
    t.call(
        "approle next page",
        "LIST",
        "auth/approle/role",
        params={"after": "diff-r1", "limit": "1"},
        checks={"keys": _keys},
    )
    t.call(
        "approle role id write",
        "POST",
        "auth/approle/role/diff-r1/role-id",
        json={"role_id": "diff-role-id-1"},
    )
    t.call(
        "approle role id read",
        "GET",
        "auth/approle/role/diff-r1/role-id",
        checks=_data("role_id"),
    )
    custom = t.call(
        "approle custom secret id",
        "POST",
        "auth/approle/role/diff-r1/custom-secret-id",
        json={"secret_id": "diff-secret-1", "metadata": '{"app": "x"}'},
        checks=_data("secret_id", "secret_id_num_uses", "secret_id_ttl"),
    )["data"]
    t.call("approle secret id", "POST", "auth/approle/role/diff-r1/secret-id", record=True)
    t.call(
        "approle secret ids",
        "LIST",
        "auth/approle/role/diff-r1/secret-id",
        checks={"count": lambda b: len(b["data"]["keys"])},
    )
    t.call(
        "approle secret id lookup",
        "POST",
        "auth/approle/role/diff-r1/secret-id/lookup",
        json={"secret_id": "diff-secret-1"},
        checks={
            **_data("secret_id_num_uses", "secret_id_ttl"),
            "metadata": lambda b: b["data"]["metadata"],
            "accessor": lambda b: b["data"]["secret_id_accessor"] == custom["secret_id_accessor"],
        },
    )
    t.call(
        "approle secret id lookup unknown",
        "POST",
        "auth/approle/role/diff-r1/secret-id/lookup",
        json={"secret_id": "nope"},
    )
    t.call(
        "approle accessor lookup",
        "POST",
        "auth/approle/role/diff-r1/secret-id-accessor/lookup",
        json={"secret_id_accessor": custom["secret_id_accessor"]},
        checks=_data("secret_id_num_uses"),
    )
    t.call(
        "approle login",
        "POST",
        "auth/approle/login",
        json={"role_id": "diff-role-id-1", "secret_id": "diff-secret-1"},
        checks=_auth("token_policies", "num_uses", "lease_duration"),
    )
    t.call(
        "approle secret id destroy",
        "POST",
        "auth/approle/role/diff-r1/secret-id/destroy",
        json={"secret_id": "diff-secret-1"},
    )
    t.call(
        "approle accessor destroy",
        "POST",
        "auth/approle/role/diff-r1/secret-id-accessor/destroy",
        json={"secret_id_accessor": custom["secret_id_accessor"]},
    )
    t.call(
        "approle login after destroy",
        "POST",
        "auth/approle/login",
        json={"role_id": "diff-role-id-1", "secret_id": "diff-secret-1"},
        errors=True,
    )
    _disable_logins(t)


# -- routes ------------------------------------------------------------------------------------
def routes(t: Target) -> None:
    t.call("acl policies with a slash", "LIST", "sys/policies/acl/", checks={"keys": _keys})
    t.call(
        "catalog with a slash",
        "LIST",
        "sys/plugins/catalog/secret/",
        checks={"has kv": lambda b: "kv" in b["data"]["keys"]},
    )
    t.call("list=true with a slash", "GET", "sys/policies/acl/", params={"list": "true"})
    t.call("rekey init status", "GET", "sys/rekey/init", errors=True)
    t.call("audit devices", "GET", "sys/audit")
    t.call(
        "audit hash unknown device",
        "POST",
        "sys/audit-hash/diff-none",
        json={"input": "x"},
        errors=True,
    )
    t.call(
        "audit enable through the API",
        "POST",
        "sys/audit/diff-file",
        json={"type": "file", "options": {"file_path": "/dev/null"}},
        errors=True,
    )
    t.call(
        "wrapping lookup unknown",
        "POST",
        "sys/wrapping/lookup",
        json={"token": "nope"},
        errors=True,
    )
    t.call("wrap without a ttl", "POST", "sys/wrapping/wrap", json={"a": "b"}, errors=True)
    wrap_info = {
        "ttl": lambda b: b["wrap_info"]["ttl"],
        "path": lambda b: b["wrap_info"]["creation_path"],
        "keys": lambda b: sorted(b["wrap_info"]),
    }
    wrapped = t.call(
        "wrap",
        "POST",
        "sys/wrapping/wrap",
        json={"a": "b"},
        headers={"X-Vault-Wrap-TTL": "5m"},
        checks=wrap_info,
    )["wrap_info"]["token"]
    t.call(
        "wrapping lookup",
        "POST",
        "sys/wrapping/lookup",
        json={"token": wrapped},
        checks=_data("creation_path", "creation_ttl"),
    )
    rewrapped = t.call(
        "rewrap", "POST", "sys/wrapping/rewrap", json={"token": wrapped}, checks=wrap_info
    )["wrap_info"]["token"]
    t.call("unwrap the old token", "POST", "sys/wrapping/unwrap", json={"token": wrapped})
    t.call(
        "unwrap",
        "POST",
        "sys/wrapping/unwrap",
        json={"token": rewrapped},
        checks={"data": lambda b: b["data"]},
    )
    t.call(
        "unwrap again",
        "POST",
        "sys/wrapping/unwrap",
        json={"token": rewrapped},
        errors=True,
    )
    _pki_paging(t)


def _pki_paging(t: Target) -> None:
    mount = "diff-pki-pages"
    t.call("pki mount", "POST", f"sys/mounts/{mount}", json={"type": "pki"})
    t.call(
        "pki root",
        "POST",
        f"{mount}/root/generate/internal",
        json={"common_name": "pages.test", "ttl": "24h", "issuer_name": "root"},
        record=False,
    )
    t.call(
        "pki role",
        "POST",
        f"{mount}/roles/web",
        json={"allowed_domains": "example.test", "allow_subdomains": True, "max_ttl": "2h"},
        record=False,
    )
    serials = []
    for n in range(3):
        issued = t.call(
            f"pki issue {n}",
            "POST",
            f"{mount}/issue/web",
            json={"common_name": f"h{n}.example.test", "ttl": "1h"},
            record=False,
        )
        serials.append(issued["data"]["serial_number"])
    t.call(
        "pki revoke with hyphens",
        "POST",
        f"{mount}/revoke",
        json={"serial_number": serials[0].replace(":", "-")},
        checks={"state": lambda b: b["data"].get("state")},
    )
    for n, serial in enumerate(serials[1:], 1):
        t.call(f"pki revoke {n}", "POST", f"{mount}/revoke", json={"serial_number": serial})
    first = sorted(serials)

    def pages(keys: list[str]) -> list[int]:
        return [first.index(k) for k in keys]

    t.call(
        "pki revoked all",
        "LIST",
        f"{mount}/certs/revoked",
        checks={"pages": lambda b: pages(b["data"]["keys"])},
    )
    t.call(
        "pki revoked page",
        "LIST",
        f"{mount}/certs/revoked",
        params={"limit": "2"},
        checks={"pages": lambda b: pages(b["data"]["keys"])},
    )
    t.call(
        "pki revoked after",
        "LIST",
        f"{mount}/certs/revoked",
        params={"after": first[0], "limit": "5"},
        checks={"pages": lambda b: pages(b["data"]["keys"])},
    )
    t.call("pki unmount", "DELETE", f"sys/mounts/{mount}")
