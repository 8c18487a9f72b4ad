"""hvac, unmodified, against the sandbox's database, certificate and directory engines.

Values hvac reads back are checked against the spec (part 4.7, 4.8, 4.10) and
against what the sandbox's simulated database and directory saw.
"""

from __future__ import annotations

import contextlib
from datetime import timedelta

import hvac
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hvac.exceptions import Forbidden, InvalidPath, InvalidRequest

from tests.sandbox.secrets.test_ad import CONFIG_FIELDS
from toolkit.sandbox import Sandbox

# -- database (spec 4.8) ----------------------------------------------------------


def test_database_connection_roles_and_dynamic_credentials_on_a_new_mount(
    vault: hvac.Client, sandbox: Sandbox
) -> None:
    db = vault.secrets.database
    vault.sys.enable_secrets_engine("database", path="team-db")
    db.configure(
        "orders",
        "postgresql-database-plugin",
        verify_connection=False,
        allowed_roles=["app", "svc-*"],
        connection_url="postgresql://{{username}}:{{password}}@orders.internal:5432/orders",
        username="admin",
        password="root-secret",
        mount_point="team-db",
    )
    connection = db.read_connection("orders", mount_point="team-db")["data"]
    assert connection["plugin_name"] == "postgresql-database-plugin"
    assert connection["allowed_roles"] == ["app", "svc-*"]
    assert connection["connection_details"] == {
        "connection_url": "postgresql://{{username}}:{{password}}@orders.internal:5432/orders",
        "username": "admin",
    }
    assert db.list_connections(mount_point="team-db")["data"]["keys"] == ["orders"]

    create = ["CREATE ROLE \"{{name}}\" WITH LOGIN PASSWORD '{{password}}';"]
    revoke = ['DROP ROLE "{{name}}";']
    db.create_role(
        "app",
        "orders",
        create,
        default_ttl="1h",
        max_ttl="4h",
        revocation_statements=revoke,
        mount_point="team-db",
    )
    role = db.read_role("app", mount_point="team-db")["data"]
    assert (role["db_name"], role["default_ttl"], role["max_ttl"]) == ("orders", 3600, 14400)
    assert (role["creation_statements"], role["revocation_statements"]) == (create, revoke)
    assert db.list_roles(mount_point="team-db")["data"]["keys"] == ["app"]

    # A role the connection does not allow gives no credentials. (Whether its
    # write is refused, as the sandbox does now, or stored, as OpenBao does, is
    # left to the differential tests.)
    backend = sandbox.secrets.mounts.engine("team-db").backend
    users = backend.users("orders")
    with contextlib.suppress(InvalidRequest):
        db.create_role("reports", "orders", create, mount_point="team-db")
    with pytest.raises(InvalidRequest):
        db.generate_credentials("reports", mount_point="team-db")
    assert backend.users("orders") == users

    creds = db.generate_credentials("app", mount_point="team-db")
    assert creds["lease_id"].startswith("team-db/creds/app/")
    assert (creds["lease_duration"], creds["renewable"]) == (3600, True)
    username = creds["data"]["username"]
    assert username in backend.users("orders")
    assert vault.sys.read_lease(creds["lease_id"])["data"]["ttl"] in (3599, 3600)

    # Revoking the lease runs the revocation statements: the user is gone.
    vault.sys.revoke_lease(creds["lease_id"])
    assert username not in backend.users("orders")
    dropped = [s for s in backend.statements("orders") if s.operation == "revoke"]
    assert [s.username for s in dropped] == [username]

    db.delete_role("app", mount_point="team-db")
    with pytest.raises(InvalidPath):
        db.read_role("app", mount_point="team-db")


def test_database_static_role_rotation_changes_the_password_and_resets_the_ttl(
    vault: hvac.Client, sandbox: Sandbox
) -> None:
    db = vault.secrets.database
    name = db.list_static_roles()["data"]["keys"][0]
    role = db.read_static_role(name)["data"]
    assert set(role) >= {"db_name", "username", "rotation_statements", "rotation_period"}
    before = db.get_static_credentials(name)["data"]
    assert set(before) == {
        "username",
        "password",
        "last_service_rotation",
        "rotation_period",
        "ttl",
    }
    assert (before["username"], before["rotation_period"]) == (
        role["username"],
        role["rotation_period"],
    )
    assert 0 < before["ttl"] <= role["rotation_period"]

    db.rotate_static_role_credentials(name)
    after = db.get_static_credentials(name)["data"]
    assert after["username"] == before["username"]
    assert after["password"] != before["password"]
    assert after["ttl"] in (role["rotation_period"] - 1, role["rotation_period"])
    assert after["last_service_rotation"] > before["last_service_rotation"]

    with pytest.raises(InvalidRequest, match="rotation_period"):
        db.create_static_role(
            "too-fast",
            role["db_name"],
            username="someone",
            rotation_statements=[],
            rotation_period=2,
        )


def test_database_writes_ask_for_create_or_update_as_the_spec_says(
    vault: hvac.Client, sandbox: Sandbox
) -> None:
    vault.sys.create_or_update_acl_policy(
        "role-updater", 'path "database/roles/*" { capabilities = ["update", "read"] }'
    )
    token = vault.auth.token.create(policies=["role-updater"], ttl="10m")["auth"]["client_token"]
    updater = hvac.Client(url=sandbox.address, token=token, timeout=10)
    existing = vault.secrets.database.read_role("readonly")["data"]
    # Updating an existing role needs update: granted.
    updater.secrets.database.create_role(
        "readonly", existing["db_name"], existing["creation_statements"], default_ttl="30m"
    )
    assert vault.secrets.database.read_role("readonly")["data"]["default_ttl"] == 1800
    # Creating a new one needs create: refused, and nothing is written.
    with pytest.raises(Forbidden):
        updater.secrets.database.create_role(
            "orders-new", existing["db_name"], existing["creation_statements"]
        )
    assert "orders-new" not in vault.secrets.database.list_roles()["data"]["keys"]


