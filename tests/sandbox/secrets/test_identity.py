"""Identity, token roles, token options, login role options, audit and wrapping in the sandbox.

Each behaviour here is also held to OpenBao by the differential scenarios
(``tests/real/scenarios_identity.py``); these tests run without a real server.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.sandbox.secrets._access_api import assert_error, issue, put_acl, v1
from toolkit import auditlog
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.demo_identity import DEMO_ENTITIES

TEMPLATED = """path "database/creds/{{identity.entity.metadata.team}}" {
  capabilities = ["read"]
}
path "pki/issue/fixed" {
  capabilities = ["update"]
}
"""


def _login(sb: Sandbox, user: str, password: str) -> dict[str, object]:
    with v1(sb) as anyone:
        response = anyone.post(f"auth/userpass/login/{user}", json={"password": password})
    assert response.status_code == 200, response.text
    return dict(response.json()["auth"])


def _capabilities(api: httpx.Client, token: object, path: str) -> httpx.Response:
    return api.post("sys/capabilities", json={"token": token, "paths": [path]})


def test_a_login_finds_its_entity_through_the_alias_and_carries_its_groups_policies(
    empty_sandbox: Sandbox,
) -> None:
    with v1(empty_sandbox) as api:
        put_acl(api, "team", TEMPLATED)
        put_acl(api, "grp", 'path "pki/issue/grp" {\n  capabilities = ["update"]\n}\n')
        put_acl(api, "top", 'path "pki/issue/top" {\n  capabilities = ["update"]\n}\n')
        entity = api.post(
            "identity/entity", json={"name": "ann", "metadata": {"team": "blue"}}
        ).json()["data"]["id"]
        accessor = api.get("sys/auth").json()["data"]["userpass/"]["accessor"]
        alias = api.post(
            "identity/entity-alias",
            json={"name": "ann", "mount_accessor": accessor, "canonical_id": entity},
        )
        assert alias.status_code == 200, alias.text
        child = api.post(
            "identity/group", json={"name": "c", "policies": ["grp"], "member_entity_ids": [entity]}
        ).json()["data"]["id"]
        parent = api.post(
            "identity/group", json={"name": "p", "policies": ["top"], "member_group_ids": [child]}
        ).json()["data"]["id"]
        cycle = api.post(f"identity/group/id/{child}", json={"member_group_ids": [parent]})
        assert cycle.status_code == 400, cycle.text
        api.post("auth/userpass/users/ann", json={"password": "pw", "token_policies": ["team"]})
        auth = _login(empty_sandbox, "ann", "pw")
        assert auth["entity_id"] == entity
        assert auth["identity_policies"] == ["grp", "top"]
        token = auth["client_token"]
        for path, expected in (
            ("database/creds/blue", ["read"]),
            ("database/creds/red", ["deny"]),
            ("pki/issue/grp", ["update"]),
            ("pki/issue/top", ["update"]),
        ):
            assert _capabilities(api, token, path).json()["capabilities"] == expected, path
        read = api.get(f"identity/entity/id/{entity}").json()["data"]
        assert read["direct_group_ids"] == [child]
        assert read["inherited_group_ids"] == [parent]
        assert [a["name"] for a in read["aliases"]] == ["ann"]


def test_a_forbidden_templated_value_refuses_the_tokens_whole_acl(empty_sandbox: Sandbox) -> None:
    with v1(empty_sandbox) as api:
        put_acl(api, "team", TEMPLATED)
        api.post("auth/userpass/users/bo", json={"password": "pw", "token_policies": ["team"]})
        auth = _login(empty_sandbox, "bo", "pw")
        token, entity = auth["client_token"], auth["entity_id"]
        for value, blocked in (("a/b", "/"), ("a*", "*"), ("a+b", "+")):
            api.post(f"identity/entity/id/{entity}", json={"metadata": {"team": value}})
            answer = _capabilities(api, token, "pki/issue/fixed")
            assert_error(
                answer, 403, f'template substitution contains forbidden value: "{blocked}"'
            )
            with v1(empty_sandbox, str(token)) as caller:
                assert_error(caller.get("auth/token/lookup-self"), 400, "Forbidden")
        api.post(f"identity/entity/id/{entity}", json={"metadata": {"site": "a/b"}})
        assert _capabilities(api, token, "pki/issue/fixed").json()["capabilities"] == ["update"]


def test_an_approle_logs_in_as_one_entity_whose_alias_is_the_role_id(
    empty_sandbox: Sandbox,
) -> None:
    with v1(empty_sandbox) as api:
        api.post("auth/approle/role/app", json={"token_policies": ["default"]})
        api.post("auth/approle/role/app/role-id", json={"role_id": "app-role-id"})
        secret = api.post("auth/approle/role/app/secret-id").json()["data"]["secret_id"]
        logins = [
            api.post("auth/approle/login", json={"role_id": "app-role-id", "secret_id": secret})
            for _ in range(2)
        ]
        entities = {r.json()["auth"]["entity_id"] for r in logins}
        assert len(entities) == 1 and "" not in entities
        (entity,) = entities
        aliases = api.get(f"identity/entity/id/{entity}").json()["data"]["aliases"]
        assert [(a["name"], a["mount_type"]) for a in aliases] == [("app-role-id", "approle")]


def test_a_disabled_entitys_tokens_are_refused(empty_sandbox: Sandbox) -> None:
    with v1(empty_sandbox) as api:
        api.post("auth/userpass/users/cy", json={"password": "pw"})
        auth = _login(empty_sandbox, "cy", "pw")
        api.post(f"identity/entity/id/{auth['entity_id']}", json={"disabled": True})
        with v1(empty_sandbox, str(auth["client_token"])) as caller:
            assert_error(caller.get("auth/token/lookup-self"), 403, "permission denied")


def test_token_roles_decide_policies_as_openbao_does(empty_sandbox: Sandbox) -> None:
    with v1(empty_sandbox) as api:
        for name in ("a", "b", "c", "gx"):
            put_acl(api, name, f'path "{name}" {{\n  capabilities = ["read"]\n}}\n')
        api.post(
            "auth/token/roles/r",
            json={
                "allowed_policies": ["a", "b"],
                "disallowed_policies": ["c"],
                "allowed_policies_glob": ["g*"],
            },
        )

        def created(role: str, **body: object) -> httpx.Response:
            return api.post(f"auth/token/create/{role}", json=body)

        assert created("r").json()["auth"]["token_policies"] == ["a", "b", "default"]
        assert created("r", policies=["gx"]).json()["auth"]["token_policies"] == ["default", "gx"]
        assert_error(created("r", policies=["c"]), 400, "must be subset of the role's allowed")
        api.post(
            "auth/token/roles/nd",
            json={"allowed_policies": ["a"], "disallowed_policies": ["default"]},
        )
        assert created("nd").json()["auth"]["token_policies"] == ["a"]
        api.post("auth/token/roles/dis", json={"disallowed_policies": ["c"]})
        limited = issue(api, policies=["c", "a"], ttl="1h")
        with v1(empty_sandbox, limited) as caller:
            refused = caller.post("auth/token/create/dis")
        assert refused.status_code in (400, 403), refused.text
        api.post(
            "auth/token/roles/al",
            json={"allowed_policies": ["a"], "allowed_entity_aliases": ["svc-*"]},
        )
        made = created("al", entity_alias="svc-1").json()["auth"]
        alias = api.get(f"identity/entity/id/{made['entity_id']}").json()["data"]["aliases"]
        assert [(a["name"], a["mount_type"]) for a in alias] == [("svc-1", "token")]
        assert_error(created("al", entity_alias="other"), 400, "invalid 'entity_alias' value")
        assert api.request("LIST", "auth/token/roles/").json()["data"]["keys"] == [
            "al",
            "dis",
            "nd",
            "r",
        ]


def test_token_options_limit_uses_type_lifetime_and_id(empty_sandbox: Sandbox) -> None:
    with v1(empty_sandbox) as api:
        limited = issue(api, num_uses=2, policies=["default"])
        with v1(empty_sandbox, limited) as caller:
            seen = [caller.get("auth/token/lookup-self") for _ in range(3)]
        assert [r.status_code for r in seen] == [200, 200, 403]
        assert [r.json()["data"]["num_uses"] for r in seen[:2]] == [1, -1]
        batch = api.post(
            "auth/token/create", json={"type": "batch", "ttl": "1h", "policies": ["default"]}
        ).json()["auth"]
        assert batch["client_token"].startswith("b.") and batch["accessor"] == ""
        assert batch["token_type"] == "batch" and batch["renewable"] is False
        with v1(empty_sandbox, batch["client_token"]) as caller:
            assert_error(
                caller.post("auth/token/renew-self"), 400, "batch tokens cannot be renewed"
            )
        capped = api.post(
            "auth/token/create",
            json={"ttl": "5h", "explicit_max_ttl": "2h", "policies": ["default"]},
        )
        assert capped.json()["auth"]["lease_duration"] == 7200
        periodic = issue(api, policies=["default"], period="1h")
        with v1(empty_sandbox, periodic) as caller:
            renewed = caller.post("auth/token/renew-self", json={"increment": "10h"})
        assert renewed.json()["auth"]["lease_duration"] == 3600
        custom = api.post("auth/token/create", json={"id": "my-own-id", "policies": ["default"]})
        assert custom.json()["auth"]["client_token"] == "my-own-id"
        assert custom.json()["warnings"]
        assert_error(
            api.post("auth/token/create", json={"entity_alias": "x"}),
            400,
            "'entity_alias' is only allowed in combination with token role",
        )


def test_login_roles_apply_their_token_options_and_refuse_a_ttl_above_the_max(
    empty_sandbox: Sandbox,
) -> None:
    with v1(empty_sandbox) as api:
        refused = api.post(
            "auth/userpass/users/di",
            json={"password": "pw", "token_ttl": "2h", "token_max_ttl": "1h"},
        )
        assert_error(refused, 400, "'token_ttl' cannot be greater than 'token_max_ttl'")
        api.post(
            "auth/userpass/users/di",
            json={
                "password": "pw",
                "token_policies": ["x"],
                "token_no_default_policy": True,
                "token_num_uses": 2,
                "token_period": "1h",
                "token_bound_cidrs": ["127.0.0.1/32"],
            },
        )
        read = api.get("auth/userpass/users/di").json()["data"]
        assert read["token_bound_cidrs"] == ["127.0.0.1"]
        assert "policies" not in read and read["token_type"] == "default"
        auth = _login(empty_sandbox, "di", "pw")
        assert auth["token_policies"] == ["x"]
        assert (auth["num_uses"], auth["lease_duration"]) == (2, 3600)
        for name in ("r1", "r2", "r3"):
            api.post(f"auth/approle/role/{name}", json={"token_policies": ["x"]})
        page = api.request("LIST", "auth/approle/role", params={"after": "r1", "limit": "1"})
        assert page.json()["data"]["keys"] == ["r2"]


def test_approle_secret_ids_are_listed_looked_up_and_destroyed(empty_sandbox: Sandbox) -> None:
    with v1(empty_sandbox) as api:
        api.post("auth/approle/role/app", json={"token_policies": ["x"]})
        custom = api.post(
            "auth/approle/role/app/custom-secret-id",
            json={"secret_id": "chosen", "metadata": '{"app": "x"}'},
        ).json()["data"]
        listed = api.request("LIST", "auth/approle/role/app/secret-id").json()["data"]["keys"]
        assert listed == [custom["secret_id_accessor"]]
        found = api.post("auth/approle/role/app/secret-id/lookup", json={"secret_id": "chosen"})
        assert found.json()["data"]["metadata"] == {"app": "x"}
        destroyed = api.post(
            "auth/approle/role/app/secret-id/destroy", json={"secret_id": "chosen"}
        )
        assert destroyed.status_code == 204
        gone = api.post("auth/approle/role/app/secret-id/lookup", json={"secret_id": "chosen"})
        assert gone.status_code == 204


def test_the_audit_device_writes_what_the_audit_log_reader_reads(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    with Sandbox(demo=False, audit_file=str(path)) as sb, v1(sb) as api:
        api.post("auth/userpass/users/ed", json={"password": "secret-pw"})
        _login(sb, "ed", "secret-pw")
        devices = api.get("sys/audit").json()["data"]
        assert list(devices) == ["file/"]
        hashed = api.post("sys/audit-hash/file", json={"input": sb.token}).json()["data"]["hash"]
        assert_error(api.post("sys/audit/other", json={"type": "file"}), 400, "declarative")
    text = path.read_text()
    assert "secret-pw" not in text and sb.token not in text
    assert path.stat().st_mode & 0o077 == 0
    entries = [json.loads(line) for line in text.splitlines()]
    assert {e["type"] for e in entries} == {"request", "response"}
    assert hashed in {e["request"]["client_token"] for e in entries}
    frame = auditlog.open(str(path)).principals_frame()
    assert "ed" in set(frame["role"].dropna())


def test_a_wrapped_value_is_unwrapped_once(empty_sandbox: Sandbox) -> None:
    with v1(empty_sandbox) as api:
        assert_error(api.post("sys/wrapping/wrap", json={"a": "b"}), 400, "response wrapping")
        wrapped = api.post(
            "sys/wrapping/wrap", json={"a": "b"}, headers={"X-Vault-Wrap-TTL": "5m"}
        ).json()["wrap_info"]
        assert wrapped["ttl"] == 300
        first = api.post("sys/wrapping/unwrap", json={"token": wrapped["token"]})
        assert first.json()["data"] == {"a": "b"}
        again = api.post("sys/wrapping/unwrap", json={"token": wrapped["token"]})
        assert_error(again, 400, "wrapping token is not valid or does not exist")


def test_trailing_slash_lists_and_hyphen_serials_are_served(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as api:
        for path in ("sys/policies/acl/", "auth/userpass/users/", "auth/token/accessors/"):
            assert api.request("LIST", path).status_code == 200, path
        assert api.get("sys/policies/acl/", params={"list": "true"}).status_code == 200


def test_the_demo_users_have_entities_and_the_templated_policy_follows_them(
    demo_sandbox: Sandbox,
) -> None:
    with v1(demo_sandbox) as api:
        names = api.request("LIST", "identity/entity/name").json()["data"]["keys"]
        assert set(DEMO_ENTITIES) <= set(names)
        auth = _login(demo_sandbox, "olivia", "demo-olivia-pass")
        olivia = api.get("identity/entity/name/olivia").json()["data"]
        assert auth["entity_id"] == olivia["id"]
        token = auth["client_token"]
        assert _capabilities(api, token, "database/creds/platform").json()["capabilities"] == [
            "read"
        ]
        assert _capabilities(api, token, "database/creds/security").json()["capabilities"] == [
            "deny"
        ]
        roles = api.request("LIST", "auth/token/roles").json()["data"]["keys"]
        assert roles == ["break-glass", "ci-deployer", "service-identity"]


def test_entities_and_groups_are_written_read_and_deleted_by_the_id_or_name_in_the_path(
    empty_sandbox: Sandbox,
) -> None:
    with v1(empty_sandbox) as api:
        for kind in ("entity", "group"):
            made = api.post(f"identity/{kind}/name/by-path-{kind}", json={"policies": ["a"]})
            assert made.status_code == 200, made.text
            record = made.json()["data"]
            assert record["name"] == f"by-path-{kind}"
            again = api.post(f"identity/{kind}/id/{record['id']}", json={"policies": ["b"]})
            assert again.status_code == 204, again.text
            by_name = api.get(f"identity/{kind}/name/by-path-{kind}").json()["data"]
            assert (by_name["id"], by_name["policies"]) == (record["id"], ["b"])
            assert api.get(f"identity/{kind}/id/{record['id']}").json()["data"] == by_name
            assert api.delete(f"identity/{kind}/name/by-path-{kind}").status_code == 204
            assert api.get(f"identity/{kind}/id/{record['id']}").status_code == 404
            assert api.get(f"identity/{kind}/name/by-path-{kind}").status_code == 404
            assert api.delete(f"identity/{kind}/id/{record['id']}").status_code == 204
