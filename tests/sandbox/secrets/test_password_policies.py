"""Password policies: the policy language, generation, and sys/policies/password over HTTP."""

from __future__ import annotations

import base64

import pytest

from tests.sandbox.secrets._access_api import assert_error, v1
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.errors import InvalidRequest, SecretsError
from toolkit.sandbox.secrets.password_policies import (
    PasswordPolicyStore,
    parse_password_policy,
)

LOWER = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
MIXED = f"""
length = 12
rule "charset" {{
  charset = "{LOWER}"
  min-chars = 2
}}
rule "charset" {{
  charset = "{DIGITS}"
  min-chars = 3
}}
"""


def test_a_generated_password_has_the_length_and_meets_every_min_chars() -> None:
    policy = parse_password_policy("mixed", MIXED)
    for _ in range(50):
        password = policy.generate()
        assert len(password) == 12
        assert sum(ch in LOWER for ch in password) >= 2
        assert sum(ch in DIGITS for ch in password) >= 3
        assert set(password) <= set(LOWER + DIGITS)


def test_generated_passwords_differ() -> None:
    policy = parse_password_policy("mixed", MIXED)
    assert len({policy.generate() for _ in range(20)}) == 20


def test_engines_generate_through_the_store_by_name() -> None:
    store = PasswordPolicyStore()
    store.put("mixed", MIXED)
    assert len(store.generate("mixed")) == 12


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (f'rule "charset" {{ charset = "{LOWER}" }}', "length is required"),
        (f'length = 3\nrule "charset" {{ charset = "{LOWER}" }}', "length must be >= 4"),
        (f'length = 101\nrule "charset" {{ charset = "{LOWER}" }}', "length must be <= 100"),
        ('length = 8\nrule "charset" { charset = "" }', "charset must be a non-empty string"),
        ("length = 8", 'at least one rule "charset"'),
        ('length = 8\nrule "words" { charset = "ab" }', 'unrecognized rule type "words"'),
        (
            'length = 4\nrule "charset" {\n charset = "ab"\n min-chars = 3\n}\n'
            'rule "charset" {\n charset = "cd"\n min-chars = 2\n}',
            "add up to 5, more than the length 4",
        ),
        ('length = 8\nrule "charset" {\n charset = "ab"\n min-chars = -1\n}', "min-chars"),
        ("length = 8\nrule {", "unable to parse policy"),
    ],
)
def test_an_invalid_password_policy_is_refused_naming_the_reason(text: str, reason: str) -> None:
    with pytest.raises(SecretsError, match=reason) as caught:
        parse_password_policy("p", text)
    assert isinstance(caught.value, InvalidRequest)


def test_a_policy_whose_draws_almost_never_succeed_is_refused_as_too_slow() -> None:
    # Ten one-letter rules filling all ten places: about one draw in a billion
    # succeeds, so the bounded attempts never find one (four letters did, now and then).
    letters = "abcdefghij"
    rules = "".join(f'rule "charset" {{\n charset = "{ch}"\n min-chars = 1\n}}\n' for ch in letters)
    text = f'length = {len(letters)}\nrule "charset" {{ charset = "{LOWER}{DIGITS}" }}\n{rules}'
    store = PasswordPolicyStore()
    with pytest.raises(SecretsError, match="unable to generate password") as caught:
        store.put("slow", text)
    assert isinstance(caught.value, InvalidRequest)
    assert store.names() == []


# -- over HTTP -----------------------------------------------------------------------


def test_the_demo_password_policies_are_listed(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as root:
        listed = root.request("LIST", "sys/policies/password").json()
        by_get = root.get("sys/policies/password", params={"list": "true"}).json()
    assert listed["data"]["keys"] == ["alnum-20", "strong-32"]
    assert by_get["data"] == listed["data"]


def test_save_read_generate_and_delete_a_password_policy(sandbox: Sandbox) -> None:
    with v1(sandbox) as root:
        assert root.post("sys/policies/password/mixed", json={"policy": MIXED}).status_code == 204
        assert root.get("sys/policies/password/mixed").json()["data"]["policy"] == MIXED
        password = root.get("sys/policies/password/mixed/generate").json()["data"]["password"]
        assert len(password) == 12
        assert root.delete("sys/policies/password/mixed").status_code == 204
        assert_error(root.get("sys/policies/password/mixed"), 404, "policy does not exist")


def test_a_base64_password_policy_is_accepted(sandbox: Sandbox) -> None:
    encoded = base64.b64encode(MIXED.encode()).decode()
    with v1(sandbox) as root:
        assert root.put("sys/policies/password/b64", json={"policy": encoded}).status_code == 204
        assert root.get("sys/policies/password/b64").json()["data"]["policy"] == MIXED


def test_generating_from_a_missing_policy_is_404(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as root:
        response = root.get("sys/policies/password/nope/generate")
    assert_error(response, 404, "policy does not exist")


def test_an_unsatisfiable_policy_is_a_400_and_is_not_saved(sandbox: Sandbox) -> None:
    text = 'length = 4\nrule "charset" {\n charset = "ab"\n min-chars = 5\n}'
    with v1(sandbox) as root:
        response = root.post("sys/policies/password/alnum-20", json={"policy": text})
        kept = root.get("sys/policies/password/alnum-20").json()["data"]["policy"]
    assert_error(response, 400, "min-chars", "length 4")
    assert "length = 20" in kept


def test_a_missing_policy_document_is_a_400(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as root:
        assert_error(root.post("sys/policies/password/x", json={}), 400, "policy")


def test_the_demo_strong_policy_generates_passwords_with_symbols(demo_sandbox: Sandbox) -> None:
    with v1(demo_sandbox) as root:
        password = root.get("sys/policies/password/strong-32/generate").json()["data"]["password"]
    assert len(password) == 32
    assert sum(ch in "!@#$%^&*-_=+" for ch in password) >= 2


def test_the_default_policy_lets_any_token_generate_but_auditors_are_denied(
    demo_sandbox: Sandbox,
) -> None:
    with v1(demo_sandbox, "demo-db-reader-token") as reader:
        assert reader.get("sys/policies/password/alnum-20/generate").status_code == 200
    with v1(demo_sandbox, "demo-auditor-token") as auditor:
        response = auditor.get("sys/policies/password/alnum-20/generate")
    assert_error(response, 403, "permission denied")


def test_an_empty_password_policy_list_is_404_as_on_the_real_server() -> None:
    with Sandbox(demo=False) as empty, v1(empty) as root:
        missing = root.request("LIST", "sys/policies/password")
        assert (missing.status_code, missing.json()) == (404, {"errors": []})
        policy = 'length = 8\nrule "charset" {\n  charset = "ab"\n}\n'
        assert root.post("sys/policies/password/p", json={"policy": policy}).status_code == 204
        listed = root.request("LIST", "sys/policies/password").json()
        assert listed["data"]["keys"] == ["p"]
        read = root.get("sys/policies/password/p").json()
        assert "policy" in read["data"] and "policy" not in read
