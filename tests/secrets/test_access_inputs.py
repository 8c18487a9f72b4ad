"""``bao.access`` reads questions as the operator meant them or refuses them in one line
(issue 33 item 3), and its model stays bounded on policies the server accepts (issue 34
item 6). On the demo sandbox, whose logins hold the policies in toolkit/sandbox/secrets/demo.py."""

from __future__ import annotations

import time

import pytest

from toolkit import InputError
from toolkit._spec.acl import parse_acl_policy
from toolkit._spec.identity_templates import TemplateMatcher, could_match
from toolkit._spec.sudo import needs_sudo
from toolkit.secrets import SecretsClient
from toolkit.secrets.access import TokenRole

PATH = "sys/policies/acl/anything"


@pytest.mark.parametrize("written", [f"/v1/{PATH}", f"v1/{PATH}", f"  /v1/{PATH} "])
def test_a_path_with_the_api_prefix_is_read_without_it_and_the_frame_says_so(
    demo_client: SecretsClient, written: str
) -> None:
    plain = demo_client.access.who_can("update", PATH)
    frame = demo_client.access.who_can("update", written)
    assert len(plain) > 1
    assert list(frame.index) == list(plain.index)
    assert frame.attrs["path"] == PATH
    assert "API prefix" in frame.attrs["note"] and "left out" in frame.attrs["note"]
    assert plain.attrs["note"] == ""


def test_a_bare_v1_is_a_path_when_the_server_has_a_mount_of_that_name(
    client: SecretsClient,
) -> None:
    client.http.json("POST", "/sys/mounts/v1", json={"type": "database"})
    client.policies.write("acl", "v1-reader", 'path "v1/app" { capabilities = ["read"] }')
    client.http.json("POST", "/auth/approle/role/v1-app", json={"token_policies": ["v1-reader"]})
    client.access.load()
    frame = client.access.who_can("read", "v1/app")
    assert frame.attrs["path"] == "v1/app" and frame.attrs["note"] == ""
    assert "auth/approle/role/v1-app" in frame.index
    # The API prefix with its leading slash is still the prefix.
    assert client.access.who_can("read", "/v1/v1/app").attrs["path"] == "v1/app"


def test_a_list_of_capabilities_names_the_principals_holding_all_of_them(
    demo_client: SecretsClient,
) -> None:
    update = set(demo_client.access.who_can("update", PATH).index)
    delete = set(demo_client.access.who_can("delete", PATH).index)
    read = set(demo_client.access.who_can("read", PATH).index)
    both = demo_client.access.who_can(["update", "delete"], PATH)
    assert set(both.index) == update & delete
    assert set(demo_client.access.who_can(["read", "update"], PATH).index) == read & update
    assert read - update, "the demo has readers who cannot update: the test would prove nothing"
    assert both.attrs["capabilities"] == ["update", "delete"]


def test_write_is_refused_with_the_question_create_or_update(demo_client: SecretsClient) -> None:
    with pytest.raises(InputError, match=r"^'write' is not one capability: create or update\?"):
        demo_client.access.who_can("write", PATH)
    with pytest.raises(InputError, match="create or update"):
        demo_client.access.who_can(["read", "WRITE"], PATH)


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("olivia", "auth/userpass/users/olivia"),
        ("auth/userpass/olivia", "auth/userpass/users/olivia"),
        ("auth/userpass/users/olivai", "auth/userpass/users/olivia"),
    ],
)
def test_a_principal_name_not_configured_gets_a_did_you_mean_from_the_models_names(
    demo_client: SecretsClient, written: str, meant: str
) -> None:
    with pytest.raises(InputError, match=f"no principal '{written}': did you mean .*'{meant}'"):
        demo_client.access.can(written)


def test_on_a_sudo_path_only_holders_of_sudo_are_named_and_explain_says_denied(
    client: SecretsClient,
) -> None:
    client.policies.write(
        "acl", "lists-accessors", 'path "auth/token/accessors*" { capabilities = ["list"] }'
    )
    client.policies.write(
        "acl",
        "lists-accessors-sudo",
        'path "auth/token/accessors*" { capabilities = ["list", "sudo"] }',
    )
    client.http.json(
        "POST", "/auth/approle/role/lister", json={"token_policies": ["lists-accessors"]}
    )
    client.http.json(
        "POST", "/auth/approle/role/root-lister", json={"token_policies": ["lists-accessors-sudo"]}
    )
    client.access.load()
    assert needs_sudo("auth/token/accessors/")
    frame = client.access.who_can("list", "auth/token/accessors")
    assert "auth/approle/role/root-lister" in frame.index
    assert "auth/approle/role/lister" not in frame.index
    explained = client.access.explain("auth/approle/role/lister", "auth/token/accessors", "list")
    assert explained["outcome"].iloc[0] == (
        "decides: denied, the path needs 'sudo', which the pattern does not grant"
    )
    granted = client.access.explain("auth/approle/role/root-lister", "auth/token/accessors", "list")
    assert granted["outcome"].iloc[0] == "decides"


