"""The one ACL evaluator (toolkit/_spec/acl.py) against OpenBao's own ``sys/capabilities``.

Hypothesis writes sets of policies (globs, ``+`` segments, overlapping patterns
across policies, ``deny``, ``sudo``, identity templates, some of which cannot
be filled), a token holds them, and every path of a list is asked of the server
and of the evaluator. Two tokens each time: one with an entity (a userpass login
whose alias belongs to an entity with metadata, in two groups) and one without.
The sandbox is asked the same for the token without an entity. Any difference fails.

Then ``bao.access.who_can`` is held to logins: every principal it names for a
path, logged in, has the capability, and every one it leaves out has not.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests._sockets import certificate_files
from tests.servers.openbao import OpenBao
from toolkit._spec.acl import ACL, parse_acl_policy
from toolkit._spec.identity_templates import Alias, Group, Identity
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

pytestmark = pytest.mark.slow

SEGMENTS = ["a", "b", "ab", "sys", "x-1"]
CAPS = ["create", "read", "update", "patch", "delete", "list", "sudo", "deny"]


def _ok(reply: httpx.Response) -> dict[str, Any]:
    assert reply.status_code in (200, 204), f"{reply.request.url}: {reply.status_code} {reply.text}"
    return reply.json() if reply.content else {}


@dataclass
class World:
    """The identity the templated patterns are filled from, as the server holds it."""

    mount: str
    accessor: str
    user: str
    identity: Identity
    templates: list[str]
    values: list[str]


@pytest.fixture(scope="module")
def world(bao: OpenBao) -> World:
    mount = f"up-{uuid.uuid4().hex[:6]}"
    user = "tester"
    with bao.http() as http:
        _ok(http.post(f"sys/auth/{mount}", json={"type": "userpass"}))
        accessor = _ok(http.get("sys/auth"))["data"][f"{mount}/"]["accessor"]
        entity = _ok(
            http.post(
                "identity/entity",
                json={"name": f"ent-{mount}", "metadata": {"team": "blue", "region": "eu"}},
            )
        )["data"]["id"]
        alias = _ok(
            http.post(
                "identity/entity-alias",
                json={"name": user, "canonical_id": entity, "mount_accessor": accessor},
            )
        )["data"]["id"]
        parent = _ok(
            http.post("identity/group", json={"name": f"parent-{mount}", "metadata": {"k": "p"}})
        )["data"]["id"]
        group = _ok(
            http.post(
                "identity/group",
                json={
                    "name": f"ops-{mount}",
                    "metadata": {"tier": "gold"},
                    "member_entity_ids": [entity],
                },
            )
        )["data"]["id"]
        _ok(http.post(f"identity/group/id/{parent}", json={"member_group_ids": [group]}))
    identity = Identity(
        entity,
        f"ent-{mount}",
        {"team": "blue", "region": "eu"},
        (Alias(accessor, alias, user),),
        (
            Group(group, f"ops-{mount}", {"tier": "gold"}),
            Group(parent, f"parent-{mount}", {"k": "p"}),
        ),
    )
    templates = [
        "{{identity.entity.id}}",
        "{{identity.entity.name}}",
        "{{identity.entity.metadata.team}}",
        "{{identity.entity.metadata.nope}}",
        f"{{{{identity.entity.aliases.{accessor}.name}}}}",
        f"{{{{identity.entity.aliases.{accessor}.id}}}}",
        "{{identity.entity.aliases.auth_nope_1.name}}",
        f"{{{{identity.groups.names.ops-{mount}.id}}}}",
        f"{{{{identity.groups.ids.{group}.name}}}}",
        f"{{{{identity.groups.ids.{parent}.metadata.k}}}}",
        f"{{{{identity.groups.names.ops-{mount}.metadata.tier}}}}",
        "{{identity.groups.names.nobody.id}}",
        "{{ identity.entity.metadata.region }}",
    ]
    values = [entity, f"ent-{mount}", "blue", "eu", user, alias, group, f"ops-{mount}", "p", "gold"]
    return World(mount, accessor, user, identity, templates, values)


def _segment(templates: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(SEGMENTS),
        st.just("+"),
        st.sampled_from(templates),
        st.builds(lambda s, t: s + "-" + t, st.sampled_from(SEGMENTS), st.sampled_from(templates)),
    )


def _pattern(templates: list[str]) -> st.SearchStrategy[str]:
    def build(parts: list[str], tail: str) -> str:
        path = "/".join(parts)
        if tail == "glob":
            return path + "*"
        if tail == "slash-glob":
            return path + "/*"
        return path

    return st.builds(
        build,
        st.lists(_segment(templates), min_size=1, max_size=4),
        st.sampled_from(["", "glob", "slash-glob"]),
    ).filter(lambda p: "+*" not in p)


def _policy_text(rules: list[tuple[str, list[str]]]) -> str:
    return "\n".join(
        f'path "{pattern}" {{\n  capabilities = [{", ".join(repr(c).replace(chr(39), chr(34)) for c in caps)}]\n}}'
        for pattern, caps in rules
    )


def _policy_sets(templates: list[str]) -> st.SearchStrategy[list[str]]:
    rule = st.tuples(_pattern(templates), st.lists(st.sampled_from(CAPS), min_size=1, max_size=4))
    return st.lists(
        st.lists(rule, min_size=1, max_size=5).map(_policy_text), min_size=1, max_size=4
    )


def _paths(values: list[str]) -> st.SearchStrategy[list[str]]:
    part = st.one_of(st.sampled_from(SEGMENTS), st.sampled_from(values))
    joined = st.builds(
        lambda parts, mid, slash: "/".join(parts) + mid + ("/" if slash else ""),
        st.lists(part, min_size=1, max_size=5),
        st.sampled_from(["", "-1", "-" + values[2]]),
        st.booleans(),
    )
    return st.lists(joined, min_size=10, max_size=30, unique=True)


def _server_caps(http: httpx.Client, token: str, paths: list[str]) -> dict[str, list[str]]:
    data = _ok(http.post("sys/capabilities", json={"token": token, "paths": paths}))["data"]
    return {p: sorted(data[p]) for p in paths}


@pytest.fixture(scope="module")
def sandbox_server() -> Iterator[Sandbox]:
    with Sandbox(demo=False) as sandbox:
        yield sandbox


def test_the_evaluator_answers_as_openbao_on_generated_policies(
    bao: OpenBao, world: World, sandbox_server: Sandbox
) -> None:
    with bao.http() as http:
        default_text = _ok(http.get("sys/policies/acl/default"))["data"]["policy"]
    sandbox_http = httpx.Client(
        base_url=f"{sandbox_server.address}/v1",
        headers={"X-Vault-Token": sandbox_server.token},
        timeout=30,
    )
    checked = {"paths": 0, "templated": 0}

    @settings(
        max_examples=int(os.environ.get("ACCESS_EXAMPLES", "60")),
        deadline=None,
        derandomize=True,
        # No shrinking: each example is a dozen requests, and the failing one is printed.
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(texts=_policy_sets(world.templates), paths=_paths(world.values))
    def check(texts: list[str], paths: list[str]) -> None:
        names = [f"gen-{i}" for i in range(len(texts))]
        with bao.http() as http:
            for name, text in zip(names, texts, strict=True):
                _ok(http.put(f"sys/policies/acl/{name}", json={"policy": text}))
                _ok(sandbox_http.put(f"sys/policies/acl/{name}", json={"policy": text}))
            _ok(
                http.post(
                    f"auth/{world.mount}/users/{world.user}",
                    json={"password": "pw-for-tests", "token_policies": names},
                )
            )
            login = _ok(
                http.post(
                    f"auth/{world.mount}/login/{world.user}", json={"password": "pw-for-tests"}
                )
            )["auth"]
            assert login["entity_id"] == world.identity.entity_id
            plain = _ok(http.post("auth/token/create", json={"policies": names, "ttl": "10m"}))[
                "auth"
            ]["client_token"]
            sandbox_plain = _ok(
                sandbox_http.post("auth/token/create", json={"policies": names, "ttl": "10m"})
            )["auth"]["client_token"]
            with_entity = _server_caps(http, login["client_token"], paths)
            without = _server_caps(http, plain, paths)
        in_sandbox = {
            p: sorted(c)
            for p, c in _ok(
                sandbox_http.post("sys/capabilities", json={"token": sandbox_plain, "paths": paths})
            )["data"].items()
            if p in paths
        }
        rules = [r for n, t in zip(names, texts, strict=True) for r in parse_acl_policy(t, n)]
        rules += parse_acl_policy(default_text, "default")
        known = ACL(rules, identity=world.identity)
        none = ACL(rules)
        for path in paths:
            assert known.capabilities(path) == with_entity[path], (path, texts)
            assert none.capabilities(path) == without[path], (path, texts)
            assert in_sandbox[path] == without[path], (path, texts)
        checked["paths"] += len(paths)
        checked["templated"] += sum("{{" in t for t in texts)
        with bao.http() as http:
            for name in names:
                _ok(http.delete(f"sys/policies/acl/{name}"))
                _ok(sandbox_http.delete(f"sys/policies/acl/{name}"))

    try:
        check()
    finally:
        sandbox_http.close()
    assert checked["paths"] > 500 and checked["templated"] > 20, checked


# -- who_can against logins -----------------------------------------------------------------
WHO_POLICIES = {
    "w-readers": 'path "app/data/*" { capabilities = ["read", "list"] }',
    "w-writers": 'path "app/data/team/*" { capabilities = ["create", "update", "read"] }',
    "w-deny": 'path "app/data/team/secret" { capabilities = ["deny"] }',
    "w-own": 'path "app/data/{{identity.entity.name}}/*" { capabilities = ["update"] }',
}


def test_who_can_names_exactly_the_principals_whose_logins_hold_the_capability(
    bao: OpenBao, tmp_path: Path
) -> None:
    mount = f"who-{uuid.uuid4().hex[:6]}"
    approle = f"ar-{uuid.uuid4().hex[:6]}"
    with bao.http() as http:
        for name, text in WHO_POLICIES.items():
            _ok(http.put(f"sys/policies/acl/{name}", json={"policy": text}))
        _ok(http.post(f"sys/auth/{mount}", json={"type": "userpass"}))
        _ok(http.post(f"sys/auth/{approle}", json={"type": "approle"}))
        users = {
            "reader": ["w-readers"],
            "writer": ["w-writers"],
            "both": ["w-readers", "w-writers", "w-deny"],
            "owner": ["w-own"],
            "nobody": [],
        }
        for user, policies in users.items():
            _ok(
                http.post(
                    f"auth/{mount}/users/{user}",
                    json={"password": "pw-for-tests", "token_policies": policies},
                )
            )
        accessor = _ok(http.get("sys/auth"))["data"][f"{mount}/"]["accessor"]
        owner = _ok(http.post("identity/entity", json={"name": "owner"}))["data"]["id"]
        _ok(
            http.post(
                "identity/entity-alias",
                json={"name": "owner", "canonical_id": owner, "mount_accessor": accessor},
            )
        )
        _ok(http.post(f"auth/{approle}/role/ci", json={"token_policies": ["w-writers"]}))
        # Every method whose configuration names policies: JWT, Kubernetes and cert roles,
        # identity groups (inherited by their member entities).
        jwt_mount, k8s_mount, cert_mount, oidc_mount = (
            f"{k}-{uuid.uuid4().hex[:6]}" for k in ("jwt", "k8s", "cert", "oidc")
        )
        _ok(http.post(f"sys/auth/{jwt_mount}", json={"type": "jwt"}))
        # OIDC roles need no live provider to be written (its discovery URL is the
        # mount's config, left unset): one on an oidc mount, one on the jwt mount.
        _ok(http.post(f"sys/auth/{oidc_mount}", json={"type": "oidc"}))
        for role_mount, role in ((oidc_mount, "web"), (jwt_mount, "browser")):
            _ok(
                http.post(
                    f"auth/{role_mount}/role/{role}",
                    json={
                        "role_type": "oidc",
                        "user_claim": "sub",
                        "allowed_redirect_uris": ["http://localhost:8250/oidc/callback"],
                        "token_policies": ["w-writers"],
                    },
                )
            )
        _ok(http.post(f"sys/auth/{k8s_mount}", json={"type": "kubernetes"}))
        _ok(http.post(f"sys/auth/{cert_mount}", json={"type": "cert"}))
        _ok(
            http.post(
                f"auth/{jwt_mount}/role/deployer",
                json={
                    "role_type": "jwt",
                    "user_claim": "sub",
                    "bound_audiences": ["ci"],
                    "token_policies": ["w-writers"],
                },
            )
        )
        _ok(
            http.post(
                f"auth/{k8s_mount}/role/pods",
                json={
                    "bound_service_account_names": ["app"],
                    "bound_service_account_namespaces": ["prod"],
                    "token_policies": ["w-readers"],
                },
            )
        )
        _ok(
            http.post(
                f"auth/{cert_mount}/certs/ops-cert",
                json={
                    "certificate": certificate_files(tmp_path)[0].read_text(),
                    "token_policies": ["w-writers"],
                },
            )
        )
        group_name = f"writers-{mount}"
        _ok(
            http.post(
                "identity/group",
                json={"name": group_name, "policies": ["w-writers"], "member_entity_ids": [owner]},
            )
        )
        _ok(http.post("auth/token/roles/w-role", json={"allowed_policies": ["w-readers"]}))
        tokens = {}
        for user in users:
            tokens[f"auth/{mount}/users/{user}"] = _ok(
                http.post(f"auth/{mount}/login/{user}", json={"password": "pw-for-tests"})
            )["auth"]["client_token"]
    with SecretsClient(bao.address, bao.token) as client:
        client.access.load()
        for capability, path in [
            ("read", "app/data/team/x"),
            ("update", "app/data/team/x"),
            ("update", "app/data/team/secret"),
            ("read", "app/data/other"),
            ("update", "app/data/owner/doc"),
        ]:
            frame = client.access.who_can(capability, path)
            assert frame.attrs["coverage"]["complete"], frame.attrs["coverage"]
            with bao.http() as http:
                for principal, token in tokens.items():
                    held = capability in _server_caps(http, token, [path])[path]
                    named = principal in frame.index
                    assert named == held, (capability, path, principal, frame)
            # Roles are named by their configuration.
            role_holds = capability in {"read"} and path.startswith("app/data")
            assert ("auth/token/roles/w-role" in frame.index) == role_holds
        writers = client.access.who_can("update", "app/data/team/x")
        kinds = dict(zip(writers.index, writers["kind"], strict=True))
        assert kinds[f"auth/{jwt_mount}/role/deployer"] == "jwt_role"
        assert kinds[f"auth/{oidc_mount}/role/web"] == "oidc_role"
        assert kinds[f"auth/{jwt_mount}/role/browser"] == "oidc_role"
        assert kinds[f"auth/{cert_mount}/certs/ops-cert"] == "cert_role"
        assert kinds[f"identity/group/name/{group_name}"] == "group"
        # The entity inherits its group's policy, and so does the user aliased to it.
        assert kinds["identity/entity/name/owner"] == "entity"
        assert f"auth/{mount}/users/owner" in writers.index
        readers = client.access.who_can("read", "app/data/other")
        assert readers.loc[f"auth/{k8s_mount}/role/pods", "kind"] == "kubernetes_role"
        explained = client.access.explain(f"auth/{mount}/users/both", "app/data/team/secret")
        assert explained.iloc[0]["policy"] == "w-deny"
        assert explained.iloc[0]["pattern"] == "app/data/team/secret"
        assert set(explained["outcome"].iloc[1:]) == {
            "lost to 'app/data/team/secret' (more specific)"
        }
