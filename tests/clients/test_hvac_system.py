"""hvac, unmodified, against the sandbox's system areas: rekey, ACL policies, leases.

Each test checks what hvac reads back against the spec (and the sandbox's own
state), not only that the call went through.
"""

from __future__ import annotations

import base64

import hvac
import pytest
from hvac.exceptions import Forbidden, InvalidPath, InvalidRequest

from toolkit.sandbox import Sandbox


def test_rekey_with_verification_rotates_the_root_key_only_after_the_new_shares_verify(
    vault: hvac.Client, unseal_shares: list[str]
) -> None:
    started = vault.sys.start_rekey(secret_shares=4, secret_threshold=2, require_verification=True)
    assert started["started"] is True
    assert (started["n"], started["t"], started["progress"], started["required"]) == (4, 2, 0, 3)
    assert started["verification_required"] is True
    nonce = started["nonce"]

    progress = vault.sys.rekey(unseal_shares[0], nonce=nonce)
    assert (progress["progress"], progress["nonce"]) == (1, nonce)
    with pytest.raises(InvalidRequest, match=f'nonce for this rekey operation is "{nonce}"'):
        vault.sys.rekey(unseal_shares[1], nonce="not-the-nonce")
    assert vault.sys.read_rekey_progress()["progress"] == 1

    done = vault.sys.rekey_multi(unseal_shares[1:3], nonce=nonce)
    assert done["complete"] is True and done["verification_required"] is True
    new = done["keys"]
    assert len(new) == 4 and len(set(new)) == 4
    assert done["keys_base64"] == [base64.b64encode(bytes.fromhex(k)).decode() for k in new]
    # Not rotated yet: the seal still asks for the old threshold of the old share count.
    assert (vault.sys.read_seal_status()["t"], vault.sys.read_seal_status()["n"]) == (3, 5)

    verify = vault.sys.read_rekey_verify_progress()
    assert verify["nonce"] == done["verification_nonce"]
    assert (verify["t"], verify["n"], verify["progress"]) == (2, 4, 0)
    assert vault.sys.rekey_verify(new[0], verify["nonce"])["progress"] == 1
    restarted = vault.sys.cancel_rekey_verify()
    assert restarted["progress"] == 0 and restarted["nonce"] != verify["nonce"]

    verified = vault.sys.rekey_verify_multi(new[1:3], restarted["nonce"])
    assert verified == {"nonce": restarted["nonce"], "complete": True}
    status = vault.sys.read_seal_status()
    assert (status["t"], status["n"]) == (2, 4)
    assert vault.sys.read_rekey_progress()["started"] is False

    vault.sys.seal()
    assert vault.sys.is_sealed() is True
    with pytest.raises(InvalidRequest):
        vault.sys.submit_unseal_keys(unseal_shares[:2])
    assert vault.sys.read_seal_status()["progress"] == 0
    unsealed = vault.sys.submit_unseal_keys(new[2:4])
    assert unsealed["sealed"] is False


def test_a_wrong_verification_share_makes_the_server_issue_a_new_verification_nonce(
    vault: hvac.Client, unseal_shares: list[str]
) -> None:
    nonce = vault.sys.start_rekey(secret_shares=3, secret_threshold=2, require_verification=True)[
        "nonce"
    ]
    done = vault.sys.rekey_multi(unseal_shares[:3], nonce=nonce)
    first = done["verification_nonce"]
    # Old shares are well-formed shares, just not of the new set: the threshold
    # of them rebuilds the wrong key.
    assert vault.sys.rekey_verify(unseal_shares[0], first)["progress"] == 1
    with pytest.raises(InvalidRequest):
        vault.sys.rekey_verify(unseal_shares[1], first)
    again = vault.sys.read_rekey_verify_progress()
    assert again["nonce"] != first and again["progress"] == 0
    assert vault.sys.rekey_verify_multi(done["keys"][:2], again["nonce"])["complete"] is True


