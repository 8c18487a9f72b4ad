"""The database engine (spec 4.8) over real HTTP: connections, roles, creds, static roles."""

from __future__ import annotations

from datetime import datetime, timedelta

import httpx
import pytest

from tests.sandbox.secrets._access_api import assert_error, issue, put_acl, v1
from toolkit._time import parse_time
from toolkit.sandbox import Sandbox
from toolkit.sandbox._plain import round_trip
from toolkit.sandbox.secrets._credentials import Credentials
from toolkit.sandbox.secrets.engines.ad.library import Lent
from toolkit.sandbox.secrets.engines.database.state import DatabaseEngine

URL = "postgresql://{{username}}:{{password}}@db.internal:5432/orders"
ROOT_PASSWORD = "root-pw-Zq81x"
CREATE = "CREATE ROLE \"{{name}}\" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';"
GRANT = 'GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{{name}}";'
REVOKE = 'DROP ROLE "{{name}}";'


def engine(sandbox: Sandbox, mount: str = "database") -> DatabaseEngine:
    backend = sandbox.secrets.mounts.engine(mount).backend
    assert isinstance(backend, DatabaseEngine)
    return backend


def connect(api: httpx.Client, name: str = "pg", mount: str = "database", **extra: object) -> None:
    body: dict[str, object] = {
        "plugin_name": "postgresql-database-plugin",
        "connection_url": URL,
        "username": "vault-admin",
        "password": ROOT_PASSWORD,
        "allowed_roles": ["app-*", "reader", "static-*"],
    }
    body.update(extra)
    answer = api.post(f"{mount}/config/{name}", json=body)
    assert answer.status_code == 204, answer.text


def make_role(api: httpx.Client, name: str = "reader", mount: str = "database", **extra: object):
    body: dict[str, object] = {
        "db_name": "pg",
        "creation_statements": [CREATE, GRANT],
        "revocation_statements": [REVOKE],
        "default_ttl": "1h",
        "max_ttl": "24h",
    }
    body.update(extra)
    answer = api.post(f"{mount}/roles/{name}", json=body)
    assert answer.status_code == 204, answer.text


# -- connections ------------------------------------------------------------------------


def test_a_connection_reads_back_without_its_password(api, sandbox):
    connect(api)
    data = api.get("database/config/pg").json()["data"]
    assert data["plugin_name"] == "postgresql-database-plugin"
    assert data["allowed_roles"] == ["app-*", "reader", "static-*"]
    assert data["connection_details"] == {"connection_url": URL, "username": "vault-admin"}
    assert data["root_credentials_rotate_statements"] == []
    assert data["verify_connection"] is True
    assert ROOT_PASSWORD not in api.get("database/config/pg").text
    assert "pg" in api.request("LIST", "database/config").json()["data"]["keys"]


def test_a_password_written_into_the_url_is_redacted_and_warned_about(api):
    answer = api.post(
        "database/config/literal",
        json={
            "plugin_name": "postgresql-database-plugin",
            "connection_url": "postgresql://admin:Hunter2pw@db:5432/app",
            "allowed_roles": "*",
        },
    )
    assert answer.status_code == 200
    assert "Password found in connection_url" in answer.json()["warnings"][0]
    read = api.get("database/config/literal")
    assert "Hunter2pw" not in read.text
    url = read.json()["data"]["connection_details"]["connection_url"]
    assert url == "postgresql://admin:xxxxx@db:5432/app"


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({}, 400, "empty plugin name"),
        ({"plugin_name": "no-such-plugin"}, 400, "plugin not found in the catalog: no-such-plugin"),
        ({"plugin_name": "kv"}, 400, "plugin not found in the catalog: kv"),
        ({"plugin_name": "postgresql-database-plugin"}, 400, "connection_url cannot be empty"),
        (
            {"plugin_name": "postgresql-database-plugin", "connection_url": "mysql://db/x"},
            400,
            "invalid connection URL scheme 'mysql'",
        ),
        (
            {"plugin_name": "postgresql-database-plugin", "connection_url": URL},
            400,
            "uses {{username}} but no username is set",
        ),
        (
            {
                "plugin_name": "mysql-database-plugin",
                "connection_url": "{{username}}:{{password}}@db:3306/app",
                "username": "u",
                "password": "p",
            },
            400,
            "invalid DSN",
        ),
        (
            {
                "plugin_name": "postgresql-database-plugin",
                "connection_url": URL,
                "username": "{{username}}",
            },
            400,
            "cannot contain the template variables",
        ),
        (
            {"plugin_name": "redis-database-plugin", "host": "cache", "port": 6379},
            400,
            "username cannot be empty",
        ),
        (
            {"plugin_name": "postgresql-database-plugin", "verify_connection": "maybe"},
            400,
            "verify_connection",
        ),
    ],
)
def test_a_connection_the_plugin_would_refuse_is_not_saved(api, body, status, fragment):
    assert_error(api.post("database/config/bad", json=body), status, fragment)
    assert api.get("database/config/bad").status_code == 404


