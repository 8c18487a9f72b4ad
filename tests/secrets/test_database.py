"""The database engine through the client: each call, the three views, secrets kept hidden."""

from __future__ import annotations

import logging
from datetime import timedelta

import pandas as pd
import pytest

from toolkit import InputError, Sensitive
from toolkit._errors import BadRequest, NotFound
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.engines.database.state import DatabaseEngine
from toolkit.secrets import SecretsClient
from toolkit.secrets.database import CONNECTIONS, DB_ROLES, STATIC_ROLES

URL = "postgresql://{{username}}:{{password}}@db.internal:5432/app"
CREATE = ["CREATE ROLE \"{{name}}\" WITH LOGIN PASSWORD '{{password}}';"]


def state(sandbox: Sandbox, mount: str = "database") -> DatabaseEngine:
    backend = sandbox.secrets.mounts.engine(mount).backend
    assert isinstance(backend, DatabaseEngine)
    return backend


def pg(client: SecretsClient, name: str = "pg", **extra: object):
    options: dict[str, object] = {
        "connection_url": URL,
        "username": "admin",
        "password": Sensitive("client-root-pw", "password"),
        "allowed_roles": ["app", "api", "static-*"],
    }
    options.update(extra)
    return client.database.configure_connection(
        name,
        "postgresql-database-plugin",
        **options,  # type: ignore[arg-type]
    )


# -- frames on the demo data ---------------------------------------------------------------


def test_the_connections_frame_shows_every_connection_without_passwords(demo_client):
    frame = demo_client.database.connections_frame()
    assert list(frame.columns) == CONNECTIONS.names[1:] and frame.index.name == "name"
    assert {"orders-postgres", "billing-mysql", "warehouse-snowflake"} <= set(frame.index)
    row = frame.loc["orders-postgres"]
    assert row["plugin_name"] == "postgresql-database-plugin"
    assert row["username"] == "vault-admin"
    assert row["root_rotation_statements"] == 1
    assert "readonly" in row["allowed_roles"]
    assert frame.loc["warehouse-snowflake", "plugin_version"] == "v0.10.0"
    assert str(frame["verify_connection"].dtype) == "boolean"
    assert "demo-orders-root" not in frame.to_string()


def test_the_roles_frame_counts_statements_and_checks_the_connection_allows_each(demo_client):
    frame = demo_client.database.roles_frame()
    assert list(frame.columns) == DB_ROLES.names[1:]
    readonly = frame.loc["readonly"]
    assert (readonly["db_name"], readonly["default_ttl"], readonly["max_ttl"]) == (
        "orders-postgres",
        3600,
        72 * 3600,
    )
    assert readonly["creation_statements"] == 2 and readonly["revocation_statements"] == 2
    assert frame["allowed"].all()
    assert str(frame["default_ttl"].dtype) == "Int64"


def test_the_static_roles_frame_gives_the_next_rotation_on_the_server_clock(demo_client):
    frame = demo_client.database.static_roles_frame()
    assert list(frame.columns) == STATIC_ROLES.names[1:]
    assert list(frame.index) == ["billing-etl", "orders-batch", "orders-migrations"]
    for name, row in frame.iterrows():
        role = demo_client.database.read_static_role(str(name))
        assert row["last_rotation"] == role["last_rotation"]
        assert row["next_rotation"] == role["last_rotation"] + timedelta(
            seconds=int(row["rotation_period"])
        )
    assert str(frame["next_rotation"].dtype) == "datetime64[ns, UTC]"
    assert not frame["overdue"].any()
    now = demo_client.http.server_now()
    expected = int((frame.loc["orders-batch", "next_rotation"] - now).total_seconds())
    assert abs(frame.loc["orders-batch", "ttl"] - expected) <= 5


def test_a_static_role_past_its_rotation_is_overdue_when_judged_later(demo_client):
    later = demo_client.http.server_now() + timedelta(days=30)
    frame = demo_client.database.static_roles_frame(now=later)
    assert frame["overdue"].all() and (frame["ttl"] == 0).all()


