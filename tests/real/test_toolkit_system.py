"""The toolkit's system calls and views on a real OpenBao: ACL policies, password policies,
the plugin catalog, tokens, mounts and the seal status."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest

from tests.servers.openbao import OpenBao
from toolkit import APIError, InputError, Sensitive
from toolkit.secrets import SecretsClient

_names = itertools.count()

PASSWORD_POLICY = """
length = 24
rule "charset" {
  charset = "abcdefghijklmnopqrstuvwxyz"
  min-chars = 2
}
rule "charset" {
  charset = "0123456789"
  min-chars = 3
}
rule "charset" {
  charset = "!@#$%"
  min-chars = 1
}
"""

ACL_POLICY = """
path "secret/data/team-a/*" {
  capabilities = ["read", "list"]
}
path "sys/leases/lookup" {
  capabilities = ["update"]
}
"""


def unique(stem: str) -> str:
    return f"{stem}-{next(_names)}"


# -- password policies ----------------------------------------------------------------
def test_a_password_policy_is_written_read_generated_from_and_deleted(
    bao_client: SecretsClient,
) -> None:
    name = unique("pw")
    bao_client.password_policies.write(name, PASSWORD_POLICY)
    assert name in bao_client.password_policies.list_policies()
    assert "min-chars = 3" in bao_client.password_policies.read(name)["policy"]
    password = bao_client.password_policies.generate(name)
    assert isinstance(password, Sensitive) and password.reveal() not in repr(password)
    text = password.reveal()
    assert len(text) == 24 and sum(c.isdigit() for c in text) >= 3

    frame = bao_client.password_policies.test_policy(name, samples=25)
    assert len(frame) == 25 and frame.index.name == "sample"
    assert str(frame["length"].dtype) == "Int64" and str(frame["digit"].dtype) == "boolean"
    summary = frame.attrs["summary"]
    assert (summary["min_length"], summary["max_length"]) == (24, 24)
    assert summary["digit"] == summary["lower"] == summary["symbol"] == 1.0
    assert summary["upper"] == 0.0

    bao_client.password_policies.delete(name)
    with pytest.raises(APIError) as missing:
        bao_client.password_policies.read(name)
    assert missing.value.status == 404


def test_the_real_server_refuses_an_unsatisfiable_password_policy_and_keeps_nothing(
    bao_client: SecretsClient,
) -> None:
    name = unique("pw-bad")
    impossible = 'length = 4\nrule "charset" {\n  charset = "abc"\n  min-chars = 5\n}\n'
    with pytest.raises(APIError) as refused:
        bao_client.password_policies.write(name, impossible)
    assert refused.value.status == 400
    assert name not in bao_client.password_policies.list_policies()
    with pytest.raises(APIError) as missing:
        bao_client.password_policies.generate(name)
    assert missing.value.status == 404 and "policy does not exist" in missing.value.message


# -- ACL policies -----------------------------------------------------------------------
def test_an_acl_policy_is_written_read_listed_in_the_frame_and_enforced(
    bao: OpenBao, bao_client: SecretsClient
) -> None:
    name = unique("team-a")
    bao_client.policies.write("acl", name, ACL_POLICY)
    assert name in bao_client.policies.list_policies("acl")
    record = bao_client.policies.read("acl", name)
    assert record["name"] == name and record["policy"].strip() == ACL_POLICY.strip()

    frame = bao_client.policies.policies_frame()
    # The real server has no RGP / EGP: those kinds contribute no rows.
    assert set(frame["kind"]) == {"acl"}
    row = frame[frame["name"] == name].iloc[0]
    assert row["policy_lines"] == len(ACL_POLICY.splitlines())  # the text as written
    assert {"default", "root"} <= set(frame["name"])

    token = bao_client.tokens.create(policies=[name], ttl="10m")
    assert isinstance(token["client_token"], Sensitive)
    with SecretsClient(bao.address, token["client_token"].reveal()) as limited:
        assert limited.tokens.lookup_self()["policies"] == sorted(["default", name])
        with pytest.raises(APIError) as denied:
            limited.policies.list_policies("acl")
        assert denied.value.status == 403 and "permission denied" in denied.value.message

    bao_client.policies.delete("acl", name)
    assert name not in bao_client.policies.list_policies("acl")


def test_the_toolkit_refuses_bad_policy_input_before_sending(bao_client: SecretsClient) -> None:
    with pytest.raises(InputError):
        bao_client.policies.write("acl", unique("empty"), "   ")
    with pytest.raises(InputError):
        bao_client.policies.write("acl", unique("x"), ACL_POLICY, enforcement_level="advisory")


# -- plugin catalog ---------------------------------------------------------------------
def plugin_file(bao: OpenBao, name: str) -> tuple[str, str]:
    """A file in the server's plugin directory; its command name and real sha256."""
    path: Path = bao.plugin_directory / name
    path.write_text(f"#!/bin/sh\n# {name}\nexit 1\n")
    path.chmod(0o755)
    return name, hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_plugin_is_registered_with_its_real_sha256_read_listed_and_deleted(
    bao: OpenBao, bao_client: SecretsClient
) -> None:
    name = unique("toolkit-plugin")
    command, sha256 = plugin_file(bao, name)
    plugins = bao_client.plugins
    plugins.register(
        "secret",
        name,
        sha256=sha256,
        command=command,
        args=["-tls"],
        env={"MODE": "x"},
        version="v1.2.3",
    )
    entry = plugins.read("secret", name, version="v1.2.3")
    assert (entry["name"], entry["sha256"], entry["command"]) == (name, sha256, command)
    assert entry["args"] == ["-tls"] and entry["builtin"] is False
    assert entry["version"] == "v1.2.3"
    assert name in plugins.list_plugins("secret")

    catalog = plugins.catalog()
    assert catalog.index.names == ["type", "name", "version"]
    assert catalog.loc[("secret", name, "v1.2.3"), "builtin"] == False  # noqa: E712 - numpy bool
    builtin = catalog.loc[("database", "postgresql-database-plugin")]
    assert builtin["builtin"].all()
    assert str(catalog["builtin"].dtype) == "boolean"

    plugins.delete("secret", name, version="v1.2.3")
    assert name not in plugins.list_plugins("secret")
    with pytest.raises(APIError) as gone:
        plugins.read("secret", name, version="v1.2.3")
    assert gone.value.status == 404