def test_without_verification_only_the_plugins_own_checks_apply(api):
    lax = {
        "plugin_name": "postgresql-database-plugin",
        "connection_url": "mysql://not-really",
        "verify_connection": False,
    }
    assert api.post("database/config/lax", json=lax).status_code == 204
    assert api.get("database/config/lax").json()["data"]["verify_connection"] is False
    empty = {"plugin_name": "postgresql-database-plugin", "verify_connection": False}
    assert_error(
        api.post("database/config/lax2", json=empty), 400, "connection_url cannot be empty"
    )


def test_a_refused_update_leaves_the_connection_as_it_was(api):
    connect(api)
    before = api.get("database/config/pg").json()["data"]
    refused = api.post(
        "database/config/pg", json={"allowed_roles": ["other"], "connection_url": "ftp://x"}
    )
    assert_error(refused, 400, "invalid connection URL scheme 'ftp'")
    assert api.get("database/config/pg").json()["data"] == before


def test_an_update_merges_into_the_stored_connection(api):
    connect(api)
    assert api.post("database/config/pg", json={"allowed_roles": "reader"}).status_code == 204
    data = api.get("database/config/pg").json()["data"]
    assert data["allowed_roles"] == ["reader"]
    assert data["connection_details"]["connection_url"] == URL


def test_reset_restarts_the_plugin_and_refuses_an_unknown_connection(api, sandbox):
    connect(api)
    before = engine(sandbox).connections["pg"].restarts
    assert api.post("database/reset/pg").status_code == 204
    assert engine(sandbox).connections["pg"].restarts == before + 1
    assert_error(api.post("database/reset/nope"), 400, 'connection with name: "nope"')


def test_rotate_root_changes_the_stored_password_and_never_returns_it(api, sandbox):
    connect(api, root_rotation_statements=["ALTER USER {{username}} WITH PASSWORD '{{password}}';"])
    answer = api.post("database/rotate-root/pg")
    assert answer.status_code == 204 and answer.content == b""
    new_password = engine(sandbox).connections["pg"].details["password"]
    assert new_password and new_password != ROOT_PASSWORD
    last = engine(sandbox).statements("pg")[-1]
    assert last.operation == "rotate-root"
    assert last.statement == f"ALTER USER vault-admin WITH PASSWORD '{new_password}';"
    assert new_password not in api.get("database/config/pg").text


def test_rotate_root_needs_a_root_user_and_password(api):
    api.post(
        "database/config/nouser",
        json={
            "plugin_name": "postgresql-database-plugin",
            "connection_url": "postgresql://db:5432/app",
            "allowed_roles": "*",
        },
    )
    assert_error(api.post("database/rotate-root/nouser"), 400, "no username in configuration")
    assert_error(api.post("database/rotate-root/missing"), 400, 'name: "missing"')


def test_deleting_a_connection_removes_it(api):
    connect(api)
    assert api.delete("database/config/pg").status_code == 204
    assert api.get("database/config/pg").status_code == 404


# -- roles --------------------------------------------------------------------------------