def test_a_cancelled_rekey_leaves_no_attempt_and_keeps_the_old_shares(
    vault: hvac.Client, unseal_shares: list[str]
) -> None:
    nonce = vault.sys.start_rekey(secret_shares=3, secret_threshold=2)["nonce"]
    vault.sys.rekey(unseal_shares[0], nonce=nonce)
    vault.sys.cancel_rekey()
    status = vault.sys.read_rekey_progress()
    assert (status["started"], status["progress"], status["nonce"]) == (False, 0, "")
    with pytest.raises(InvalidRequest):
        vault.sys.start_rekey(secret_shares=2, secret_threshold=3)
    assert vault.sys.read_rekey_progress()["started"] is False
    vault.sys.seal()
    assert vault.sys.submit_unseal_keys(unseal_shares[2:5])["sealed"] is False


def test_acl_policies_round_trip_in_hcl_and_json_and_a_bad_one_is_refused_by_name(
    vault: hvac.Client, sandbox: Sandbox
) -> None:
    hcl = 'path "database/creds/*" {\n  capabilities = ["read"]\n}\n'
    vault.sys.create_or_update_acl_policy("creds-reader", hcl)
    assert vault.sys.read_acl_policy("creds-reader")["data"] == {
        "name": "creds-reader",
        "policy": hcl,
    }
    # hvac sends a dict policy as JSON text, which is HCL too.
    vault.sys.create_or_update_acl_policy(
        "leases-lister", {"path": {"sys/leases/lookup/*": {"capabilities": ["list", "sudo"]}}}
    )
    listed = vault.sys.list_acl_policies()["data"]["keys"]
    assert listed == sorted(sandbox.secrets.policies.names("acl"))
    assert {"creds-reader", "leases-lister", "root", "default"} <= set(listed)
    # The legacy sys/policy path that hvac also offers names the document "rules".
    assert vault.sys.read_policy("creds-reader")["rules"] == hcl

    with pytest.raises(InvalidRequest, match='invalid capability "fly"'):
        vault.sys.create_or_update_acl_policy("bad", 'path "x" { capabilities = ["fly"] }')
    assert "bad" not in vault.sys.list_acl_policies()["data"]["keys"]
    with pytest.raises(InvalidPath):
        vault.sys.read_acl_policy("missing")

    vault.sys.delete_acl_policy("creds-reader")
    assert "creds-reader" not in vault.sys.list_acl_policies()["data"]["keys"]


def test_a_policy_grants_what_it_says_to_an_hvac_token(
    vault: hvac.Client, sandbox: Sandbox
) -> None:
    vault.sys.create_or_update_acl_policy(
        "leases-lister", {"path": {"sys/leases/lookup/*": {"capabilities": ["list", "sudo"]}}}
    )
    issued = vault.auth.token.create(policies=["leases-lister"], ttl="1h")["auth"]
    assert issued["policies"] == ["default", "leases-lister"]
    limited = hvac.Client(url=sandbox.address, token=issued["client_token"], timeout=10)
    keys = limited.sys.list_leases("database/creds")["data"]["keys"]
    assert keys == sandbox.secrets.leases.lookup_prefix("database/creds/")
    with pytest.raises(Forbidden):
        limited.sys.list_acl_policies()
    with pytest.raises(Forbidden):
        limited.sys.revoke_prefix("database/creds/readonly")


def _first_lease(sandbox: Sandbox, prefix: str) -> str:
    with sandbox.secrets.lock:
        leases = sandbox.secrets.leases.leases_under(prefix)
        return sorted(lease.lease_id for lease in leases if not lease.irrevocable)[0]


