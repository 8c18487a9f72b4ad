"""Engine findings: plugins and the mounts that run them, risky database connections,
keys overdue a rotation. Each flagged where the problem is and quiet where it is not."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from toolkit import InputError
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient

SHA = "ab" * 32


# -- plugins --------------------------------------------------------------------------
def test_an_unused_external_plugin_is_flagged_low_and_shows_its_sha256_and_command(
    client: SecretsClient,
) -> None:
    client.plugins.register("secret", "acme-kv", sha256=SHA, command="acme-kv --serve")
    inventory = client.plugins.inventory()
    row = inventory[inventory["name"] == "acme-kv"].iloc[0]
    assert (row["sha256"], row["command"], row["mounts"]) == (SHA, "acme-kv --serve", [])
    assert not inventory["builtin"].any()

    found = client.plugins.findings()
    ours = found[found["object"] == "secret/acme-kv"]
    assert list(ours["severity"].astype(str)) == ["low"]
    assert "run by no mount" in ours["reason"].iloc[0]


def test_an_external_plugin_that_shadows_a_builtin_names_the_mounts_it_runs(
    client: SecretsClient,
) -> None:
    # Unversioned, it takes the place of the built-in of its name on every mount
    # that pins no version: the database/ mount now runs it.
    client.plugins.register("secret", "database", sha256=SHA, command="custom-db")
    inventory = client.plugins.inventory()
    row = inventory[(inventory["name"] == "database") & (inventory["type"] == "secret")].iloc[0]
    assert "database/" in row["mounts"]
    found = client.plugins.findings()
    ours = found[found["object"] == "secret/database"]
    assert list(ours["severity"].astype(str)) == ["medium"]
    assert "database/" in ours["reason"].iloc[0] and SHA[:12] in ours["reason"].iloc[0]


def test_a_catalog_of_builtins_only_gives_no_plugin_findings(empty_sandbox: Sandbox) -> None:
    with SecretsClient(empty_sandbox.address, empty_sandbox.token) as client:
        assert client.plugins.inventory().empty
        assert client.plugins.findings().empty


# -- database connections ---------------------------------------------------------------
def test_a_connection_open_to_every_role_and_unverified_is_flagged_and_a_tight_one_is_not(
    client: SecretsClient,
) -> None:
    client.database.configure_connection(
        "loose",
        "mysql-database-plugin",
        connection_url="{{username}}:{{password}}@tcp(db.internal:3306)/",
        username="svc",
        password="not-a-real-password",
        allowed_roles=["*"],
        verify_connection=False,
    )
    found = client.database.findings()
    loose = found[found["object"] == "database/config/loose"]
    assert list(loose["severity"].astype(str)) == ["high", "medium"]
    assert loose["reason"].str.contains("allowed_roles is \\*").iloc[0]
    # The demo's connections that name their roles and were verified raise nothing.
    tight = client.database.connections_frame()
    named = [
        n for n, r in tight.iterrows() if "*" not in r["allowed_roles"] and r["verify_connection"]
    ]
    assert named and not found["object"].isin([f"database/config/{n}" for n in named]).any()
    assert "not-a-real-password" not in found.to_csv()


# -- keys -------------------------------------------------------------------------------
def test_keys_overdue_a_rotation_are_flagged_and_disabled_versions_show_as_disabled(
    client: SecretsClient,
) -> None:
    client.keymgmt.create_key("fresh-key", "aes256-gcm96")
    now = client.http.server_now()
    audit = client.keymgmt.rotation_audit(timedelta(days=60), now=now)

    fresh = audit.loc["fresh-key"]
    assert list(fresh["state"]) == ["enabled"] and not fresh["overdue"].any()
    disabled = audit[audit["state"] == "disabled"]
    assert not disabled.empty and not disabled["overdue"].any()
    for key, version in disabled.index:
        assert version < client.keymgmt.read_key(str(key))["min_enabled_version"]
    assert (audit["overdue"] == (audit["latest"] & (audit["age"] > timedelta(days=60)))).all()

    found = client.keymgmt.findings(60, now=now)
    overdue = {f"keymgmt/key/{k}" for (k, _v) in audit.index[audit["overdue"]]}
    assert set(found["object"]) == overdue and overdue
    assert "keymgmt/key/fresh-key" not in set(found["object"])
    # Under a period no key exceeds, nothing is overdue.
    assert client.keymgmt.findings(timedelta(days=10_000), now=now).empty
    with pytest.raises(InputError, match="rotation period must be positive"):
        client.keymgmt.rotation_audit(0)
    assert isinstance(audit.index, pd.MultiIndex)