def test_a_role_reads_back_with_its_statement_lists_and_ttls_in_seconds(api):
    connect(api)
    make_role(api)
    data = api.get("database/roles/reader").json()["data"]
    assert data == {
        "db_name": "pg",
        "creation_statements": [CREATE, GRANT],
        "revocation_statements": [REVOKE],
        "rollback_statements": [],
        "renew_statements": [],
        "default_ttl": 3600,
        "max_ttl": 86400,
        "credential_type": "password",
    }
    assert "reader" in api.request("LIST", "database/roles").json()["data"]["keys"]
    assert api.delete("database/roles/reader").status_code == 204
    assert api.get("database/roles/reader").status_code == 404


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"db_name": ""}, "database name is required"),
        ({"creation_statements": []}, "missing creation_statements"),
        ({"db_name": "elsewhere"}, 'connection with name: "elsewhere"'),
        ({"max_ttl": "769h"}, "max_ttl: 2768400s is longer than the mount's maximum"),
        ({"default_ttl": "800h", "max_ttl": 0}, "default_ttl: 2880000s is longer"),
        ({"default_ttl": "2h", "max_ttl": "1h"}, "default_ttl: cannot be greater than max_ttl"),
        ({"default_ttl": "soon"}, "default_ttl"),
        ({"revocation_statements": [1]}, "revocation_statements: expected a list of strings"),
    ],
)
def test_a_bad_role_is_refused_naming_the_field_and_not_saved(api, body, fragment):
    connect(api)
    good = {"db_name": "pg", "creation_statements": [CREATE]}
    assert_error(api.post("database/roles/reader", json={**good, **body}), 400, fragment)
    assert api.get("database/roles/reader").status_code == 404


def test_a_role_the_connection_does_not_allow_is_stored_but_gets_no_creds(api):
    connect(api)
    body = {"db_name": "pg", "creation_statements": [CREATE]}
    # As on the real server: the role is written; its creds are refused.
    assert api.post("database/roles/intruder", json=body).status_code == 204
    assert_error(api.get("database/creds/intruder"), 400, '"intruder" is not an allowed')
    assert api.post("database/roles/app-billing", json=body).status_code == 204  # glob app-*
    assert api.get("database/creds/app-billing").status_code == 200


def test_the_role_max_ttl_follows_the_mount_tuning(api):
    api.post("sys/mounts/database/tune", json={"max_lease_ttl": "2h"})
    connect(api)
    body = {"db_name": "pg", "creation_statements": [CREATE]}
    assert_error(api.post("database/roles/reader", json={**body, "max_ttl": "3h"}), 400, "max_ttl")
    make_role(api, default_ttl="30m", max_ttl="2h")
    assert api.get("database/creds/reader").json()["lease_duration"] == 1800


def test_role_and_static_role_names_are_unique(api):
    connect(api)
    make_role(api, "static-x")
    static = {"db_name": "pg", "username": "svc", "rotation_period": 60}
    assert_error(api.post("database/static-roles/static-x", json=static), 400, "must be unique")


# -- dynamic creds -----------------------------------------------------------------------


def test_creds_run_the_creation_statements_with_name_password_and_expiration(api, sandbox):
    connect(api)
    make_role(api)
    answer = api.get("database/creds/reader").json()
    username, password = answer["data"]["username"], answer["data"]["password"]
    assert username.startswith("v-root-reader-")
    assert len(password) == 20 and "-" in password
    assert answer["renewable"] is True and answer["lease_duration"] == 3600
    assert answer["lease_id"].startswith("database/creds/reader/")
    lease = api.put("sys/leases/lookup", json={"lease_id": answer["lease_id"]}).json()["data"]
    expire = parse_time(lease["expire_time"])
    assert expire is not None
    ran = engine(sandbox).statements("pg")
    assert [s.operation for s in ran] == ["creds", "creds"]
    expiration = datetime.strptime(
        ran[0].statement.split("VALID UNTIL '")[1][:24], "%Y-%m-%d %H:%M:%S%z"
    )
    assert abs((expiration - expire).total_seconds() - 5) < 2
    assert ran[0].statement == CREATE.replace("{{name}}", username).replace(
        "{{password}}", password
    ).replace("{{expiration}}", expiration.strftime("%Y-%m-%d %H:%M:%S%z"))
    assert ran[1].statement == GRANT.replace("{{name}}", username)
    assert username in engine(sandbox).users("pg")


