"""A dropped connection after the server applied a call: the client retries only what is safe.

The sandbox applies the request, stores its change, then drops the connection
before the answer's body: the client cannot know whether its call was applied.
"""

from __future__ import annotations

import pytest

from toolkit import PlatformClient, SecretsClient
from toolkit._errors import TransportError
from toolkit.sandbox import Sandbox


def test_a_dropped_post_is_not_retried_and_applied_once(sandbox: Sandbox) -> None:
    client = SecretsClient(sandbox.address, sandbox.token)
    sandbox.faults.drop_after_apply("POST", "/v1/sys/policies/acl/")
    with pytest.raises(TransportError) as caught:
        client.policies.write("acl", "dropped", 'path "kv/*" { capabilities = ["read"] }')
    assert sandbox.address in str(caught.value)
    assert sandbox.faults.dropped == 1  # one attempt reached the server: no retry
    assert "dropped" in client.policies.list_policies("acl")


def test_a_dropped_platform_create_is_not_retried_so_one_record_exists(sandbox: Sandbox) -> None:
    client = PlatformClient(sandbox.address, sandbox.token)
    policy_set = str(client.organizations.policy_sets_frame("acme").index[0])
    before = len(client.policy_set_parameters.parameters_frame(policy_set))
    sandbox.faults.drop_after_apply("POST", f"/api/v2/policy-sets/{policy_set}/parameters")
    with pytest.raises(TransportError):
        client.policy_set_parameters.create(policy_set, key="dropped", value="v")
    assert sandbox.faults.dropped == 1
    keys = list(client.policy_set_parameters.parameters_frame(policy_set)["key"])
    assert len(keys) == before + 1 and keys.count("dropped") == 1


def test_a_dropped_idempotent_call_is_retried_and_the_end_state_is_the_same(
    sandbox: Sandbox,
) -> None:
    client = SecretsClient(sandbox.address, sandbox.token)
    lease_id = sorted(client.leases.list_leases("database/creds/readonly"))[0]
    lease_id = f"database/creds/readonly/{lease_id}"
    sandbox.faults.drop_after_apply("POST", "/v1/sys/leases/revoke")
    client.leases.revoke(lease_id)  # retried after the drop; revoking twice is harmless
    assert sandbox.faults.dropped == 1
    with sandbox.secrets.lock:
        assert sandbox.secrets.leases.get(lease_id) is None


def test_a_dropped_rekey_share_is_counted_once(tmp_path) -> None:
    import json

    init_file = tmp_path / "init.json"
    with Sandbox(key_shares=3, key_threshold=2, init_file=str(init_file)) as sb:
        shares = json.loads(init_file.read_text())["keys"]
        client = SecretsClient(sb.address, sb.token)
        nonce = str(client.rekey.init(secret_shares=3, secret_threshold=2)["nonce"])
        sb.faults.drop_after_apply("POST", "/v1/sys/rekey/update")
        with pytest.raises(TransportError):
            client.rekey.update(shares[0], nonce)
        assert sb.faults.dropped == 1
        assert client.rekey.status()["progress"] == 1
        # The keyholder, unsure, enters the same share again: it is refused, not counted twice.
        with pytest.raises(Exception, match="already"):
            client.rekey.update(shares[0], nonce)
        assert client.rekey.status()["progress"] == 1
        assert client.rekey.update(shares[1], nonce)["complete"] is True
