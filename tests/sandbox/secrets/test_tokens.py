"""Tokens: issuing, looking up, expiry by the sandbox clock, revocation, and their leases."""

from __future__ import annotations

import pytest

from tests.sandbox.secrets._access_api import assert_error, issue, put_acl, v1
from toolkit.sandbox import Sandbox
from toolkit.sandbox._clock import Clock
from toolkit.sandbox.secrets.errors import SecretsError
from toolkit.sandbox.secrets.token_roles import TokenRequest
from toolkit.sandbox.secrets.tokens import DEFAULT_TTL, TokenStore


def test_token_create_answers_the_auth_block(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        response = root.post(
            "auth/token/create",
            json={
                "policies": ["db-readers"],
                "ttl": "1h",
                "display_name": "App",
                "meta": {"team": "a"},
            },
        )
    assert response.status_code == 200
    body = response.json()
    auth = body["auth"]
    assert body["data"] is None
    assert auth["client_token"].startswith("s.")
    assert auth["accessor"] and auth["accessor"] != auth["client_token"]
    assert auth["policies"] == ["db-readers", "default"]
    assert auth["token_policies"] == auth["policies"]
    assert auth["lease_duration"] == 3600
    assert auth["renewable"] is True
    assert auth["metadata"] == {"team": "a"}
    assert {"entity_id", "orphan", "token_type"} <= set(auth)


def test_a_new_token_looks_itself_up_through_the_default_policy(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        token = issue(root, policies=["db-readers"], display_name="app", ttl=600)
    with v1(sandbox, token) as client:
        data = client.get("auth/token/lookup-self").json()["data"]
    assert data["id"] == token
    assert data["policies"] == ["db-readers", "default"]
    assert data["display_name"] == "token-app"
    assert data["ttl"] == 600
    assert data["orphan"] is False
    assert data["expire_time"].endswith("Z")


def test_a_token_without_policies_inherits_its_parents(sandbox: Sandbox) -> None:
    with v1(sandbox, "demo-operator-token") as operator:
        operator_child = issue(operator)
    with v1(sandbox, operator_child) as child:
        assert child.get("auth/token/lookup-self").json()["data"]["policies"] == [
            "default",
            "operators",
        ]


def test_a_non_root_caller_may_only_give_a_subset_of_its_policies(sandbox: Sandbox) -> None:
    with v1(sandbox, "demo-operator-token") as operator:
        allowed = operator.post("auth/token/create", json={"policies": ["operators"]})
        refused = operator.post("auth/token/create", json={"policies": ["operators", "auditors"]})
    assert allowed.status_code == 200
    assert_error(refused, 400, "child policies must be subset of parent")


def test_only_root_or_sudo_may_create_an_orphan_token(sandbox: Sandbox) -> None:
    with v1(sandbox, "demo-operator-token") as operator:
        refused = operator.post("auth/token/create", json={"no_parent": True})
    with v1(sandbox) as root:
        orphan = issue(root, no_parent=True, policies=["auditors"])
    assert_error(refused, 400, "orphan")
    with v1(sandbox, orphan) as client:
        assert client.get("auth/token/lookup-self").json()["data"]["orphan"] is True


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"ttl": "soon"}, "ttl"),
        ({"policies": 5}, "policies"),
        ({"renewable": "yes"}, "renewable"),
        ({"meta": {"a": 1}}, "meta"),
    ],
)
def test_bad_token_create_input_is_a_400_naming_the_field(
    demo_sandbox: Sandbox, body: dict[str, object], fragment: str
) -> None:
    with v1(demo_sandbox) as root:
        assert_error(root.post("auth/token/create", json=body), 400, fragment)


def test_a_missing_or_unknown_token_is_permission_denied(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox, "no-such-token") as client:
        assert_error(client.get("auth/token/lookup-self"), 403, "permission denied")
    with v1(demo_sandbox) as client:
        del client.headers["X-Vault-Token"]
        assert_error(client.get("auth/token/lookup-self"), 403, "permission denied")


