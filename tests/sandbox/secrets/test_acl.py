"""ACL policies: parsing, path matching, precedence, and the access matrix over HTTP."""

from __future__ import annotations

import pytest

from tests.sandbox.secrets._access_api import assert_error, issue, put_acl, v1
from toolkit._spec.acl import ACL, parse_acl_policy, priority
from toolkit._spec.hcl import PolicyParseError
from toolkit.sandbox import Sandbox


def acl(text: str) -> ACL:
    return ACL(parse_acl_policy(text))


# -- parsing ------------------------------------------------------------------------


def test_an_hcl_policy_parses_into_path_rules() -> None:
    rules = parse_acl_policy(
        """
        # readers
        path "secret/*" {
          capabilities = ["read", "list"]
        }
        path "sys/policies/acl" { capabilities = ["list"] }
        """
    )
    assert [(r.pattern, sorted(r.capabilities)) for r in rules] == [
        ("secret/*", ["list", "read"]),
        ("sys/policies/acl", ["list"]),
    ]


def test_the_json_form_of_a_policy_parses_like_the_hcl_form() -> None:
    rules = parse_acl_policy('{"path": {"secret/*": {"capabilities": ["read"]}}}')
    assert [(r.pattern, set(r.capabilities)) for r in rules] == [("secret/*", {"read"})]


def test_the_legacy_policy_word_grants_its_capability_set() -> None:
    (rule,) = parse_acl_policy('path "secret/*" { policy = "read" }')
    assert rule.capabilities == {"read", "list"}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('path "a" { capabilities = ["read" }', "failed to parse policy"),
        ('path "a" { capabilities = ["fly"] }', 'invalid capability "fly"'),
        ('path "a/*/b" { capabilities = ["read"] }', "only at the end"),
        ('path "a" { color = "red" }', 'invalid key "color"'),
        ('paths "a" { capabilities = ["read"] }', 'invalid key "paths"'),
        ("{not json", "failed to parse policy"),
    ],
)
def test_a_malformed_policy_is_refused_naming_the_problem(text: str, reason: str) -> None:
    with pytest.raises(PolicyParseError, match=reason):
        parse_acl_policy(text)


# -- matching -----------------------------------------------------------------------


def test_an_exact_path_matches_only_itself() -> None:
    rules = acl('path "secret/app" { capabilities = ["read"] }')
    assert rules.allows("secret/app", "read")
    assert not rules.allows("secret/app/x", "read")
    assert not rules.allows("secret/ap", "read")


def test_a_trailing_star_matches_every_path_with_that_prefix() -> None:
    rules = acl('path "secret/app*" { capabilities = ["read"] }')
    assert rules.allows("secret/app", "read")
    assert rules.allows("secret/apple", "read")
    assert rules.allows("secret/app/deep/er", "read")
    assert not rules.allows("secret/ap", "read")


def test_a_plus_matches_exactly_one_segment() -> None:
    rules = acl('path "secret/+/config" { capabilities = ["read"] }')
    assert rules.allows("secret/team-a/config", "read")
    assert not rules.allows("secret/config", "read")
    assert not rules.allows("secret/a/b/config", "read")
    # OpenBao's ACL lets ``+`` stand for an empty segment too (sys/capabilities says so).
    assert rules.allows("secret//config", "read")


def test_a_list_request_is_covered_by_a_glob_on_the_folder() -> None:
    rules = acl('path "secret/*" { capabilities = ["list"] }')
    assert rules.allows("secret", "list")
    assert rules.allows("secret/", "list")


def test_no_matching_path_means_no_access() -> None:
    assert not acl('path "secret/*" { capabilities = ["read"] }').allows("sys/seal", "update")
    assert not ACL().allows("anything", "read")


def test_the_root_acl_allows_everything_including_sudo() -> None:
    assert ACL(root=True).allows("sys/leases/revoke-force/x", "update", sudo=True)


# -- precedence ---------------------------------------------------------------------


def test_an_exact_path_beats_a_glob() -> None:
    rules = acl(
        """
        path "secret/*" { capabilities = ["read"] }
        path "secret/locked" { capabilities = ["deny"] }
        """
    )
    assert rules.allows("secret/open", "read")
    assert not rules.allows("secret/locked", "read")


def test_a_longer_glob_beats_a_shorter_one_even_when_it_grants_less() -> None:
    rules = acl(
        """
        path "secret/*" { capabilities = ["read", "update"] }
        path "secret/team/*" { capabilities = ["read"] }
        """
    )
    assert rules.allows("secret/x", "update")
    assert not rules.allows("secret/team/x", "update")


def test_a_later_first_wildcard_wins_over_an_earlier_one() -> None:
    rules = acl(
        """
        path "secret/+/prod/*" { capabilities = ["deny"] }
        path "secret/team/*" { capabilities = ["read"] }
        """
    )
    # "secret/team/*" has its first wildcard later than "secret/+/prod/*".
    assert rules.allows("secret/team/prod/db", "read")
    assert not rules.allows("secret/other/prod/db", "read")


