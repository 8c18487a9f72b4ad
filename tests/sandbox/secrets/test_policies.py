"""Access policies over HTTP: sys/policies/{acl,rgp,egp} and the legacy sys/policy."""

from __future__ import annotations

import base64

import pytest

from tests.sandbox.secrets._access_api import assert_error, issue, v1
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.policies import PolicyStore, policy_text

READ_SECRET = 'path "secret/*" {\n  capabilities = ["read"]\n}\n'
RULE = "main = rule { true }"


@pytest.mark.parametrize("kind", ["acl", "rgp", "egp"])
def test_a_policy_list_answers_keys_at_top_level_and_in_data(
    demo_sandbox: Sandbox, kind: str
) -> None:
    with v1(demo_sandbox) as root:
        listed = root.request("LIST", f"sys/policies/{kind}").json()
        by_get = root.get(f"sys/policies/{kind}", params={"list": "true"}).json()
    assert listed["keys"] == listed["data"]["keys"]
    assert listed["keys"] == sorted(listed["keys"]) and listed["keys"]
    assert by_get["keys"] == listed["keys"]


def test_the_acl_list_includes_root_and_default(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as root:
        keys = root.request("LIST", "sys/policies/acl").json()["keys"]
    assert {"root", "default", "operators", "auditors", "db-readers"} <= set(keys)


def test_the_egp_list_maps_names_to_paths_and_glob_status(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as root:
        body = root.request("LIST", "sys/policies/egp").json()
    # Spec 4.2: keys maps names to paths in a form the command line lists (one line each).
    assert body["keys"] == body["data"]["keys"]
    assert body["keys"] == [
        "internal-network: database/*, sys/leases/*",
        "protect-policies: sys/policies/acl/*",
    ]
    assert body["data"]["name_path_map"]["protect-policies"] == [
        {"path": "sys/policies/acl/", "glob": True}
    ]


def test_an_acl_policy_reads_back_as_name_and_policy(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        assert (
            root.post("sys/policies/acl/Readers", json={"policy": READ_SECRET}).status_code == 204
        )
        body = root.get("sys/policies/acl/readers").json()
    assert body["data"] == {"name": "readers", "policy": READ_SECRET}
    # Only under data, as OpenBao answers a read (the differential tests compare them).
    assert "name" not in body and "policy" not in body


def test_a_base64_policy_is_stored_decoded(sandbox: Sandbox) -> None:
    encoded = base64.b64encode(READ_SECRET.encode()).decode()
    with v1(sandbox) as root:
        assert root.put("sys/policies/acl/b64", json={"policy": encoded}).status_code == 204
        assert root.get("sys/policies/acl/b64").json()["data"]["policy"] == READ_SECRET


def test_plain_text_that_happens_to_be_base64_is_not_mangled() -> None:
    assert policy_text("abcd") == "abcd"  # decodes to bytes that are not text


def test_a_malformed_acl_policy_is_a_400_naming_the_parse_problem(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        bad = root.post(
            "sys/policies/acl/bad", json={"policy": 'path "x" { capabilities = ["rread"] }'}
        )
        missing = root.post("sys/policies/acl/bad", json={})
        assert_error(bad, 400, "failed to parse policy", 'invalid capability "rread"')
        assert_error(missing, 400, "policy")
        assert root.get("sys/policies/acl/bad").status_code == 404


def test_root_cannot_be_updated_or_deleted_and_default_cannot_be_deleted(
    demo_sandbox: Sandbox,
) -> None:
    with v1(demo_sandbox) as root:
        update = root.post("sys/policies/acl/root", json={"policy": READ_SECRET})
        delete_root = root.delete("sys/policies/acl/root")
        delete_default = root.delete("sys/policies/acl/default")
    assert_error(update, 400, "cannot update root policy")
    assert_error(delete_root, 400, "cannot delete root policy")
    assert_error(delete_default, 400, "cannot delete default policy")


def test_the_default_policy_can_be_updated(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        assert (
            root.post("sys/policies/acl/default", json={"policy": READ_SECRET}).status_code == 204
        )
        token = issue(root, policies=["auditors"])
    with v1(sandbox, token) as client:
        # the new default no longer lets a token look itself up
        assert_error(client.get("auth/token/lookup-self"), 403, "permission denied")


def test_deleting_a_policy_answers_204_even_when_absent(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        assert root.delete("sys/policies/acl/operators").status_code == 204
        assert root.delete("sys/policies/acl/operators").status_code == 204
        assert root.get("sys/policies/acl/operators").status_code == 404


def test_an_rgp_needs_a_valid_enforcement_level(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        missing = root.post("sys/policies/rgp/r", json={"policy": RULE})
        wrong = root.post(
            "sys/policies/rgp/r", json={"policy": RULE, "enforcement_level": "strict"}
        )
        good = root.post(
            "sys/policies/rgp/r", json={"policy": RULE, "enforcement_level": "advisory"}
        )
        read = root.get("sys/policies/rgp/r").json()["data"]
    assert_error(missing, 400, "enforcement_level")
    assert_error(wrong, 400, "enforcement_level", "strict")
    assert good.status_code == 204
    assert read == {"name": "r", "policy": RULE, "enforcement_level": "advisory"}


def test_egp_paths_accept_a_comma_separated_string_or_an_array(sandbox: Sandbox) -> None:
    level = {"enforcement_level": "hard-mandatory", "policy": RULE}
    with v1(sandbox) as root:
        assert root.post("sys/policies/egp/s", json={**level, "paths": "a/*, b"}).status_code == 204
        assert root.post("sys/policies/egp/l", json={**level, "paths": ["*"]}).status_code == 204
        s = root.get("sys/policies/egp/s").json()["data"]
        mapping = root.request("LIST", "sys/policies/egp").json()["name_path_map"]
    assert s == {**level, "name": "s", "paths": ["a/*", "b"]}
    assert mapping["s"] == [{"path": "a/", "glob": True}, {"path": "b", "glob": False}]
    assert mapping["l"] == [{"path": "", "glob": True}]


def test_a_bad_egp_write_changes_nothing(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        before = root.get("sys/policies/egp/protect-policies").json()["data"]
        for body in (
            {"policy": RULE, "enforcement_level": "advisory"},
            {"policy": RULE, "enforcement_level": "advisory", "paths": "a/*/b"},
            {"policy": RULE, "enforcement_level": "advisory", "paths": 7},
        ):
            assert_error(root.post("sys/policies/egp/protect-policies", json=body), 400, "path")
        assert root.get("sys/policies/egp/protect-policies").json()["data"] == before


def test_a_policy_change_takes_effect_immediately(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        token = issue(root, policies=["db-readers"])
        with v1(sandbox, token) as client:
            assert_error(client.request("LIST", "sys/policies/acl"), 403, "permission denied")
            grant = 'path "sys/policies/acl" { capabilities = ["list"] }'
            root.post("sys/policies/acl/db-readers", json={"policy": grant})
            assert client.request("LIST", "sys/policies/acl").status_code == 200


def test_an_unknown_policy_is_404(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as root:
        assert_error(root.get("sys/policies/acl/nope"), 404, "nope")


def test_the_legacy_sys_policy_endpoints_serve_acl_policies(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        listed = root.get("sys/policy").json()
        assert root.put("sys/policy/legacy", json={"rules": READ_SECRET}).status_code == 204
        read = root.get("sys/policy/legacy").json()
        assert root.delete("sys/policy/legacy").status_code == 204
        gone = root.get("sys/policies/acl/legacy")
    assert listed["policies"] == listed["keys"] == listed["data"]["policies"]
    assert "root" in listed["policies"]
    assert read["data"] == {"name": "legacy", "rules": READ_SECRET}
    assert gone.status_code == 404


def test_the_policy_store_ignores_unknown_names_when_building_an_acl() -> None:
    store = PolicyStore()
    acl = store.acl(["default", "no-such-policy"])
    assert acl.allows("auth/token/lookup-self", "read")
    assert not acl.allows("secret/x", "read")


def test_a_hard_mandatory_egp_is_stored_but_not_evaluated(demo_sandbox: Sandbox) -> None:
    # docs/decisions.md: the sandbox keeps RGP and EGP policies without evaluating them, so
    # the demo's hard-mandatory EGP on sys/policies/acl/* stops no write (its text says so).
    with v1(demo_sandbox) as root:
        egp = root.get("sys/policies/egp/protect-policies").json()["data"]
        assert egp["enforcement_level"] == "hard-mandatory"
        assert egp["policy"].startswith("# Stored, not evaluated by the sandbox.")
        written = root.post("sys/policies/acl/egp-probe", json={"policy": READ_SECRET})
        assert written.status_code == 204
        assert root.delete("sys/policies/acl/egp-probe").status_code == 204