def test_the_views_are_empty_with_their_columns_on_a_fresh_mount(client):
    client.enable_engine("dbs/empty", "database")
    db = client.database.at("dbs/empty")
    for frame, schema in (
        (db.connections_frame(), CONNECTIONS),
        (db.roles_frame(), DB_ROLES),
        (db.static_roles_frame(), STATIC_ROLES),
    ):
        assert frame.empty and list(frame.columns) == schema.names[1:]
    assert str(db.static_roles_frame()["last_rotation"].dtype) == "datetime64[ns, UTC]"


# -- connections ---------------------------------------------------------------------------


def test_configure_connection_sends_the_password_once_and_reads_back_without_it(client, sandbox):
    record = pg(client)
    assert record["connection_url"] == URL and record["username"] == "admin"
    assert record["allowed_roles"] == ["app", "api", "static-*"] and record["warnings"] == []
    assert state(sandbox).connections["pg"].details["password"] == "client-root-pw"
    assert "client-root-pw" not in repr(record)
    assert "pg" in client.database.list_connections()


def test_a_password_in_the_url_comes_back_as_a_warning_and_redacted(client):
    record = client.database.configure_connection(
        "literal",
        "postgresql-database-plugin",
        connection_url="postgresql://admin:Lit3ral@db:5432/app",
        allowed_roles="*",
    )
    assert "Password found in connection_url" in record["warnings"][0]
    assert record["connection_url"] == "postgresql://admin:xxxxx@db:5432/app"


def test_reset_rotate_root_and_delete_a_connection(client, sandbox):
    pg(client)
    restarts = state(sandbox).connections["pg"].restarts
    client.database.reset_connection("pg")
    assert state(sandbox).connections["pg"].restarts == restarts + 1
    client.database.rotate_root("pg")
    assert state(sandbox).connections["pg"].details["password"] != "client-root-pw"
    client.database.delete_connection("pg")
    with pytest.raises(NotFound):
        client.database.read_connection("pg")


def test_server_refusals_reach_the_caller_with_the_servers_reason(client):
    with pytest.raises(BadRequest, match="invalid connection URL scheme"):
        client.database.configure_connection(
            "bad", "postgresql-database-plugin", connection_url="http://x"
        )
    with pytest.raises(BadRequest, match="rotation_period must be 5 seconds or more"):
        pg(client)
        client.database.write_static_role("static-a", "pg", "svc", "3s")


@pytest.mark.parametrize(
    "call",
    [
        lambda db: db.configure_connection("", "postgresql-database-plugin"),
        lambda db: db.write_role("fresh", "pg", []),
        lambda db: db.write_role("fresh", "", CREATE),
        lambda db: db.write_static_role("s", "pg", "user", 4),
        lambda db: db.write_static_role("s", "pg", "", 60),
        lambda db: db.generate_credentials(""),
        lambda db: db.rotate_root(" "),
    ],
)
def test_bad_input_is_refused_before_anything_is_sent(client, sandbox, call):
    before = len(sandbox.secrets.leases)
    with pytest.raises(InputError):
        call(client.database)
    assert "fresh" not in state(sandbox).roles and "s" not in state(sandbox).static_roles
    assert len(sandbox.secrets.leases) == before


# -- roles and creds -------------------------------------------------------------------------


def test_a_role_is_written_read_and_deleted(client):
    pg(client)
    role = client.database.write_role(
        "api", "pg", CREATE, revocation_statements='DROP ROLE "{{name}}";', default_ttl="1h"
    )
    assert role["creation_statements"] == CREATE
    assert role["revocation_statements"] == ['DROP ROLE "{{name}}";']
    assert (role["default_ttl"], role["max_ttl"]) == (3600, 0)
    assert "api" in client.database.list_roles()
    client.database.delete_role("api")
    assert "api" not in client.database.list_roles()


