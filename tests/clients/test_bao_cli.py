"""The ``bao`` command line, unmodified, against the sandbox (``BAO_ADDR``, ``BAO_TOKEN``).

The CLI's JSON output is checked against the spec and the sandbox's state;
where only the table form says something (a confirmation), its text is checked.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from cryptography import x509

from tests.clients._bao import BaoCLI
from toolkit.sandbox import Sandbox

# Runs the bao binary as a subprocess for every call: the slow suite (make test-slow).
pytestmark = pytest.mark.slow


def _live_lease(sandbox: Sandbox, prefix: str) -> str:
    with sandbox.secrets.lock:
        leases = sandbox.secrets.leases.leases_under(prefix)
        return sorted(lease.lease_id for lease in leases if not lease.irrevocable)[0]


def test_status_reads_the_seal_and_the_leader(bao: BaoCLI, sandbox: Sandbox) -> None:
    status = bao.json("status")
    assert (status["initialized"], status["sealed"]) == (True, False)
    assert (status["t"], status["n"], status["type"]) == (3, 5, "shamir")
    assert status["ha_enabled"] is False
    sandbox.secrets.seal.seal()
    sealed = bao.run("status", output="json")
    assert sealed.returncode == 2  # the CLI's exit code for a sealed server
    assert json.loads(sealed.stdout)["sealed"] is True
    refused = bao.run("read", "sys/leader")
    assert refused.returncode == 2 and "Code: 503" in refused.stderr


def test_policy_list_read_write_and_delete(bao: BaoCLI, sandbox: Sandbox) -> None:
    assert bao.json("policy", "list") == sorted(sandbox.secrets.policies.names("acl"))
    # The CLI prints the document without its trailing blank lines.
    auditors = sandbox.secrets.policies.get("acl", "auditors").text
    assert bao.ok("policy", "read", "auditors").rstrip() == auditors.rstrip()

    text = 'path "database/creds/app" {\n  capabilities = ["read"]\n}\n'
    assert "Success! Uploaded policy: app-reader" in bao.ok(
        "policy", "write", "app-reader", "-", stdin=text
    )
    assert bao.ok("policy", "read", "app-reader").rstrip() == text.rstrip()
    assert "app-reader" in bao.json("policy", "list")

    refused = bao.run("policy", "write", "broken", "-", stdin='path "x" { capabilities = ["fly"] }')
    assert refused.returncode == 2
    assert 'invalid capability "fly"' in refused.stderr
    assert "broken" not in bao.json("policy", "list")

    missing = bao.run("policy", "read", "missing")
    assert missing.returncode == 2 and "No policy named: missing" in missing.stderr

    bao.ok("policy", "delete", "app-reader")
    assert "app-reader" not in bao.json("policy", "list")


def test_lease_lookup_renew_and_revoke(bao: BaoCLI, sandbox: Sandbox) -> None:
    lease_id = _live_lease(sandbox, "database/creds/readonly")
    looked_up = bao.json("lease", "lookup", lease_id)["data"]
    assert set(looked_up) == {
        "id",
        "issue_time",
        "expire_time",
        "last_renewal_time",
        "renewable",
        "ttl",
    }
    assert (looked_up["id"], looked_up["renewable"], looked_up["last_renewal_time"]) == (
        lease_id,
        True,
        None,
    )

    renewed = bao.json("lease", "renew", "-increment=10m", lease_id)
    assert (renewed["lease_id"], renewed["lease_duration"], renewed["renewable"]) == (
        lease_id,
        600,
        True,
    )
    assert bao.json("lease", "lookup", lease_id)["data"]["last_renewal_time"] is not None

    assert "All revocation operations queued successfully!" in bao.ok("lease", "revoke", lease_id)
    gone = bao.run("lease", "lookup", lease_id)
    assert gone.returncode == 2 and "invalid lease" in gone.stderr
    assert sandbox.secrets.leases.get(lease_id) is None


def test_lease_revoke_by_prefix_and_by_force(bao: BaoCLI, sandbox: Sandbox) -> None:
    leases = sandbox.secrets.leases
    roles = bao.json("list", "sys/leases/lookup/database/creds")
    assert roles == leases.lookup_prefix("database/creds/")
    assert {"app/", "readonly/", "reporting/"} <= set(roles)
    bao.ok("lease", "revoke", "-prefix", "database/creds/reporting")
    assert leases.leases_under("database/creds/reporting") == []

    # Two leases under database/creds/app cannot be revoked by the engine.
    failed = bao.run("lease", "revoke", "-prefix", "database/creds/app")
    assert failed.returncode == 2 and "connection refused" in failed.stderr
    assert leases.leases_under("database/creds/app")
    forced = bao.ok("lease", "revoke", "-force", "-prefix", "database/creds/app")
    assert "Success! Force revoked any leases with prefix: database/creds/app" in forced
    assert leases.leases_under("database/creds/app") == []
    left = bao.json("list", "sys/leases/lookup/database/creds")
    assert left == [role for role in roles if role not in ("app/", "reporting/")]


def test_operator_rekey_status_progress_cancel_and_verified_completion(
    bao: BaoCLI, sandbox: Sandbox, unseal_shares: list[str]
) -> None:
    idle = bao.json("operator", "rekey", "-status")
    assert (idle["started"], idle["nonce"], idle["required"]) == (False, "", 3)

    started = bao.ok("operator", "rekey", "-init", "-key-shares=3", "-key-threshold=2", "-verify")
    assert "Progress                 0/3" in started
    status = bao.json("operator", "rekey", "-status")
    assert (status["started"], status["n"], status["t"], status["progress"]) == (True, 3, 2, 0)
    assert status["verification_required"] is True
    nonce = status["nonce"]

    one = bao.ok("operator", "rekey", f"-nonce={nonce}", unseal_shares[0])
    assert "Progress                 1/3" in one
    assert bao.json("operator", "rekey", "-status")["progress"] == 1
    assert "Success! Canceled rekeying" in bao.ok("operator", "rekey", "-cancel")
    assert bao.json("operator", "rekey", "-status")["started"] is False

    new = _verified_rotation(bao, "rekey", unseal_shares[1:4])
    bao.ok("operator", "seal")
    bao.ok("operator", "unseal", new[0])
    assert bao.json("operator", "unseal", new[2])["sealed"] is False


def test_with_the_legacy_endpoints_off_rekey_fails_and_rotate_keys_does_the_ceremony(
    bao: BaoCLI, sandbox: Sandbox, unseal_shares: list[str]
) -> None:
    # As OpenBao 2.5 and later ship: sys/rekey/* off, sys/rotate/root/* on.
    sandbox.secrets.legacy_rekey = False
    refused = bao.run("operator", "rekey", "-status")
    assert refused.returncode == 2
    assert "Code: 405" in refused.stderr and "unsupported operation" in refused.stderr
    new = _verified_rotation(bao, "rotate-keys", unseal_shares[2:5])
    sandbox.secrets.seal.seal()
    assert bao.json("operator", "unseal", new[1])["progress"] == 1
    assert bao.json("operator", "unseal", new[2])["sealed"] is False


def _verified_rotation(bao: BaoCLI, command: str, old: list[str]) -> list[str]:
    """``bao operator <command>`` from init to verified completion, 3 shares of 2; the new shares."""
    bao.ok("operator", command, "-init", "-key-shares=3", "-key-threshold=2", "-verify")
    nonce = bao.json("operator", command, "-status")["nonce"]
    bao.ok("operator", command, f"-nonce={nonce}", old[0])
    bao.ok("operator", command, f"-nonce={nonce}", old[1])
    done = bao.json("operator", command, f"-nonce={nonce}", old[2])
    assert done["complete"] is True and len(done["keys"]) == 3
    new: list[str] = done["keys"]

    verify = bao.json("operator", command, "-verify", "-status")
    assert verify["nonce"] == done["verification_nonce"]
    assert (verify["t"], verify["n"], verify["progress"]) == (2, 3, 0)
    bao.ok("operator", command, "-verify", f"-nonce={verify['nonce']}", new[0])
    assert bao.json("operator", command, "-verify", "-status")["progress"] == 1
    finished = bao.ok("operator", command, "-verify", f"-nonce={verify['nonce']}", new[1])
    assert "verification successful" in finished.lower()

    status = bao.json("status")
    assert (status["t"], status["n"]) == (2, 3)
    return new


def test_plugin_list_shows_the_catalog(bao: BaoCLI, sandbox: Sandbox) -> None:
    listed = bao.json("plugin", "list", "-detailed")["details"]
    rows = {(row["type"], row["name"], row["version"]) for row in listed}
    assert ("database", "snowflake-database-plugin", "v0.10.0") in rows
    assert ("secret", "venafi-pki-backend", "v0.14.0") in rows
    assert ("database", "postgresql-database-plugin", "v2.7.2+builtin.bao") in rows
    detailed = bao.ok("plugin", "list", "-detailed")
    assert "Deprecation Status" in detailed.splitlines()[0]
    database = bao.json("plugin", "list", "database")
    assert "snowflake-database-plugin" in database["database"]
    assert all(row["type"] == "database" for row in database["details"])
    table = bao.ok("plugin", "list", "secret")
    assert "venafi-pki-backend" in table and "postgresql-database-plugin" not in table


def test_read_and_list_of_system_paths_through_the_generic_commands(
    bao: BaoCLI, sandbox: Sandbox
) -> None:
    counts = bao.json("read", "sys/leases/count", "type=irrevocable")["data"]
    assert counts == {"counts": {"ad/": 1, "broker/": 2, "database/": 3}, "lease_count": 6}
    mounts = bao.json("read", "sys/mounts")["data"]
    assert {"database/", "pki/", "ad/", "broker/", "keymgmt/"} <= set(mounts)
    bao.ok("write", "sys/mounts/team-db", "type=database")
    assert bao.json("read", "sys/mounts/team-db")["data"]["type"] == "database"


def test_the_mount_a_path_falls_under_as_the_cli_detects_it(bao: BaoCLI, sandbox: Sandbox) -> None:
    found = bao.json("read", "sys/internal/ui/mounts/database/creds/readonly")["data"]
    mounts = bao.json("read", "sys/mounts")["data"]
    assert found == {**mounts["database/"], "path": "database/"}
    everything = bao.json("read", "sys/internal/ui/mounts")["data"]
    assert set(everything["secret"]) == set(mounts)
    assert "token/" in everything["auth"]

    nowhere = bao.run("read", "sys/internal/ui/mounts/nothing-here/x")
    assert nowhere.returncode == 2 and "permission denied" in nowhere.stderr

    # A token sees only the mounts its policies reach: db-readers reach database/,
    # and the default policy (OpenBao's) cubbyhole/, parts of sys/ and identity/ (its
    # rule for an OIDC provider's authorize endpoint).
    reader = replace(bao, token="demo-db-reader-token")
    seen = set(reader.json("read", "sys/internal/ui/mounts")["data"]["secret"])
    assert seen == {"database/", "cubbyhole/", "identity/", "sys/"}
    assert reader.json("read", "sys/internal/ui/mounts/database")["data"]["type"] == "database"
    hidden = reader.run("read", "sys/internal/ui/mounts/pki/issue/web-server")
    assert hidden.returncode == 2 and "permission denied" in hidden.stderr
    anonymous = replace(bao, token="")
    assert anonymous.run("read", "sys/internal/ui/mounts/database").returncode == 2


def test_generic_read_write_and_list_on_the_database_engine(bao: BaoCLI, sandbox: Sandbox) -> None:
    assert bao.json("list", "database/roles") == sorted(
        sandbox.secrets.mounts.engine("database").backend.roles
    )
    assert "Success! Enabled the database secrets engine at: team-db/" in bao.ok(
        "secrets", "enable", "-path=team-db", "database"
    )
    bao.ok(
        "write",
        "team-db/config/pg",
        "plugin_name=postgresql-database-plugin",
        "verify_connection=false",
        "allowed_roles=app,svc",  # the CLI sends a comma-separated string
        "connection_url=postgresql://{{username}}:{{password}}@pg.internal:5432/app",
        "username=admin",
        "password=root-secret",
    )
    config = bao.json("read", "team-db/config/pg")["data"]
    assert config["allowed_roles"] == ["app", "svc"]
    assert "password" not in config["connection_details"]

    bao.ok(
        "write",
        "team-db/roles/app",
        "db_name=pg",
        "creation_statements=CREATE ROLE \"{{name}}\" LOGIN PASSWORD '{{password}}';",
        "default_ttl=1h",
        "max_ttl=24h",
    )
    role = bao.json("read", "team-db/roles/app")["data"]
    assert (role["db_name"], role["default_ttl"], role["max_ttl"]) == ("pg", 3600, 86400)
    assert bao.json("list", "team-db/roles") == ["app"]

    creds = bao.json("read", "team-db/creds/app")
    assert creds["lease_id"].startswith("team-db/creds/app/")
    assert (creds["lease_duration"], creds["renewable"]) == (3600, True)
    backend = sandbox.secrets.mounts.engine("team-db").backend
    assert creds["data"]["username"] in backend.users("pg")

    bao.ok(
        "write", "team-db/static-roles/svc", "db_name=pg", "username=svc_user", "rotation_period=1h"
    )
    first = bao.json("read", "team-db/static-creds/svc")["data"]
    assert (first["username"], first["rotation_period"]) == ("svc_user", 3600)
    bao.ok("write", "-f", "team-db/rotate-role/svc")
    assert bao.json("read", "team-db/static-creds/svc")["data"]["password"] != first["password"]
    # A role the connection does not allow gives no credentials, however its write went.
    bao.run("write", "team-db/roles/other", "db_name=pg", "creation_statements=x")
    refused = bao.run("read", "team-db/creds/other")
    assert refused.returncode == 2 and "Code: 400" in refused.stderr


def test_generic_writes_on_the_certificate_and_directory_engines(
    bao: BaoCLI, sandbox: Sandbox
) -> None:
    issued = bao.json("write", "pki/issue/web-server", "common_name=www.example.com", "ttl=1h")
    data = issued["data"]
    leaf = x509.load_pem_x509_certificate(data["certificate"].encode())
    leaf.verify_directly_issued_by(x509.load_pem_x509_certificate(data["issuing_ca"].encode()))
    common_names = leaf.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    assert [n.value for n in common_names] == ["www.example.com"]
    assert "web-server" in bao.json("list", "pki/roles")

    lent = bao.json("write", "-f", "ad/library/break-glass/check-out")
    account = lent["data"]["service_account_name"]
    assert lent["lease_id"].startswith("ad/library/break-glass/check-out/")
    status = bao.json("read", "ad/library/break-glass/status")["data"]
    assert status[account]["available"] is False
    assert bao.json("write", "-f", "ad/library/break-glass/check-in")["data"]["check_ins"] == [
        account
    ]
    assert bao.json("read", "ad/library/break-glass/status")["data"] == {
        account: {"available": True}
    }


def test_token_capabilities_for_the_caller_and_for_another_token(
    bao: BaoCLI, sandbox: Sandbox
) -> None:
    assert bao.json("token", "capabilities", "database/creds/readonly") == ["root"]
    reader = replace(bao, token="demo-db-reader-token")
    assert reader.json("token", "capabilities", "database/creds/readonly") == ["read"]
    assert reader.json("token", "capabilities", "database/roles") == ["list"]
    assert reader.json("token", "capabilities", "pki/issue/web-server") == ["deny"]
    # Another token's, asked by root through sys/capabilities.
    assert bao.json("token", "capabilities", "demo-auditor-token", "sys/policies/acl/x") == [
        "list",
        "read",
    ]
    unknown = bao.run("token", "capabilities", "no-such-token", "sys/policies/acl/x")
    assert unknown.returncode == 2 and "invalid token" in unknown.stderr


def test_lease_tidy_through_the_generic_write(bao: BaoCLI) -> None:
    tidied = bao.run("write", "-f", "sys/leases/tidy")
    assert tidied.returncode == 0, tidied.stderr
    assert "Tidy operation successfully started" in tidied.stdout + tidied.stderr