def test_explain_says_denied_when_the_deciding_pattern_lacks_the_capability(
    demo_client: SecretsClient,
) -> None:
    frame = demo_client.access.explain("auth/userpass/users/olivia", PATH, "patch")
    assert frame["pattern"].iloc[0] == "sys/policies/*"
    assert frame["outcome"].iloc[0] == "decides: denied, the pattern does not grant 'patch'"


# -- token roles as OpenBao's token store resolves them (vault/token_store.go) --------------
@pytest.mark.parametrize(
    ("role", "caller", "policies", "why"),
    [
        (TokenRole(allowed=("a",), disallowed=("default",)), None, ("a",), ""),
        (TokenRole(allowed=("a",)), None, ("a", "default"), ""),
        (TokenRole(allowed=("a",), no_default=True), None, ("a",), ""),
        (TokenRole(allowed_glob=("a*",)), None, ("default",), ""),
        (TokenRole(), None, None, "the caller's policies"),
        (TokenRole(), ("b", "c"), ("b", "c"), ""),
        (TokenRole(no_default=True), ("b", "default"), ("b", "default"), ""),
        (TokenRole(disallowed=("c",)), ("b",), ("b", "default"), ""),
        (TokenRole(disallowed=("c",)), ("b", "c"), None, "refused"),
        (TokenRole(disallowed_glob=("c*",)), ("b", "cx"), None, "refused"),
        (TokenRole(disallowed=("x",)), ("root",), ("root",), ""),
        (TokenRole(allowed=("a", "default"), disallowed=("default",)), None, None, "refused"),
    ],
)
def test_a_token_roles_policies_follow_the_servers_rules(
    role: TokenRole,
    caller: tuple[str, ...] | None,
    policies: tuple[str, ...] | None,
    why: str,
) -> None:
    got, reason = role.policies(caller)
    assert got == policies
    assert reason.startswith(why) if why else reason == ""


def test_a_role_depending_on_the_caller_says_so_and_is_resolved_for_a_caller(
    client: SecretsClient,
) -> None:
    client.policies.write("acl", "team-a", 'path "team/a/*" { capabilities = ["read"] }')
    client.http.json("POST", "/auth/approle/role/warmup", json={"token_policies": ["team-a"]})
    model = client.access.load()
    from toolkit.secrets.access import AccessModel, Principal

    role = Principal(
        "auth/token/roles/inherit",
        "token_role",
        "inherit",
        (),
        None,
        "the caller's policies (a token of this role holds them)",
        (),
        TokenRole(),
    )
    with_role = AccessModel(model.policies, [*model.principals, role], model.coverage)
    open_frame = with_role.who_can("read", "team/a/x")
    assert open_frame.loc["auth/token/roles/inherit", "status"] == "depends on the caller"
    assert "the caller's policies" in open_frame.loc["auth/token/roles/inherit", "depends_on"]
    assert (
        "auth/token/roles/inherit" in with_role.who_can("read", "team/a/x", caller=["team-a"]).index
    )
    assert (
        "auth/token/roles/inherit"
        not in with_role.who_can("read", "team/a/x", caller=["default"]).index
    )
    with pytest.raises(InputError, match=r"depends on the caller's policies .*: name the caller"):
        with_role.can("auth/token/roles/inherit")


# -- bounded (issue 34 item 6) ----------------------------------------------------------
def test_a_pattern_with_twelve_templates_is_matched_in_linear_time() -> None:
    pattern = "x/" + "{{identity.entity.name}}-" * 12 + "end"
    path = "x/" + "a-" * 400 + "zz"
    started = time.perf_counter()
    assert not could_match(pattern).fullmatch(path)
    assert TemplateMatcher(pattern).fullmatch("x/" + "a-" * 12 + "end")
    assert time.perf_counter() - started < 1.0


def test_a_json_policy_nested_too_deep_is_refused_by_name_not_a_recursion_error() -> None:
    deep = '{"path": {"a": {"capabilities": ["read"], "x": ' + "[" * 1100 + "]" * 1100 + "}}}"
    with pytest.raises(ValueError, match="failed to parse policy"):
        parse_acl_policy(deep, "deep")