def test_lease_lookup_shows_the_spec_fields_of_the_lease(
    vault: hvac.Client, sandbox: Sandbox
) -> None:
    lease_id = _first_lease(sandbox, "database/creds/readonly")
    data = vault.sys.read_lease(lease_id)["data"]
    assert set(data) == {"id", "issue_time", "expire_time", "last_renewal_time", "renewable", "ttl"}
    with sandbox.secrets.lock:
        lease = sandbox.secrets.leases.get(lease_id)
        assert lease is not None
        expected_ttl = lease.ttl(sandbox.secrets.leases.now())
    assert data["id"] == lease_id and data["renewable"] is True
    assert data["issue_time"].startswith(lease.issue_time.strftime("%Y-%m-%dT%H:%M:%S"))
    assert data["expire_time"].startswith(lease.expire_time.strftime("%Y-%m-%dT%H:%M:%S"))
    assert expected_ttl - 2 <= data["ttl"] <= expected_ttl

    listed = vault.sys.list_leases("database/creds/readonly")["data"]["keys"]
    assert lease_id.rsplit("/", 1)[1] in listed
    assert len(listed) == len(sandbox.secrets.leases.lookup_prefix("database/creds/readonly/"))


def test_renewing_through_hvac_grants_the_increment_asked_for_and_records_the_renewal(
    vault: hvac.Client, sandbox: Sandbox
) -> None:
    lease_id = _first_lease(sandbox, "database/creds/app")
    renewed = vault.sys.renew_lease(lease_id, increment=600)
    assert renewed["lease_id"] == lease_id
    assert (renewed["lease_duration"], renewed["renewable"]) == (600, True)
    assert not renewed["warnings"]
    looked_up = vault.sys.read_lease(lease_id)["data"]
    assert looked_up["last_renewal_time"] is not None
    assert 598 <= looked_up["ttl"] <= 600

    with pytest.raises(InvalidRequest, match="lease not found"):
        vault.sys.renew_lease("database/creds/app/no-such-lease")
    certificate = _first_lease(sandbox, "pki/issue/web-server")
    with pytest.raises(InvalidRequest, match="not renewable"):
        vault.sys.renew_lease(certificate, increment=60)


def test_revoking_one_lease_a_prefix_and_by_force_through_hvac(
    vault: hvac.Client, sandbox: Sandbox
) -> None:
    lease_id = _first_lease(sandbox, "broker/creds/producer")
    vault.sys.revoke_lease(lease_id)
    with pytest.raises(InvalidRequest, match="invalid lease"):
        vault.sys.read_lease(lease_id)

    assert vault.sys.list_leases("database/creds/reporting")["data"]["keys"]
    vault.sys.revoke_prefix("database/creds/reporting")
    with pytest.raises(InvalidPath):
        vault.sys.list_leases("database/creds/reporting")

    # database/creds/app holds leases whose engine fails: only force removes them all.
    counts_before = vault.adapter.get("/v1/sys/leases/count", params={"type": "irrevocable"})
    assert counts_before["data"]["counts"]["database/"] == 3
    with pytest.raises(InvalidRequest, match="connection refused"):
        vault.sys.revoke_prefix("database/creds/app")
    vault.sys.revoke_force("database/creds/app")
    with pytest.raises(InvalidPath):
        vault.sys.list_leases("database/creds/app")
    counts_after = vault.adapter.get("/v1/sys/leases/count", params={"type": "irrevocable"})
    assert counts_after["data"]["counts"]["database/"] == 1


def test_capabilities_of_a_token_on_several_paths(vault: hvac.Client, sandbox: Sandbox) -> None:
    reader = hvac.Client(url=sandbox.address, token="demo-db-reader-token", timeout=10)
    both = reader.sys.get_capabilities(["database/creds/readonly", "sys/seal"])["data"]
    # One list per path; the single-path "capabilities" key only when one path is asked.
    assert both == {"database/creds/readonly": ["read"], "sys/seal": ["deny"]}
    one = reader.sys.get_capabilities(["database/roles"])["data"]
    assert one == {"database/roles": ["list"], "capabilities": ["list"]}
    other = vault.sys.get_capabilities(["database/roles"], token="demo-db-reader-token")["data"]
    assert other == one