def test_a_role_its_connection_no_longer_allows_is_flagged(client):
    pg(client)
    client.database.write_role("app", "pg", CREATE)
    client.database.configure_connection("pg", "postgresql-database-plugin", allowed_roles=["x"])
    assert not client.database.roles_frame().loc["app", "allowed"]


def test_generated_credentials_hide_the_password_and_carry_the_lease(client, sandbox):
    pg(client)
    client.database.write_role("app", "pg", CREATE, default_ttl=600)
    creds = client.database.generate_credentials("app")
    assert isinstance(creds["password"], Sensitive)
    assert creds["password"].reveal() not in repr(creds)
    assert creds["lease_id"].startswith("database/creds/app/")
    assert creds["lease_duration"] == 600 and creds["renewable"] is True
    assert creds["username"] in state(sandbox).users("pg")
    client.leases.revoke(creds["lease_id"])
    assert creds["username"] not in state(sandbox).users("pg")


# -- static roles ------------------------------------------------------------------------------


def test_a_static_role_rotates_on_demand_and_its_creds_stay_hidden(client, sandbox):
    pg(client)
    role = client.database.write_static_role("static-a", "pg", "svc_a", "1h")
    assert role["username"] == "svc_a" and role["rotation_period"] == 3600
    assert role["next_rotation"] == role["last_rotation"] + timedelta(hours=1)
    creds = client.database.static_credentials("static-a")
    assert isinstance(creds["password"], Sensitive) and creds["ttl"] <= 3600
    assert creds["last_rotation"] == role["last_rotation"]
    sandbox.clock.advance(120)
    rotated = client.database.rotate_static_role("static-a")
    assert rotated["last_rotation"] >= role["last_rotation"] + timedelta(seconds=120)
    assert client.database.static_credentials("static-a")["password"] != creds["password"]
    assert "static-a" in client.database.list_static_roles()
    client.database.delete_static_role("static-a")
    assert "svc_a" not in state(sandbox).users("pg")


def test_the_client_works_against_an_engine_mounted_elsewhere(client, sandbox):
    client.enable_engine("dbs/eu", "database")
    eu = client.database.at("dbs/eu")
    eu.configure_connection(
        "pg",
        "postgresql-database-plugin",
        connection_url=URL,
        username="a",
        password="b",
        allowed_roles="*",
    )
    eu.write_role("app", "pg", CREATE)
    assert eu.generate_credentials("app")["lease_id"].startswith("dbs/eu/creds/app/")
    assert list(eu.connections_frame().index) == ["pg"]
    assert "pg" not in client.database.list_connections()
    assert isinstance(eu.roles_frame(), pd.DataFrame)


def test_nothing_the_client_returns_raises_or_logs_shows_a_password(client, sandbox, caplog):
    caplog.set_level(logging.DEBUG)
    outputs: list[object] = [pg(client)]
    root = "client-root-pw"
    outputs.append(client.database.write_role("api", "pg", CREATE))
    creds = client.database.generate_credentials("api")
    outputs += [creds, client.database.write_static_role("static-a", "pg", "svc_a", 60)]
    static_creds = client.database.static_credentials("static-a")
    outputs += [static_creds, client.database.rotate_static_role("static-a")]
    client.database.rotate_root("pg")
    outputs += [client.database.connections_frame(), client.database.static_roles_frame()]
    try:
        client.database.configure_connection(
            "pg", "postgresql-database-plugin", connection_url=f"ftp://admin:{root}@db/x"
        )
    except BadRequest as exc:
        outputs.append(exc)
    secrets = [
        root,
        creds["password"].reveal(),
        static_creds["password"].reveal(),
        state(sandbox).connections["pg"].details["password"],
        state(sandbox).static_roles["static-a"].password,
    ]
    text = "".join(shown(o) for o in outputs) + caplog.text
    for secret in secrets:
        assert secret not in text


def shown(value: object) -> str:
    text = repr(value) + str(value)
    if isinstance(value, pd.DataFrame):
        text += value.to_string() + value.to_html()
    html = getattr(value, "_repr_html_", None)
    return text + (str(html()) if callable(html) else "")
