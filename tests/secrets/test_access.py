"""Who can do what (``bao.access``) on the sandbox: userpass users, LDAP users and groups,
AppRole roles and tokens are the principals the sandbox has (it serves no token roles,
JWT, Kubernetes, cert logins or identity store; tests/real covers those OpenBao has).

Each answer is checked against the server itself: the principals ``who_can`` names are
logged in, and their tokens asked ``sys/capabilities-self``.
"""

from __future__ import annotations

import httpx
import pytest

import toolkit
from toolkit import InputError
from toolkit._spec.acl import ACL, parse_acl_policy
from toolkit._spec.identity_templates import UNKNOWN_IDENTITY, Identity, render
from toolkit._spec.sudo import needs_sudo
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.demo_logins import DEMO_LDAP_USERS, DEMO_USERPASS_USERS
from toolkit.secrets import SecretsClient


def _login_token(sandbox: Sandbox, principal: str) -> str | None:
    """A token of a login as ``principal`` (a userpass or LDAP user), or None for others."""
    kind, _, name = principal.removeprefix("auth/").partition("/users/")
    table = {"userpass": DEMO_USERPASS_USERS, "ldap": DEMO_LDAP_USERS}.get(kind)
    if not name or table is None:
        return None
    with httpx.Client(base_url=f"{sandbox.address}/v1", timeout=10) as http:
        reply = http.post(f"auth/{kind}/login/{name}", json={"password": table[name][0]})
    reply.raise_for_status()
    return str(reply.json()["auth"]["client_token"])


def _capabilities(sandbox: Sandbox, token: str, paths: list[str]) -> dict[str, list[str]]:
    headers = {"X-Vault-Token": token}
    with httpx.Client(base_url=f"{sandbox.address}/v1", headers=headers, timeout=10) as http:
        reply = http.post("sys/capabilities-self", json={"paths": paths})
    reply.raise_for_status()
    return {p: list(reply.json()["data"][p]) for p in paths}


QUESTIONS = [
    ("update", "sys/policies/acl/anything"),
    ("read", "database/creds/readonly"),
    ("list", "sys/leases/lookup/database"),
    ("read", "sys/policies/acl/default"),
]


def test_who_can_names_exactly_the_users_whose_logins_hold_the_capability(
    demo_sandbox: Sandbox, demo_client: SecretsClient
) -> None:
    users = [
        *(f"auth/userpass/users/{n}" for n in DEMO_USERPASS_USERS),
        *(f"auth/ldap/users/{n}" for n in DEMO_LDAP_USERS),
    ]
    paths = [path for _, path in QUESTIONS]
    held_by = {}
    for principal in users:
        token = _login_token(demo_sandbox, principal)
        assert token is not None
        held_by[principal] = _capabilities(demo_sandbox, token, paths)
    for capability, path in QUESTIONS:
        frame = demo_client.access.who_can(capability, path)
        assert frame.attrs["coverage"]["complete"], frame.attrs["coverage"]
        # sys/capabilities-self does not say a path needs sudo; the request does.
        sudo = needs_sudo(path + "/" if capability == "list" else path)
        for principal, held in held_by.items():
            holds = capability in held[path] and (not sudo or "sudo" in held[path])
            assert (principal in frame.index) == holds, (principal, frame)


def test_who_can_shows_the_pattern_and_the_policy_that_grant_it(
    demo_client: SecretsClient,
) -> None:
    frame = demo_client.access.who_can("update", "sys/policies/acl/anything")
    olivia = frame.loc["auth/userpass/users/olivia"]
    assert olivia["kind"] == "userpass_user"
    assert olivia["policies"] == ["operators"]
    assert olivia["pattern"] == "sys/policies/*"
    assert "update" in olivia["capabilities"]
    assert set(frame["kind"]) >= {"userpass_user", "ldap_user", "ldap_group", "token"}
    # The root token holds everything, and says so.
    assert (frame["policies"].map(tuple) == ("root",)).sum() >= 1


def test_approle_roles_are_principals_of_their_own(demo_client: SecretsClient) -> None:
    frame = demo_client.access.who_can("read", "database/creds/readonly")
    assert frame.loc["auth/approle/role/db-reader-app", "kind"] == "approle_role"