def test_a_pattern_without_a_trailing_star_beats_one_with_it() -> None:
    rules = acl(
        """
        path "secret/+/config" { capabilities = ["update"] }
        path "secret/*" { capabilities = ["read"] }
        """
    )
    assert rules.allows("secret/a/config", "update")
    assert not rules.allows("secret/a/config", "read")


def test_fewer_plus_segments_win() -> None:
    assert priority("a/+/c/d") > priority("a/+/+/d")


def test_priority_ranks_exact_over_plus_over_glob() -> None:
    ranked = sorted(["secret/*", "secret/a", "secret/+"], key=priority)
    assert ranked == ["secret/*", "secret/+", "secret/a"]


# -- merging, deny, create/update, sudo ------------------------------------------------


def test_deny_on_a_path_wins_over_grants_from_other_policies() -> None:
    rules = ACL(
        parse_acl_policy('path "secret/app" { capabilities = ["read", "update"] }')
        + parse_acl_policy('path "secret/app" { capabilities = ["deny"] }')
    )
    assert not rules.allows("secret/app", "read")
    assert rules.capabilities("secret/app") == ["deny"]


def test_grants_on_one_path_from_several_policies_add_up() -> None:
    rules = ACL(
        parse_acl_policy('path "secret/app" { capabilities = ["read"] }')
        + parse_acl_policy('path "secret/app" { capabilities = ["update"] }')
    )
    assert rules.capabilities("secret/app") == ["read", "update"]


def test_create_and_update_are_distinct_capabilities() -> None:
    creator = acl('path "database/roles/*" { capabilities = ["create"] }')
    updater = acl('path "database/roles/*" { capabilities = ["update"] }')
    assert creator.allows("database/roles/new", "create")
    assert not creator.allows("database/roles/new", "update")
    assert updater.allows("database/roles/new", "update")
    assert not updater.allows("database/roles/new", "create")


def test_a_sudo_path_needs_sudo_besides_the_capability() -> None:
    plain = acl('path "sys/leases/revoke-prefix/*" { capabilities = ["update"] }')
    sudo = acl('path "sys/leases/revoke-prefix/*" { capabilities = ["update", "sudo"] }')
    assert plain.allows("sys/leases/revoke-prefix/db", "update")
    assert not plain.allows("sys/leases/revoke-prefix/db", "update", sudo=True)
    assert sudo.allows("sys/leases/revoke-prefix/db", "update", sudo=True)


# -- the matrix over HTTP ---------------------------------------------------------------

MATRIX_POLICY = """
path "sys/policies/password/*" { capabilities = ["read", "list"] }
path "sys/policies/password/locked" { capabilities = ["deny"] }
path "sys/leases/lookup/*" { capabilities = ["list"] }
path "sys/leases/lookup" { capabilities = ["list"] }
path "sys/policies/acl/*" { capabilities = ["create"] }
"""

SUDO_POLICY = """
path "sys/leases/lookup/*" { capabilities = ["list", "sudo"] }
"""


def test_the_http_access_matrix_follows_the_token_policies(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        put_acl(root, "matrix", MATRIX_POLICY)
        put_acl(root, "lease-sudo", SUDO_POLICY)
        root.post(
            "sys/policies/password/locked",
            json={"policy": 'length = 8\nrule "charset" { charset = "ab" }'},
        )
        limited = issue(root, policies=["matrix"])
        with_sudo = issue(root, policies=["lease-sudo"])
    with v1(sandbox, limited) as client:
        # read granted by the glob; deny on the exact path wins there.
        assert client.get("sys/policies/password/alnum-20").status_code == 200
        assert_error(client.get("sys/policies/password/locked"), 403, "permission denied")
        # no delete capability
        assert_error(client.delete("sys/policies/password/alnum-20"), 403, "permission denied")
        # writing a policy is an update, which "create" alone does not grant
        body = {"policy": 'path "x" { capabilities = ["read"] }'}
        assert_error(client.post("sys/policies/acl/new", json=body), 403, "permission denied")
        # the lease listing is a sudo endpoint: list alone is not enough
        assert_error(client.request("LIST", "sys/leases/lookup/auth/"), 403, "permission denied")
    with v1(sandbox, with_sudo) as client:
        assert client.request("LIST", "sys/leases/lookup/auth/").status_code == 200


def test_a_restricted_endpoint_refuses_a_non_root_namespace(sandbox: Sandbox) -> None:
    with sandbox.secrets.lock:
        sandbox.secrets.namespaces.create("", "team-a")
    with v1(sandbox, **{"X-Vault-Namespace": "team-a"}) as client:
        response = client.request("LIST", "sys/policies/password")
    assert_error(
        response, 403, "permission denied", "restricted to the root or administrative", "team-a"
    )


def test_the_root_namespace_header_is_accepted_on_a_restricted_endpoint(
    demo_sandbox: Sandbox,
) -> None:
    with v1(demo_sandbox, **{"X-Vault-Namespace": "root"}) as client:
        assert client.request("LIST", "sys/policies/password").status_code == 200


def test_a_token_without_a_matching_path_is_denied(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox, "demo-db-reader-token") as client:
        assert_error(client.request("LIST", "sys/policies/acl"), 403, "permission denied")
