"""Tokens through the client: a scoped token is issued, refused what it lacks, and revokes itself."""

from __future__ import annotations

import pytest

import toolkit
from toolkit import PermissionDenied, Sensitive
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient


def test_a_scoped_token_is_refused_what_its_policy_lacks_and_revoke_self_ends_it(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    scoped = client.tokens.create(policies=["auditors"], ttl="15m")
    assert isinstance(scoped["client_token"], Sensitive)
    with SecretsClient(sandbox.address, scoped["client_token"].reveal()) as auditor:
        assert "operators" in auditor.policies.list_policies("acl")
        with pytest.raises(PermissionDenied):
            auditor.password_policies.generate("strong-32")
        assert sorted(auditor.tokens.lookup_self()["policies"]) == ["auditors", "default"]

        auditor.tokens.revoke_self()

        with pytest.raises(PermissionDenied):
            auditor.tokens.lookup_self()
    # The root token is untouched.
    assert client.tokens.lookup_self()["policies"] == ["root"]


# -- the token audit --------------------------------------------------------------------
def _about(findings: object, accessor: str) -> list[str]:
    import pandas as pd

    assert isinstance(findings, pd.DataFrame)
    rows = findings[findings["object"].str.startswith(accessor)]
    return [f"{r.severity}: {r.reason}" for r in rows.itertuples()]


def test_the_inventory_lists_every_token_by_accessor_without_any_token_value(
    client: SecretsClient,
) -> None:
    scoped = client.tokens.create(policies=["auditors"], ttl="15m", display_name="ci")
    inventory = client.tokens.inventory()

    row = inventory.loc[scoped["accessor"]]
    assert row["policies"] == ["auditors", "default"]
    assert row["display_name"] == "token-ci"
    assert 0 < row["ttl"] <= 900 and row["creation_ttl"] == 900
    assert not row["orphan"] and row["path"] == "auth/token/create"
    assert str(inventory["expire_time"].dtype) == "datetime64[ns, UTC]"
    root = inventory[inventory["policies"].map(lambda p: "root" in p)]
    assert len(root) == 1 and root["expire_time"].isna().all()
    assert scoped["client_token"].reveal() not in inventory.to_csv()


def test_a_token_that_holds_root_and_never_expires_is_flagged_and_a_scoped_one_is_not(
    client: SecretsClient,
) -> None:
    scoped = client.tokens.create(policies=["auditors"], ttl="1h")
    rooted = client.tokens.create(policies=["root"])

    findings = client.tokens.findings()

    assert _about(findings, rooted["accessor"]) == [
        "critical: root token: holds the root policy",
        "high: never expires (policies root)",
    ]
    assert _about(findings, scoped["accessor"]) == []


def test_a_token_revoked_before_its_lookup_is_left_out_of_the_inventory(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    gone = client.tokens.create(policies=["auditors"], ttl="1h")
    with pytest.raises(toolkit.APIError, match="invalid accessor"):
        client.tokens.lookup_accessor("no-such-accessor")
    with SecretsClient(sandbox.address, gone["client_token"].reveal()) as c:
        c.tokens.revoke_self()
    assert gone["accessor"] not in client.tokens.inventory().index


def test_a_token_without_sudo_gets_a_not_permitted_finding_instead_of_an_error(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    scoped = client.tokens.create(policies=["auditors"], ttl="15m")
    with SecretsClient(sandbox.address, scoped["client_token"].reveal()) as auditor:
        with pytest.raises(PermissionDenied):
            auditor.tokens.list_accessors()
        findings = auditor.tokens.findings()
    assert findings[["severity", "object"]].values.tolist() == [["medium", "auth/token/accessors"]]
    assert findings["reason"][0].startswith("not permitted")