def test_can_lists_the_patterns_most_specific_first_after_merging(
    client: SecretsClient,
) -> None:
    client.policies.write("acl", "wide", 'path "app/*" { capabilities = ["read", "list"] }')
    client.policies.write("acl", "narrow", 'path "app/keys" { capabilities = ["deny"] }')
    client.policies.write("acl", "more", 'path "app/*" { capabilities = ["update"] }')
    client.access.load()
    frame = client.access.can(["wide", "narrow", "more"])
    assert frame["pattern"].tolist() == ["app/keys", "app/*"]
    assert frame["capabilities"].tolist() == [["deny"], ["list", "read", "update"]]
    assert frame["policies"].tolist() == [["narrow"], ["wide", "more"]]
    assert frame["status"].tolist() == ["denied", "granted"]


def test_explain_names_the_pattern_that_decides_and_those_that_lost(
    client: SecretsClient,
) -> None:
    client.policies.write("acl", "wide", 'path "app/*" { capabilities = ["read"] }')
    client.policies.write("acl", "seg", 'path "app/+/x" { capabilities = ["update"] }')
    client.policies.write("acl", "deny", 'path "app/a/x" { capabilities = ["deny"] }')
    client.access.load()
    frame = client.access.explain(["wide", "seg", "deny"], "app/a/x")
    assert frame[["rank", "policy", "pattern"]].values.tolist() == [
        [1, "deny", "app/a/x"],
        [2, "seg", "app/+/x"],
        [3, "wide", "app/*"],
    ]
    assert frame["outcome"].iloc[0] == "decides: denied, the pattern denies it ('deny')"
    assert frame["outcome"].iloc[1].startswith("lost to 'app/a/x'")


def test_a_templated_pattern_depends_on_identity_for_a_role(client: SecretsClient) -> None:
    client.policies.write(
        "acl", "own", 'path "home/{{identity.entity.name}}/*" { capabilities = ["update"] }'
    )
    client.http.json("POST", "/auth/approle/role/owner", json={"token_policies": ["own"]})
    client.access.load()
    frame = client.access.who_can("update", "home/alice/notes")
    row = frame.loc["auth/approle/role/owner"]
    assert row["status"] == "depends on identity"
    assert row["pattern"] == "home/{{identity.entity.name}}/*"
    assert "auth/approle/role/owner" not in client.access.who_can("update", "elsewhere/x").index
    assert client.access.can(["own"])["status"].tolist() == ["depends on identity"]
    explained = client.access.explain(["own"], "home/alice/notes", "update")
    assert explained["outcome"].iloc[0].startswith("depends on identity")


def test_an_unknown_principal_is_an_error_naming_it(demo_client: SecretsClient) -> None:
    with pytest.raises(InputError, match="no principal 'auth/userpass/users/nobody'"):
        demo_client.access.can("auth/userpass/users/nobody")


def test_what_the_token_may_not_read_is_recorded_not_reported_as_nobody(
    sandbox: Sandbox,
) -> None:
    narrow = (
        'path "sys/policies/acl" { capabilities = ["list"] }\n'
        'path "sys/policies/acl/*" { capabilities = ["read"] }\n'
        'path "sys/auth" { capabilities = ["read"] }\n'
    )
    with SecretsClient(sandbox.address, sandbox.token) as root:
        root.policies.write("acl", "narrow-auditor", narrow)
        token = root.tokens.create(["narrow-auditor"])["client_token"].reveal()
    with SecretsClient(sandbox.address, str(token)) as auditor:
        frame = auditor.access.who_can("update", "sys/policies/acl/x")
    record = frame.attrs["coverage"]
    assert not record["complete"]
    gaps = {gap["path"]: gap for gap in record["gaps"]}
    assert gaps["auth/token/accessors"]["status"] == 403
    assert gaps["auth/userpass/users"]["status"] == 403
    assert "permission denied" in gaps["auth/userpass/users"]["reason"]
    # The house's coverage view reads the same record.
    assert "auth/token/accessors" in set(toolkit.coverage(frame)["path"])


