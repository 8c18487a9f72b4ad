"""The mount table as ``sys/mounts`` and ``sys/auth`` show it, and the client reading it."""

from __future__ import annotations

import httpx

from toolkit import SecretsClient


def test_sys_mounts_lists_the_system_and_default_engine_mounts(demo_sandbox):
    answer = httpx.get(
        f"{demo_sandbox.address}/v1/sys/mounts", headers={"X-Vault-Token": demo_sandbox.token}
    ).json()
    mounts = answer["data"]
    assert {p: m["type"] for p, m in mounts.items()} == {
        "ad/": "ad",
        "broker/": "rabbitmq",
        "cubbyhole/": "cubbyhole",
        "database/": "database",
        "identity/": "identity",
        "keymgmt/": "keymgmt",
        "pki/": "pki",
        "sys/": "system",
    }
    # As on the real server, sys/ answers carry the data at the top level too.
    assert answer["database/"]["accessor"] == mounts["database/"]["accessor"]
    assert set(mounts["pki/"]["config"]) >= {"default_lease_ttl", "max_lease_ttl"}


def test_one_mount_can_be_read_and_an_unknown_one_is_refused(demo_sandbox):
    headers = {"X-Vault-Token": demo_sandbox.token}
    one = httpx.get(f"{demo_sandbox.address}/v1/sys/mounts/database", headers=headers)
    assert one.status_code == 200 and one.json()["data"]["type"] == "database"
    missing = httpx.get(f"{demo_sandbox.address}/v1/sys/mounts/nothing", headers=headers)
    assert missing.status_code == 400
    assert "no matching mount" in missing.json()["errors"][0]


def test_reading_mounts_needs_a_token_with_read_on_sys_mounts(demo_sandbox):
    denied = httpx.get(
        f"{demo_sandbox.address}/v1/sys/mounts", headers={"X-Vault-Token": "demo-db-reader-token"}
    )
    assert denied.status_code == 403
    assert httpx.get(f"{demo_sandbox.address}/v1/sys/mounts").status_code == 403


def test_the_client_reads_engine_and_auth_mounts(demo_sandbox):
    client = SecretsClient(demo_sandbox.address, demo_sandbox.token)
    assert set(client.mounts()) >= {"database/", "pki/", "sys/"}
    assert "auth/token/" in client.leases.mounts()