def test_revoking_the_lease_runs_the_revocation_statements_and_drops_the_user(api, sandbox):
    connect(api)
    make_role(api)
    answer = api.get("database/creds/reader").json()
    username = answer["data"]["username"]
    assert (
        api.put(
            "sys/leases/revoke", json={"lease_id": answer["lease_id"], "sync": True}
        ).status_code
        == 204
    )
    last = engine(sandbox).statements("pg")[-1]
    assert (last.operation, last.statement) == ("revoke", f'DROP ROLE "{username}";')
    assert username not in engine(sandbox).users("pg")


def test_a_role_without_revocation_statements_gets_the_plugins_default(api, sandbox):
    connect(api)
    make_role(api, revocation_statements=[])
    answer = api.get("database/creds/reader").json()
    sandbox.clock.advance(3601)  # the lease expires on its own
    assert api.put("sys/leases/lookup", json={"lease_id": answer["lease_id"]}).status_code == 400
    last = engine(sandbox).statements("pg")[-1]
    assert last.statement == f'DROP ROLE IF EXISTS "{answer["data"]["username"]}";'


def test_creds_are_refused_for_an_unknown_role_or_a_role_no_longer_allowed(api):
    connect(api)
    make_role(api)
    assert_error(api.get("database/creds/nobody"), 400, "unknown role: nobody")
    api.post("database/config/pg", json={"allowed_roles": ["other"]})
    assert_error(api.get("database/creds/reader"), 400, '"reader" is not an allowed role')


def test_a_lease_whose_connection_is_gone_cannot_be_revoked(api):
    connect(api)
    make_role(api)
    lease_id = api.get("database/creds/reader").json()["lease_id"]
    api.delete("database/config/pg")
    assert_error(api.get("database/creds/reader"), 400, 'connection with name: "pg"')
    assert_error(api.put("sys/leases/revoke", json={"lease_id": lease_id}), 400, "failed to revoke")
    counts = api.get("sys/leases/count", params={"type": "irrevocable"}).json()
    assert counts["data"]["counts"].get("database/", 0) >= 1


def test_a_password_policy_on_the_connection_shapes_the_passwords(api):
    policy = 'length = 24\nrule "charset" {\n  charset = "xyz"\n  min-chars = 1\n}\n'
    assert api.post("sys/policies/password/xyz-only", json={"policy": policy}).status_code == 204
    connect(api, password_policy="xyz-only")
    make_role(api)
    password = api.get("database/creds/reader").json()["data"]["password"]
    assert len(password) == 24 and set(password) <= set("xyz")
    api.delete("sys/policies/password/xyz-only")
    assert_error(api.get("database/creds/reader"), 400, "failed to generate password")


def test_the_demo_reader_token_reads_the_readonly_creds(sandbox):
    with v1(sandbox, "demo-db-reader-token") as reader:
        answer = reader.get("database/creds/readonly")
        assert answer.status_code == 200, answer.text
        assert answer.json()["data"]["username"].startswith("v-token-de-readonly-")
        assert reader.get("database/creds/app").status_code == 403


# -- static roles ---------------------------------------------------------------------------


def static(api: httpx.Client, name: str = "static-orders", **extra: object) -> httpx.Response:
    body: dict[str, object] = {"db_name": "pg", "username": "orders_svc", "rotation_period": "1h"}
    body.update(extra)
    return api.post(f"database/static-roles/{name}", json=body)


def test_a_static_role_rotates_at_creation_and_serves_its_password(api, sandbox):
    connect(api)
    assert static(api).status_code == 204
    data = api.get("database/static-roles/static-orders").json()["data"]
    assert {
        k: data[k] for k in ("db_name", "username", "rotation_statements", "rotation_period")
    } == {
        "db_name": "pg",
        "username": "orders_svc",
        "rotation_statements": [],
        "rotation_period": 3600,
    }
    creds = api.get("database/static-creds/static-orders").json()["data"]
    assert creds["username"] == "orders_svc" and creds["rotation_period"] == 3600
    assert 3590 <= creds["ttl"] <= 3600
    assert creds["last_service_rotation"] == data["last_service_rotation"]
    ran = engine(sandbox).statements("pg")[-1]
    assert ran.operation == "static-create"
    assert ran.statement == f"ALTER ROLE \"orders_svc\" WITH PASSWORD '{creds['password']}';"
    assert "orders_svc" in engine(sandbox).users("pg")
    assert "static-orders" in api.request("LIST", "database/static-roles").json()["data"]["keys"]


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"db_name": ""}, "database name is a required field"),
        ({"username": ""}, "username is a required field"),
        ({"rotation_period": None}, "rotation_period is required"),
        ({"rotation_period": 4}, "rotation_period must be 5 seconds or more"),
        ({"rotation_period": "4s"}, "rotation_period must be 5 seconds or more"),
        ({"db_name": "other"}, 'connection with name: "other"'),
    ],
)
def test_a_bad_static_role_is_refused_and_not_saved(api, body, fragment):
    connect(api)
    payload = {"db_name": "pg", "username": "svc", "rotation_period": 60, **body}
    payload = {k: v for k, v in payload.items() if v is not None}
    assert_error(api.post("database/static-roles/static-bad", json=payload), 400, fragment)
    assert api.get("database/static-roles/static-bad").status_code == 404