# -- the evaluator itself (toolkit/_spec/acl.py) ------------------------------------------
IDENTITY = Identity("e-1", "alice", {"team": "blue"})


@pytest.mark.parametrize(
    ("pattern", "filled"),
    [
        ("kv/{{identity.entity.id}}/*", "kv/e-1/*"),
        ("kv/{{ identity.entity.name }}", "kv/alice"),
        ("kv/{{identity.entity.metadata.team}}/+", "kv/blue/+"),
        ("kv/{{identity.entity.metadata.none}}", None),
        ("kv/{{identity.groups.names.ops.id}}", None),
        ("kv/{{identity.nothing}}", None),
    ],
)
def test_a_template_is_filled_from_the_identity_or_leaves_the_pattern_out(
    pattern: str, filled: str | None
) -> None:
    assert render(pattern, IDENTITY) == filled


def test_a_templated_pattern_applies_only_where_the_identity_is_known() -> None:
    rules = parse_acl_policy('path "kv/{{identity.entity.name}}/*" { capabilities = ["read"] }')
    assert ACL(rules, identity=IDENTITY).capabilities("kv/alice/x") == ["read"]
    assert ACL(rules).capabilities("kv/alice/x") == ["deny"]  # a token with no entity
    decision = ACL(rules, identity=UNKNOWN_IDENTITY).decide("kv/alice/x")
    assert decision.depends_on_identity and decision.pattern is None


def test_unbalanced_template_braces_are_refused() -> None:
    with pytest.raises(ValueError, match="unbalanced templating"):
        parse_acl_policy('path "kv/{{identity.entity.id" { capabilities = ["read"] }')


def test_a_plus_before_a_glob_is_refused_as_openbao_refuses_it() -> None:
    with pytest.raises(ValueError, match=r"'\+\*' is forbidden"):
        parse_acl_policy('path "a/+*" { capabilities = ["read"] }')


def test_a_capability_check_on_a_folder_falls_back_to_the_exact_pattern_without_slash() -> None:
    acl = ACL(parse_acl_policy('path "a" { capabilities = ["create"] }'))
    assert acl.capabilities("a/") == ["create"]
    assert not acl.allows("a/", "read")  # a read of "a/" has no fallback
    both = ACL(
        parse_acl_policy(
            'path "+" { capabilities = ["read"] }\npath "+/*" { capabilities = ["update"] }'
        )
    )
    # Wildcards on "a/" itself come before wildcards on the trimmed "a".
    assert both.capabilities("a/") == ["update"]


@pytest.mark.parametrize(
    "text",
    [
        'path "a/*" {\n  capabilities = ["read", "list"]\n}\nname = "x"\n',
        '# comment\npath "a" { capabilities = "read" }\npath "b" {}\n',
        'path "a" { capabilities = ["read"]\n  max_wrapping_ttl = 300 }',
        'path "a" { allowed_parameters = { "k" = ["v"] } }',  # read by the full transform
        'path "a\\"b" { capabilities = ["read"] }',  # an escape: the full transform
        "",
    ],
)
def test_a_policy_reads_the_same_as_python_hcl2_serializes_it(text: str) -> None:
    import hcl2
    from hcl2.utils import SerializationOptions

    from toolkit._spec.hcl import parse_hcl

    options = SerializationOptions(
        with_comments=False,
        explicit_blocks=False,
        strip_string_quotes=True,
        preserve_heredocs=False,
    )
    assert parse_hcl(text) == dict(hcl2.loads(text, serialization_options=options))


def test_the_loaded_model_says_what_it_holds_in_one_line(demo_client: SecretsClient) -> None:
    text = repr(demo_client.access.load())
    assert text.startswith("<AccessModel ") and "userpass_user" in text and "\n" not in text


def test_a_misspelt_capability_is_refused_in_one_line(demo_sandbox) -> None:
    from toolkit import InputError
    from toolkit.secrets import SecretsClient

    with SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        with pytest.raises(InputError, match="unknown capability 'raed'") as refused:
            client.access.who_can("raed", "secret/x")
        assert "\n" not in str(refused.value) and "read" in str(refused.value)
