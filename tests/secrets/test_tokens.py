"""Tokens through the client: a scoped token is issued, refused what it lacks, and revokes itself."""

from __future__ import annotations

import pytest

from toolkit import PermissionDenied, Sensitive
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient


def test_a_scoped_token_is_refused_what_its_policy_lacks_and_revoke_self_ends_it(
    sandbox: Sandbox, client: SecretsClient
) -> None:
    scoped = client.tokens.create(policies=["auditors"], ttl="15m")
    assert isinstance(scoped["client_token"], Sensitive)
    with SecretsClient(sandbox.address, scoped["client_token"].reveal()) as auditor:
        assert "operators" in auditor.policies.list("acl")
        with pytest.raises(PermissionDenied):
            auditor.password_policies.generate("strong-32")
        assert sorted(auditor.tokens.lookup_self()["policies"]) == ["auditors", "default"]

        auditor.tokens.revoke_self()

        with pytest.raises(PermissionDenied):
            auditor.tokens.lookup_self()
    # The root token is untouched.
    assert client.tokens.lookup_self()["policies"] == ["root"]