# -- certificates (spec 4.10) -----------------------------------------------------


def _chain_verifies(leaf_pem: str, issuer_pem: str) -> x509.Certificate:
    leaf = x509.load_pem_x509_certificate(leaf_pem.encode())
    issuer = x509.load_pem_x509_certificate(issuer_pem.encode())
    leaf.verify_directly_issued_by(issuer)
    return leaf


def test_pki_issue_through_a_role_gives_a_certificate_the_issuing_ca_signed(
    vault: hvac.Client, sandbox: Sandbox
) -> None:
    pki = vault.secrets.pki
    roles = pki.list_roles()["data"]["keys"]
    assert "web-server" in roles
    role = pki.read_role("web-server")["data"]
    domain = role["allowed_domains"][0]

    issued = pki.generate_certificate(
        "web-server", f"shop.{domain}", extra_params={"ttl": "2h", "alt_names": f"api.{domain}"}
    )
    data = issued["data"]
    assert set(data) >= {
        "certificate",
        "issuing_ca",
        "ca_chain",
        "private_key",
        "private_key_type",
        "serial_number",
    }
    leaf = _chain_verifies(data["certificate"], data["issuing_ca"])
    assert leaf.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == f"shop.{domain}"
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) == {f"shop.{domain}", f"api.{domain}"}
    assert int(data["serial_number"].replace(":", ""), 16) == leaf.serial_number
    lifetime = leaf.not_valid_after_utc - sandbox.clock.now()
    assert timedelta(hours=2) - timedelta(minutes=1) < lifetime <= timedelta(hours=2)
    assert data["ca_chain"][0] == data["issuing_ca"]

    # A name outside the role denies the whole request.
    with pytest.raises(InvalidRequest):
        pki.generate_certificate(
            "web-server", f"shop.{domain}", extra_params={"alt_names": "evil.invalid"}
        )


def test_pki_sign_of_a_csr_keeps_the_requesters_key(vault: hvac.Client) -> None:
    pki = vault.secrets.pki
    domain = pki.read_role("web-server")["data"]["allowed_domains"][0]
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"edge.{domain}")]))
        .sign(key, hashes.SHA256())
    )
    pem = csr.public_bytes(serialization.Encoding.PEM)
    signed = pki.sign_certificate("web-server", pem.decode(), f"edge.{domain}")["data"]
    assert "private_key" not in signed
    leaf = _chain_verifies(signed["certificate"], signed["issuing_ca"])
    assert leaf.public_key().public_numbers() == key.public_key().public_numbers()


# -- directory (spec 4.7) ---------------------------------------------------------


def test_directory_config_roles_and_credentials_through_hvacs_ad_class(
    vault: hvac.Client, sandbox: Sandbox
) -> None:
    ad = vault.secrets.activedirectory
    config = ad.read_config()["data"]
    assert set(config) == CONFIG_FIELDS  # spec 4.7: what GET config returns
    assert "bindpass" not in config

    roles = ad.list_roles()["data"]["keys"]
    assert roles == sorted(roles) and "backup" in roles
    role = ad.read_role("backup")["data"]
    assert set(role) == {
        "service_account_name",
        "ttl",
        "last_service_rotation",
        "password_last_set",
    }
    creds = ad.generate_credentials("backup")["data"]
    assert set(creds) == {"current_password", "last_password", "username"}
    assert creds["username"] == role["service_account_name"]

    with pytest.raises(InvalidRequest, match="does not exist"):
        ad.create_or_update_role("ghost", service_account_name="ghost@corp.example")
    assert "ghost" not in ad.list_roles()["data"]["keys"]
    ad.delete_role("backup")
    assert "backup" not in ad.list_roles()["data"]["keys"]


def test_directory_library_check_out_and_check_in_through_hvacs_generic_calls(
    vault: hvac.Client,
) -> None:
    assert vault.list("ad/library")["data"]["keys"] == [
        "break-glass",
        "dba-oncall",
        "release-engineers",
    ]
    library = vault.read("ad/library/break-glass")["data"]
    account = library["service_account_names"][0]
    assert vault.read("ad/library/break-glass/status")["data"] == {account: {"available": True}}

    lent = vault.write_data("ad/library/break-glass/check-out", data={"ttl": "10h"})
    assert lent["data"]["service_account_name"] == account
    assert lent["lease_id"].startswith("ad/library/break-glass/check-out/")
    # Capped at the set's ttl.
    assert (lent["lease_duration"], lent["renewable"]) == (library["ttl"], True)
    status = vault.read("ad/library/break-glass/status")["data"][account]
    assert status["available"] is False and "borrower_client_token" in status
    with pytest.raises(InvalidRequest):
        vault.write_data("ad/library/break-glass/check-out", data={})

    back = vault.write_data("ad/library/break-glass/check-in", data={})
    assert back["data"]["check_ins"] == [account]
    again = vault.write_data("ad/library/break-glass/check-in", data={})
    assert again["data"]["check_ins"] == []