def test_a_static_role_needs_the_connection_to_allow_it(api):
    connect(api)
    assert_error(static(api, "orders"), 400, '"orders" is not an allowed role')


def test_the_minimum_rotation_period_of_five_seconds_is_accepted(api):
    connect(api)
    assert static(api, rotation_period=5).status_code == 204


def test_a_static_role_rotates_on_its_own_when_the_period_passes(api, sandbox):
    connect(api)
    static(api, rotation_statements=["ALTER USER {{name}} PASSWORD '{{password}}';"])
    first = api.get("database/static-creds/static-orders").json()["data"]
    sandbox.clock.advance(1800)
    assert api.get("database/static-creds/static-orders").json()["data"] == {
        **first,
        "ttl": api.get("database/static-creds/static-orders").json()["data"]["ttl"],
    }
    sandbox.clock.advance(1801)
    second = api.get("database/static-creds/static-orders").json()["data"]
    assert second["password"] != first["password"]
    last_first = parse_time(first["last_service_rotation"])
    assert last_first is not None
    assert parse_time(second["last_service_rotation"]) == last_first + timedelta(hours=1)
    ran = engine(sandbox).statements("pg")[-1]
    assert ran.operation == "static-rotate"
    assert ran.statement == f"ALTER USER orders_svc PASSWORD '{second['password']}';"


def test_rotate_role_rotates_now_and_restarts_the_period(api, sandbox):
    connect(api)
    static(api)
    first = api.get("database/static-creds/static-orders").json()["data"]
    sandbox.clock.advance(600)
    answer = api.post("database/rotate-role/static-orders")
    assert answer.status_code == 204 and answer.content == b""
    second = api.get("database/static-creds/static-orders").json()["data"]
    assert second["password"] != first["password"]
    assert 3590 <= second["ttl"] <= 3600
    assert_error(api.post("database/rotate-role/nobody"), 400, "no static role found")


def test_a_static_role_cannot_change_its_username(api):
    connect(api)
    static(api)
    assert_error(static(api, username="someone_else"), 400, "cannot update static account username")
    assert static(api, rotation_period="2h", username="orders_svc").status_code == 204
    assert api.get("database/static-roles/static-orders").json()["data"]["rotation_period"] == 7200


def test_deleting_a_static_role_drops_its_database_user(api, sandbox):
    connect(api)
    static(api)
    assert api.delete("database/static-roles/static-orders").status_code == 204
    assert api.get("database/static-roles/static-orders").status_code == 404
    last = engine(sandbox).statements("pg")[-1]
    assert (last.operation, last.statement) == (
        "static-delete",
        'DROP ROLE IF EXISTS "orders_svc";',
    )
    assert "orders_svc" not in engine(sandbox).users("pg")


# -- access, mounts and secrecy ---------------------------------------------------------------