def test_the_toolkit_checks_a_plugins_sha256_before_sending(bao_client: SecretsClient) -> None:
    with pytest.raises(InputError) as refused:
        bao_client.plugins.register("secret", unique("p"), sha256="abc", command="p")
    assert "sha256" in str(refused.value)


# -- tokens, mounts, seal -------------------------------------------------------------------
def test_a_token_looks_itself_up_and_revokes_itself(
    bao: OpenBao, bao_client: SecretsClient
) -> None:
    token = bao_client.tokens.create(ttl="5m", display_name="toolkit", meta={"team": "a"})
    assert token["lease_duration"] == 300 and token["renewable"] is True
    with SecretsClient(bao.address, token["client_token"].reveal()) as own:
        me = own.tokens.lookup_self()
        assert isinstance(me["id"], Sensitive) and me["meta"] == {"team": "a"}
        assert me["display_name"] == "token-toolkit"
        own.tokens.revoke_self()
        with pytest.raises(APIError) as revoked:
            own.tokens.lookup_self()
        assert revoked.value.status == 403


def test_an_engine_is_mounted_tuned_listed_and_unmounted(bao_client: SecretsClient) -> None:
    path = unique("kv-toolkit")
    bao_client.enable_engine(path, "kv", description="toolkit test", max_lease_ttl="2h")
    mounts = bao_client.mounts()
    assert mounts[f"{path}/"]["type"] == "kv"
    assert mounts[f"{path}/"]["config"]["max_lease_ttl"] == 7200
    assert (
        f"{path}/" in bao_client.leases.list_mounts()
        and "auth/token/" in bao_client.leases.list_mounts()
    )
    bao_client.tune_mount(path, default_lease_ttl="30m")
    assert bao_client.mounts()[f"{path}/"]["config"]["default_lease_ttl"] == 1800
    bao_client.disable_engine(path)
    assert f"{path}/" not in bao_client.mounts()


def test_the_seal_status_of_the_dev_server(bao_client: SecretsClient) -> None:
    status = bao_client.seal.status()
    assert (status["sealed"], status["t"], status["n"]) == (False, 1, 1)
