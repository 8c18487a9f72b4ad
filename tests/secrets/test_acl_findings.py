"""ACL policies as (policy, path, capabilities) rows, and the rules an auditor must see."""

from __future__ import annotations

import pandas as pd
import pytest

import toolkit
from toolkit.findings import Finding, combine, findings_frame
from toolkit.sandbox import Sandbox
from toolkit.secrets.acl import covers, rule_findings, rules_frame, rules_of

HCL = """\
# comment
path "secret/data/app/*" {
  capabilities = ["read", "list"]
}

path "sys/leases/revoke-prefix/+" {
  capabilities = ["update", "sudo"]
}
"""


def test_hcl_policies_become_one_row_per_path() -> None:
    assert rules_of("app", HCL) == [
        {"policy": "app", "path": "secret/data/app/*", "capabilities": ["list", "read"]},
        {"policy": "app", "path": "sys/leases/revoke-prefix/+", "capabilities": ["sudo", "update"]},
    ]


def test_json_policies_read_the_same_as_hcl() -> None:
    text = '{"path": {"secret/data/app/*": {"capabilities": ["read", "list"]}}}'
    assert rules_of("app", text) == rules_of("app", HCL)[:1]


def test_rows_are_the_evaluators_rules_legacy_policy_words_and_a_leading_slash_included() -> None:
    # One reader of policy documents: the rows are the evaluator's own rules, so an old
    # ``policy = "write"`` is what it grants, and a finding is not missed for its wording.
    text = 'path "/sys/policies/acl/*" { policy = "write" }'
    assert rules_of("old", text) == [
        {
            "policy": "old",
            "path": "sys/policies/acl/*",
            "capabilities": ["create", "delete", "list", "patch", "read", "update"],
        }
    ]
    assert ("critical", "old: sys/policies/acl/*") in [
        (f.severity, f.object) for f in rule_findings(rules_frame({"old": text})).itertuples()
    ]


def test_a_policy_the_evaluator_refuses_is_named_in_the_error() -> None:
    with pytest.raises(toolkit.InputError, match="policy 'odd'.*invalid capability"):
        rules_of("odd", 'path "x" { capabilities = ["raed"] }')


def test_a_policy_that_does_not_parse_is_named_in_the_error() -> None:
    with pytest.raises(toolkit.InputError, match="policy 'broken' is not valid HCL"):
        rules_of("broken", 'path "x" { capabilities = [')


@pytest.mark.parametrize(
    ("glob", "path", "expected"),
    [
        ("sys/*", "sys/policies/acl/x", True),
        ("sys/policies/acl/*", "sys/policies/acl/x", True),
        ("sys/policies/+/x", "sys/policies/acl/x", True),
        ("sys/policies/+/y", "sys/policies/acl/x", False),
        ("sys/policies/acl", "sys/policies/acl/x", False),
        ("*", "anything/at/all", True),
        ("auth/token/create*", "auth/token/create-orphan", True),
        ("auth/token/create", "auth/token/create-orphan", False),
    ],
)
def test_globs_match_as_the_server_matches_them(glob: str, path: str, expected: bool) -> None:
    assert covers(glob, path) is expected


def _findings(text: str) -> list[tuple[str, str]]:
    frame = rule_findings(rules_frame({"p": text}))
    return list(zip(frame["severity"].astype(str), frame["reason"], strict=True))


def _policy(path: str, *caps: str) -> str:
    quoted = ", ".join(f'"{c}"' for c in caps)
    return f'path "{path}" {{\n  capabilities = [{quoted}]\n}}\n'


def test_a_policy_that_can_write_acl_policies_is_root_equivalent() -> None:
    found = _findings(_policy("sys/policies/*", "create", "update"))
    assert found[0][0] == "critical" and "root-equivalent" in found[0][1]
    assert not any(s == "critical" for s, _ in _findings(_policy("sys/policies/*", "read")))


def test_sudo_and_writes_on_every_path_are_root_equivalent() -> None:
    severities = [s for s, _ in _findings(_policy("*", "create", "update", "sudo"))]
    assert severities[0] == "critical" and "high" in severities
    assert [s for s, _ in _findings(_policy("*", "read", "list"))] == []


def test_sudo_is_flagged_and_its_absence_is_not() -> None:
    assert _findings(_policy("sys/leases/lookup", "update", "sudo")) == [
        ("high", "grants sudo (root-protected endpoints)")
    ]
    assert _findings(_policy("sys/leases/lookup", "update")) == []