CREATE_ONLY = """
path "database/config/*" { capabilities = ["create"] }
path "database/roles/*" { capabilities = ["create"] }
path "database/static-roles/*" { capabilities = ["create"] }
"""
UPDATE_ONLY = CREATE_ONLY.replace('"create"', '"update"')


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "database/config/acl",
            {
                "plugin_name": "postgresql-database-plugin",
                "connection_url": URL,
                "username": "u",
                "password": "p",
                "allowed_roles": "*",
            },
        ),
        ("database/roles/acl", {"db_name": "pg", "creation_statements": [CREATE]}),
        ("database/static-roles/acl", {"db_name": "pg", "username": "svc", "rotation_period": 60}),
    ],
)
def test_writes_need_create_when_new_and_update_when_existing(api, sandbox, path, body):
    connect(api, allowed_roles="*")
    put_acl(api, "db-create", CREATE_ONLY)
    put_acl(api, "db-update", UPDATE_ONLY)
    creator = v1(sandbox, issue(api, policies=["db-create"]))
    updater = v1(sandbox, issue(api, policies=["db-update"]))
    with creator, updater:
        assert_error(updater.post(path, json=body), 403, "permission denied")
        assert api.get(path).status_code == 404
        assert creator.post(path, json=body).status_code == 204
        assert_error(creator.post(path, json=body), 403, "permission denied")
        assert updater.post(path, json=body).status_code == 204


def test_the_engine_works_where_it_is_mounted(api, sandbox):
    assert api.post("sys/mounts/dbs/eu", json={"type": "database"}).status_code == 204
    for empty in ("config", "roles", "static-roles"):
        assert api.request("LIST", f"dbs/eu/{empty}").status_code == 404
    connect(api, mount="dbs/eu")
    api.post("dbs/eu/roles/reader", json={"db_name": "pg", "creation_statements": [CREATE]})
    answer = api.get("dbs/eu/creds/reader").json()
    assert answer["lease_id"].startswith("dbs/eu/creds/reader/")
    elsewhere = engine(sandbox, "dbs/eu")
    assert answer["data"]["username"] in elsewhere.users("pg")
    assert "pg" not in engine(sandbox).connections
    assert api.delete("sys/mounts/dbs/eu").status_code == 204  # revokes the lease: drops the user
    assert elsewhere.users("pg") == {"vault-admin"}


def test_no_answer_or_error_carries_a_password(api, sandbox):
    connect(api)
    make_role(api)
    static(api)
    creds_password = api.get("database/creds/reader").json()["data"]["password"]
    static_password = engine(sandbox).static_roles["static-orders"].password
    answers = [
        api.get("database/config/pg"),
        api.get("database/roles/reader"),
        api.get("database/static-roles/static-orders"),
        api.post(
            "database/config/pg", json={"connection_url": "ftp://vault-admin:" + ROOT_PASSWORD}
        ),
        api.post("database/rotate-root/pg"),
        api.request("LIST", "sys/leases/lookup/database/creds/reader"),
    ]
    rotated = engine(sandbox).connections["pg"].details["password"]
    for answer in answers:
        for secret in (ROOT_PASSWORD, creds_password, static_password, rotated):
            assert secret not in answer.text
    assert ROOT_PASSWORD not in repr(engine(sandbox).connections["pg"])
    assert static_password not in repr(engine(sandbox).static_roles["static-orders"])
    assert creds_password not in repr(engine(sandbox).statements("pg"))


def test_the_engine_state_is_plain_data_that_survives_being_stored(sandbox):
    with sandbox.secrets.lock:
        copy = round_trip({"secrets": sandbox.secrets})["secrets"]
    db = copy.mounts.engine("database").backend
    assert isinstance(db, DatabaseEngine) and db.service is copy
    lease_id = "database/creds/readonly/demoLiveReadonly0000001"
    user = copy.leases.get(lease_id).data["username"]
    assert user in db.users("orders-postgres")
    assert copy.leases.revoke(lease_id)  # the revocation callback is the copy's bound method
    assert user not in db.users("orders-postgres")
    assert user in engine(sandbox).users("orders-postgres")  # the original is untouched
    broker = copy.mounts.engine("broker").backend
    assert copy.leases.revoke("broker/creds/producer/demoLiveProducer00000001")
    assert len(broker.users()) == 2


def test_the_records_handed_to_the_http_side_keep_passwords_out_of_their_repr() -> None:
    made, lent = Credentials("v-token-reader", "s3cret-pw"), Lent("svc-dba", "s3cret-pw")
    assert "s3cret-pw" not in repr(made) and "v-token-reader" in repr(made)
    assert "s3cret-pw" not in repr(lent) and "svc-dba" in repr(lent)
