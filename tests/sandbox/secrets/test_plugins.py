"""The plugin catalog: the state class, and sys/plugins/catalog over real HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.sandbox.secrets._access_api import issue, put_acl
from toolkit.sandbox.secrets.engines import ENGINES
from toolkit.sandbox.secrets.errors import SecretsError
from toolkit.sandbox.secrets.http.sys_plugins import entry_document
from toolkit.sandbox.secrets.plugins import BUILTIN_VERSION, PluginCatalog

SHA = "a" * 64


def body(**overrides: Any) -> dict[str, Any]:
    return {"sha256": SHA, "command": "my-plugin", **overrides}


# -- the state class -----------------------------------------------------------------


def test_the_builtin_catalog_holds_the_real_servers_plugins() -> None:
    catalog = PluginCatalog(ENGINES.catalog_names())
    assert {"approle", "cert", "jwt", "kerberos", "ldap", "oidc", "userpass"} <= set(
        catalog.names("auth")
    )
    assert {
        "cassandra-database-plugin",
        "mysql-database-plugin",
        "postgresql-database-plugin",
        "redis-database-plugin",
    } <= set(catalog.names("database"))
    assert {"database", "kv", "ldap", "pki", "rabbitmq", "ssh", "totp", "transit"} <= set(
        catalog.names("secret")
    )


def test_builtins_carry_the_builtin_version_and_a_deprecation_status() -> None:
    entry = PluginCatalog().get("secret", "kv")
    assert entry is not None and entry.builtin
    assert entry.version == BUILTIN_VERSION and "+builtin" in entry.version
    statuses = {e.deprecation_status for e in PluginCatalog().entries()}
    assert statuses == {"supported", "deprecated"}


def test_a_plain_version_is_stored_with_a_leading_v() -> None:
    catalog = PluginCatalog()
    catalog.register("secret", "mine", sha256=SHA, command="mine", version="1.2.3")
    assert catalog.get("secret", "mine", "v1.2.3") is not None


def test_env_values_never_show_in_a_repr_or_a_read() -> None:
    catalog = PluginCatalog()
    entry = catalog.register(
        "database", "mine", sha256=SHA, command="mine", env=["API_KEY=hunter2"]
    )
    assert "hunter2" not in repr(entry) and "hunter2" not in str(entry_document(entry))


def test_a_bad_env_entry_is_refused_without_echoing_it() -> None:
    with pytest.raises(SecretsError) as info:
        PluginCatalog().register("auth", "x", sha256=SHA, command="x", env=["hunter2"])
    assert "hunter2" not in str(info.value) and "env" in str(info.value)


# -- over HTTP -------------------------------------------------------------------------


def test_the_catalog_lists_names_per_type_and_details(demo_api: httpx.Client) -> None:
    response = demo_api.get("sys/plugins/catalog")
    assert response.status_code == 200
    data = response.json()["data"]
    assert set(data) == {"auth", "database", "secret", "detailed"}
    assert "postgresql-database-plugin" in data["database"]
    assert data["database"] == sorted(data["database"])
    kv = next(d for d in data["detailed"] if d["name"] == "kv")
    assert kv == {
        "builtin": True,
        "deprecation_status": "supported",
        "name": "kv",
        "type": "secret",
        "version": BUILTIN_VERSION,
    }


def test_registered_demo_plugins_show_in_the_catalog_as_not_builtin(
    demo_api: httpx.Client,
) -> None:
    data = demo_api.get("sys/plugins/catalog").json()["data"]
    assert "snowflake-database-plugin" in data["database"]
    row = next(d for d in data["detailed"] if d["name"] == "venafi-pki-backend")
    assert row["builtin"] is False and row["version"] == "v0.14.0"


@pytest.mark.parametrize("method", ["LIST", "GET"])
def test_listing_one_type_answers_its_names(demo_api: httpx.Client, method: str) -> None:
    params = {"list": "true"} if method == "GET" else None
    response = demo_api.request(method, "sys/plugins/catalog/auth", params=params)
    assert response.status_code == 200
    assert "userpass" in response.json()["data"]["keys"]


def test_listing_an_unknown_type_is_400_naming_it(demo_api: httpx.Client) -> None:
    response = demo_api.request("LIST", "sys/plugins/catalog/widgets")
    assert response.status_code == 400 and "widgets" in response.json()["errors"][0]


@pytest.mark.parametrize("method", ["POST", "PUT"])
def test_a_registered_plugin_reads_back_with_its_sum_and_builtin_false(
    api: httpx.Client, method: str
) -> None:
    response = api.request(
        method,
        "sys/plugins/catalog/secret/my-plugin",
        json=body(version="v1.2.3", args=["-debug"], env=["LOG=1"]),
    )
    assert response.status_code == 204
    read = api.get("sys/plugins/catalog/secret/my-plugin", params={"version": "v1.2.3"})
    assert read.status_code == 200
    assert read.json()["data"] == {
        "args": ["-debug"],
        "builtin": False,
        "command": "my-plugin",
        "name": "my-plugin",
        "sha256": SHA,
        "version": "v1.2.3",
    }
    keys = api.request("LIST", "sys/plugins/catalog/secret").json()["data"]["keys"]
    assert "my-plugin" in keys


def test_a_plugin_registered_with_a_version_is_404_without_it(api: httpx.Client) -> None:
    api.post("sys/plugins/catalog/auth/my-auth", json=body(version="v0.1.0"))
    response = api.get("sys/plugins/catalog/auth/my-auth")
    assert response.status_code == 404 and response.json() == {"errors": []}


def test_an_unversioned_registration_reads_without_a_version(api: httpx.Client) -> None:
    api.post("sys/plugins/catalog/database/my-db", json=body())
    response = api.get("sys/plugins/catalog/database/my-db")
    assert response.status_code == 200 and response.json()["data"]["version"] == ""


def test_reading_a_builtin_answers_builtin_true(demo_api: httpx.Client) -> None:
    data = demo_api.get("sys/plugins/catalog/auth/userpass").json()["data"]
    assert data["builtin"] is True and data["version"] == BUILTIN_VERSION
    assert data["sha256"] == "" and data["command"] == ""


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"sha256": ""}, "sha256"),
        ({"sha256": "xyz"}, "sha256"),
        ({"sha256": "ab" * 31}, "sha256"),
        ({"command": ""}, "command"),
        ({"command": "../../bin/sh"}, "command"),
        ({"command": "/usr/bin/plugin"}, "command"),
        ({"args": "-debug"}, "args"),
        ({"args": [1, 2]}, "args"),
        ({"env": ["no-equals-sign"]}, "env"),
        ({"env": "A=1"}, "env"),
        ({"version": "latest"}, "version"),
        ({"version": "v1.0.0+builtin"}, "builtin"),
    ],
)
def test_a_bad_registration_is_400_naming_the_field_and_stores_nothing(
    api: httpx.Client, fields: dict[str, Any], named: str
) -> None:
    response = api.post("sys/plugins/catalog/secret/bad-plugin", json=body(**fields))
    assert response.status_code == 400
    assert named in response.json()["errors"][0]
    keys = api.request("LIST", "sys/plugins/catalog/secret").json()["data"]["keys"]
    assert "bad-plugin" not in keys


def test_registering_under_an_unknown_type_is_400(api: httpx.Client) -> None:
    response = api.post("sys/plugins/catalog/widget/x", json=body())
    assert response.status_code == 400 and "widget" in response.json()["errors"][0]


def test_delete_with_the_version_removes_the_registration(api: httpx.Client) -> None:
    api.post("sys/plugins/catalog/secret/gone", json=body(version="v2.0.0"))
    response = api.delete("sys/plugins/catalog/secret/gone", params={"version": "v2.0.0"})
    assert response.status_code == 204
    read = api.get("sys/plugins/catalog/secret/gone", params={"version": "v2.0.0"})
    assert read.status_code == 404


def test_delete_of_something_absent_is_204(api: httpx.Client) -> None:
    assert api.delete("sys/plugins/catalog/secret/never-there").status_code == 204


def test_a_builtin_cannot_be_deleted(api: httpx.Client) -> None:
    response = api.delete("sys/plugins/catalog/secret/kv", params={"version": BUILTIN_VERSION})
    assert response.status_code == 400
    assert api.get("sys/plugins/catalog/secret/kv").status_code == 200


def test_register_read_delete_and_listing_a_type_need_sudo(api: httpx.Client) -> None:
    # OpenBao 2.7.2 refuses LIST sys/plugins/catalog/:type without sudo (measured).
    capabilities = '["create", "read", "update", "delete", "list"]'
    put_acl(api, "plugin-ops", f'path "sys/plugins/catalog/*" {{ capabilities = {capabilities} }}')
    put_acl(api, "plugin-list", 'path "sys/plugins/catalog/*" { capabilities = ["list", "sudo"] }')
    headers = {"X-Vault-Token": issue(api, policies=["plugin-ops"])}
    listed = api.request("LIST", "sys/plugins/catalog/auth", headers=headers)
    assert listed.status_code == 403
    with_sudo = {"X-Vault-Token": issue(api, policies=["plugin-list"])}
    assert api.request("LIST", "sys/plugins/catalog/auth", headers=with_sudo).status_code == 200
    registered = api.post("sys/plugins/catalog/secret/p", json=body(), headers=headers)
    assert registered.status_code == 403
    assert api.get("sys/plugins/catalog/auth/userpass", headers=headers).status_code == 403
    assert api.delete("sys/plugins/catalog/secret/p", headers=headers).status_code == 403


# -- a registered plugin is run only when its binary's sum is the catalog's ------------
def test_a_connection_on_a_registered_database_plugin_is_refused_and_not_stored(
    api: httpx.Client,
) -> None:
    # OpenBao refuses to run a plugin whose binary is missing or whose sum differs; the
    # sandbox has no binary, so a registered plugin never runs (a sum of zeros included).
    api.post("sys/plugins/catalog/database/zero-db", json=body(sha256="0" * 64))
    connection = {"plugin_name": "zero-db", "connection_url": "x", "verify_connection": False}
    answer = api.post("database/config/zero", json=connection)
    assert answer.status_code == 400
    assert "cannot run plugin 'zero-db'" in answer.json()["errors"][0]
    assert "sha256" in answer.json()["errors"][0]
    assert api.get("database/config/zero").status_code == 404
    assert api.get("database/creds/zero").status_code == 400


def test_mounting_a_registered_secret_plugin_is_refused(api: httpx.Client) -> None:
    api.post("sys/plugins/catalog/secret/zero-kv", json=body(sha256="0" * 64))
    answer = api.post("sys/mounts/zero", json={"type": "zero-kv"})
    assert answer.status_code == 400 and "cannot run plugin 'zero-kv'" in answer.text
    assert "zero/" not in api.get("sys/mounts").json()["data"]


def test_an_unregistered_plugin_is_still_not_found(api: httpx.Client) -> None:
    answer = api.post("sys/mounts/nothing", json={"type": "no-such-plugin"})
    assert answer.status_code == 400
    assert "plugin not found in the catalog: no-such-plugin" in answer.json()["errors"][0]