def test_orphan_token_creation_is_flagged_through_globs_too() -> None:
    assert _findings(_policy("auth/token/create-orphan", "update"))[0][0] == "high"
    assert _findings(_policy("auth/token/*", "update"))[0][0] == "high"
    assert _findings(_policy("auth/token/create", "update")) == []
    assert _findings(_policy("auth/token/create-orphan", "deny")) == []


def test_globs_under_sys_are_flagged_unless_they_deny() -> None:
    assert _findings(_policy("sys/mounts/+", "read")) == [("medium", "glob under sys/ grants read")]
    assert _findings(_policy("sys/mounts/+", "deny")) == []
    assert _findings(_policy("secret/+", "read")) == []


def test_the_demo_policies_served_by_the_sandbox_give_rules_and_findings(
    demo_sandbox: Sandbox,
) -> None:
    with toolkit.SecretsClient(demo_sandbox.address, demo_sandbox.token) as client:
        texts = {
            n: client.policies.read("acl", n)["policy"]
            for n in client.policies.list_policies("acl")
        }
    rules = rules_frame(texts)
    operators = rules[rules["policy"] == "operators"]
    assert set(operators["path"]) >= {"sys/policies/*", "sys/leases/*", "auth/token/create"}
    assert all(isinstance(c, list) and c for c in rules["capabilities"])
    found = rule_findings(rules)
    critical = found[found["severity"] == "critical"]
    assert list(critical["object"]) == ["operators: sys/policies/*"]
    assert "auditors: sys/policies/*" not in set(found[found["severity"] == "critical"]["object"])


def test_findings_frames_are_ordered_worst_first_and_combine() -> None:
    a = findings_frame([Finding("low", "b", "x", "r"), Finding("critical", "b", "y", "r")])
    b = findings_frame([Finding("high", "a", "z", "r")])
    both = combine(a, b)
    assert list(both["severity"].astype(str)) == ["critical", "high", "low"]
    assert list(both.columns) == ["severity", "area", "object", "reason"]
    assert both["severity"].cat.ordered
    empty = findings_frame([])
    assert empty.empty and list(empty.columns) == list(both.columns)
    assert isinstance(empty["reason"].dtype, pd.StringDtype)
    with pytest.raises(ValueError, match="severity must be one of"):
        Finding("urgent", "a", "b", "c")


# -- through the client ------------------------------------------------------------------
RISKY = 'path "sys/policies/acl/*" { capabilities = ["create", "update"] }'
SAFE = 'path "secret/data/app/*" { capabilities = ["read", "list"] }'


def test_the_client_gives_every_acl_policy_as_rules_not_empty_paths(
    empty_sandbox: Sandbox,
) -> None:
    with toolkit.SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        client.policies.write("acl", "app", SAFE)
        rules = client.policies.rules_frame()
    app = rules[rules["policy"] == "app"]
    assert app[["path", "capabilities"]].values.tolist() == [
        ["secret/data/app/*", ["list", "read"]]
    ]
    assert set(rules["policy"]) >= {"app", "default"}


def test_the_client_flags_a_policy_that_can_rewrite_policies_and_not_a_read_only_one(
    empty_sandbox: Sandbox,
) -> None:
    with toolkit.SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        client.policies.write("acl", "risky", RISKY)
        client.policies.write("acl", "safe", SAFE)
        found = client.policies.findings()
    risky = found[found["object"].str.startswith("risky:")]
    assert list(risky["severity"].astype(str)) == ["critical", "medium"]
    assert not found["object"].str.startswith("safe:").any()


def test_holders_show_which_tokens_carry_which_policy(empty_sandbox: Sandbox) -> None:
    with toolkit.SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        client.policies.write("acl", "risky", RISKY)
        client.policies.write("acl", "safe", SAFE)
        holder = client.tokens.create(policies=["risky"], ttl="1h", display_name="ops")
        holders = client.policies.holders()
        with toolkit.SecretsClient(
            empty_sandbox.address, holder["client_token"].reveal()
        ) as limited:
            refused = limited.policies.holders()
    risky = holders[holders["policy"] == "risky"]
    assert risky[["holder_kind", "holder"]].values.tolist() == [
        ["token", f"{holder['accessor']} (token-ops)"]
    ]
    assert holders[holders["policy"] == "safe"].empty
    assert holders.attrs["not_permitted"] == []
    # The sandbox keeps no token roles but lists them as a server with none does; this
    # token may list neither, and the frame says so in its coverage.
    assert refused.empty
    assert refused.attrs["not_permitted"] == ["auth/token/accessors", "auth/token/roles"]
    gaps = toolkit.coverage(refused)
    assert list(gaps["path"]) == ["auth/token/accessors", "auth/token/roles"]
    assert toolkit.coverage(holders).attrs["complete"]