def test_a_token_expires_by_the_sandbox_clock(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        token = issue(root, policies=["auditors"], ttl="30s")
    with v1(sandbox, token) as client:
        assert client.get("auth/token/lookup-self").status_code == 200
        sandbox.clock.advance(31)
        assert_error(client.get("auth/token/lookup-self"), 403, "permission denied")


def test_revoke_self_ends_the_token_and_its_children(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        parent = issue(root, policies=["operators"])
    with v1(sandbox, parent) as client:
        child = issue(client, policies=["operators"])
        assert client.post("auth/token/revoke-self").status_code == 204
        assert_error(client.get("auth/token/lookup-self"), 403, "permission denied")
    with v1(sandbox, child) as client:
        assert_error(client.get("auth/token/lookup-self"), 403, "permission denied")


def test_lookup_names_a_token_in_the_body(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        token = issue(root, policies=["auditors"])
        found = root.post("auth/token/lookup", json={"token": token})
        unknown = root.post("auth/token/lookup", json={"token": "s.nothing"})
    assert found.json()["data"]["policies"] == ["auditors", "default"]
    assert_error(unknown, 403, "bad token")


def test_renew_self_extends_a_token_from_now(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        token = issue(root, policies=["auditors"], ttl="1m")
    with v1(sandbox, token) as client:
        sandbox.clock.advance(50)
        renewed = client.post("auth/token/renew-self", json={"increment": "10m"})
        assert renewed.status_code == 200
        assert renewed.json()["auth"]["lease_duration"] == 600
        sandbox.clock.advance(60)
        assert client.get("auth/token/lookup-self").status_code == 200


def test_a_token_is_a_lease_under_auth_token_create(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        token = issue(root, policies=["auditors"], ttl="1h")
        stored = sandbox.secrets.tokens.get(token)
        assert stored is not None
        lease_id = stored.lease_id
        assert lease_id.startswith("auth/token/create/")
        assert token not in lease_id
        looked_up = root.put("sys/leases/lookup", json={"lease_id": lease_id})
        assert looked_up.status_code == 200, looked_up.text
        assert root.put("sys/leases/revoke", json={"lease_id": lease_id}).status_code in (202, 204)
    with v1(sandbox, token) as client:
        assert_error(client.get("auth/token/lookup-self"), 403, "permission denied")


def test_revoking_a_token_revokes_its_lease(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        token = issue(root, policies=["auditors"])
        stored = sandbox.secrets.tokens.get(token)
        assert stored is not None
        root.post("auth/token/revoke", json={"token": token})
        assert sandbox.secrets.leases.get(stored.lease_id) is None


def test_a_deleted_policy_acts_as_empty_on_tokens_that_hold_it(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        put_acl(root, "temp", 'path "sys/policies/password" { capabilities = ["list"] }')
        token = issue(root, policies=["temp"])
        with v1(sandbox, token) as client:
            assert client.request("LIST", "sys/policies/password").status_code == 200
            assert root.delete("sys/policies/acl/temp").status_code == 204
            assert_error(client.request("LIST", "sys/policies/password"), 403, "permission denied")
            # the token itself lives on, with the default policy still working
            assert client.get("auth/token/lookup-self").status_code == 200


# -- the state class, without a socket -----------------------------------------------


def test_the_root_token_never_expires_and_holds_root() -> None:
    store = TokenStore(Clock(), "root-id")
    store.clock.advance(10 * DEFAULT_TTL)
    root = store.authenticate("root-id")
    assert root.is_root and root.expire_time is None


def test_a_child_never_outlives_its_parent() -> None:
    store = TokenStore(Clock(), "root-id")
    parent, _ = store.create(store.root, TokenRequest(policies=["a"], ttl=3600))
    child, _ = store.create(parent, TokenRequest(policies=["a"], ttl=5 * 3600))
    assert child.ttl <= 3600


def test_a_token_repr_never_shows_its_id() -> None:
    store = TokenStore(Clock(), "root-id")
    token, _ = store.create(store.root, TokenRequest(policies=["a"]))
    assert token.id not in repr(token)
    assert "root-id" not in repr(store.root)


def test_the_root_token_cannot_be_revoked() -> None:
    store = TokenStore(Clock(), "root-id")
    with pytest.raises(SecretsError):
        store.revoke(store.root)
