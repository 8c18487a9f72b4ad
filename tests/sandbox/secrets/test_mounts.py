"""The mount table as ``sys/mounts`` and ``sys/auth`` show it, and the client reading it."""

from __future__ import annotations

import httpx

from toolkit import SecretsClient
from toolkit.sandbox.secrets.engines import ENGINES
from toolkit.secrets.engines import ENGINE_AREAS


def test_sys_mounts_lists_the_system_and_default_engine_mounts(demo_sandbox):
    answer = httpx.get(
        f"{demo_sandbox.address}/v1/sys/mounts", headers={"X-Vault-Token": demo_sandbox.token}
    ).json()
    mounts = answer["data"]
    # The engines' mounts are the registries' (the client's names, the sandbox's types).
    engines = {f"{m}/": ENGINES.default_mounts()[f"{m}/"][0] for m in ENGINE_AREAS}
    system = {"cubbyhole/": "cubbyhole", "identity/": "identity", "sys/": "system"}
    assert {p: m["type"] for p, m in mounts.items()} == system | engines
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
    assert "auth/token/" in client.leases.list_mounts()


def test_an_engine_can_be_mounted_elsewhere_and_unmounted(api):
    assert api.post("/sys/mounts/databases/eu", json={"type": "database"}).status_code == 204
    mounts = api.get("/sys/mounts").json()["data"]
    assert mounts["databases/eu/"]["type"] == "database"
    # The engine answers there: an unknown path under it is the engine's 404, not the router's.
    assert "unsupported path" in api.get("/databases/eu/nothing-here").json()["errors"][0]
    assert api.delete("/sys/mounts/databases/eu").status_code == 204
    assert "databases/eu/" not in api.get("/sys/mounts").json()["data"]
    gone = api.get("/databases/eu/nothing-here")
    assert gone.status_code == 404 and "no handler for route" in gone.json()["errors"][0]


def test_mounting_refuses_taken_reserved_and_unknown(api):
    taken = api.post("/sys/mounts/database", json={"type": "pki"})
    assert taken.status_code == 400 and "already in use at database/" in taken.json()["errors"][0]
    nested = api.post("/sys/mounts/pki/inner", json={"type": "pki"})
    assert nested.status_code == 400 and "already in use" in nested.json()["errors"][0]
    reserved = api.post("/sys/mounts/sys/mine", json={"type": "pki"})
    assert reserved.status_code == 400 and "reserved" in reserved.json()["errors"][0]
    unknown = api.post("/sys/mounts/elsewhere", json={"type": "no-such-engine"})
    assert unknown.status_code == 400
    assert unknown.json()["errors"] == ["plugin not found in the catalog: no-such-engine"]
    missing = api.post("/sys/mounts/elsewhere", json={})
    assert missing.status_code == 400 and "type" in missing.json()["errors"][0]
    assert "elsewhere/" not in api.get("/sys/mounts").json()["data"]


def test_tune_sets_the_lease_ttls_of_a_mount(api):
    assert api.post("/sys/mounts/pki/tune", json={"max_lease_ttl": "2h"}).status_code == 204
    tuned = api.get("/sys/mounts/pki/tune").json()["data"]
    assert (tuned["default_lease_ttl"], tuned["max_lease_ttl"]) == (7200, 7200)
    bad = api.post("/sys/mounts/pki/tune", json={"default_lease_ttl": "3h"})
    assert bad.status_code == 400 and "default_lease_ttl" in bad.json()["errors"][0]
    assert api.post("/sys/mounts/pki/tune", json={"max_lease_ttl": "soon"}).status_code == 400


def test_wrong_method_on_a_system_path_is_still_405(api):
    assert api.request("PATCH", "/sys/seal-status").status_code == 405
    assert api.post("/sys/mounts", json={}).status_code == 405


def test_unmounting_revokes_the_leases_under_the_mount(api):
    before = api.request("LIST", "/sys/leases/lookup/broker/creds").json()["data"]["keys"]
    assert before
    # The demo broker holds leases the engine cannot revoke: as on the real
    # server, the unmount fails and the mount stays until they are forced out.
    refused = api.delete("/sys/mounts/broker")
    assert refused.status_code == 400 and "failed to revoke" in refused.json()["errors"][0]
    assert "broker/" in api.get("/sys/mounts").json()["data"]
    assert api.put("/sys/leases/revoke-force/broker/creds").status_code == 204
    assert api.delete("/sys/mounts/broker").status_code == 204
    assert "broker/" not in api.get("/sys/mounts").json()["data"]
    after = api.request("LIST", "/sys/leases/lookup/broker/creds")
    assert after.status_code == 404


def test_the_client_enables_tunes_and_disables_engines(sandbox):
    client = SecretsClient(sandbox.address, sandbox.token)
    client.enable_engine("certs/internal", "pki", description="internal CA", max_lease_ttl="24h")
    assert client.mounts()["certs/internal/"]["description"] == "internal CA"
    client.tune_mount("certs/internal", default_lease_ttl="1h")
    assert client.pki.at("certs/internal").mount == "certs/internal"
    client.disable_engine("certs/internal")
    assert "certs/internal/" not in client.mounts()


def test_a_list_with_a_trailing_slash_is_the_same_list(demo_api):
    plain = demo_api.request("LIST", "/keymgmt/key")
    slashed = demo_api.request("LIST", "/keymgmt/key/")
    assert plain.status_code == slashed.status_code == 200
    assert plain.json()["data"] == slashed.json()["data"]
