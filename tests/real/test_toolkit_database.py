"""The toolkit's database engine calls and frames on a real OpenBao with a real PostgreSQL:
credentials that really log in, rotations that really change the password, revocation
that really drops the user."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.real import _seed
from tests.servers.openbao import OpenBao
from tests.servers.postgres import Postgres
from toolkit import APIError, Sensitive
from toolkit.secrets import SecretsClient
from toolkit.secrets.database import Database

MOUNT = "pg-toolkit"
CONNECTION = "main"
ADMIN = "toolkit_admin"
ADMIN_PASSWORD = "admin-initial-password"
STATIC_USER = "static_app"


@pytest.fixture(scope="module")
def engine(bao: OpenBao, postgres: Postgres) -> Iterator[Database]:
    """The database engine at its own mount, connected through the toolkit as an admin
    user of its own (so rotating the root password leaves the superuser alone)."""
    with postgres.connect() as conn:
        conn.execute(f"DROP ROLE IF EXISTS {ADMIN}")
        conn.execute(f"CREATE ROLE {ADMIN} LOGIN CREATEROLE PASSWORD '{ADMIN_PASSWORD}'")
        conn.execute(f"DROP ROLE IF EXISTS {STATIC_USER}")
        conn.execute(f"CREATE ROLE {STATIC_USER} LOGIN PASSWORD 'static-initial'")
    with SecretsClient(bao.address, bao.token) as client:
        client.enable_engine(MOUNT, "database")
        database = client.database.at(MOUNT)
        database.configure_connection(
            CONNECTION,
            "postgresql-database-plugin",
            connection_url=postgres.template_url,
            username=ADMIN,
            password=Sensitive(ADMIN_PASSWORD, "password"),
            allowed_roles=["app", "static-app"],
        )
        yield database


def logs_in(postgres: Postgres, user: str, password: str) -> bool:
    try:
        with postgres.connect(user, password) as conn:
            return conn.execute("SELECT current_user").fetchone() == (user,)
    except Exception:  # noqa: BLE001 - any refusal counts as not logged in
        return False


def test_the_connection_reads_back_without_its_password(
    engine: Database, postgres: Postgres
) -> None:
    record = engine.read_connection(CONNECTION)
    assert record["plugin_name"] == "postgresql-database-plugin"
    assert record["username"] == ADMIN and record["allowed_roles"] == ["app", "static-app"]
    assert "password" not in record["connection_details"]
    assert str(postgres.port) in record["connection_url"]
    assert CONNECTION in engine.list_connections()
    frame = engine.connections_frame()
    assert frame.index.name == "name" and frame.loc[CONNECTION, "username"] == ADMIN


def test_dynamic_credentials_log_in_renew_and_revocation_drops_the_user(
    bao_client: SecretsClient, engine: Database, postgres: Postgres
) -> None:
    role = engine.write_role(
        "app",
        CONNECTION,
        [_seed.CREATE_ROLE],
        revocation_statements=[_seed.DROP_ROLE],
        default_ttl="30m",
        max_ttl="2h",
    )
    assert (role["default_ttl"], role["max_ttl"], role["db_name"]) == (1800, 7200, CONNECTION)
    assert "app" in engine.list_roles()
    roles = engine.roles_frame()
    assert bool(roles.loc["app", "allowed"]) is True

    creds = engine.generate_credentials("app")
    assert isinstance(creds["password"], Sensitive)
    assert creds["password"].reveal() not in repr(creds)
    assert creds["lease_duration"] == 1800 and creds["renewable"] is True
    user, password = creds["username"], creds["password"].reveal()
    assert logs_in(postgres, user, password)

    leases = bao_client.leases.leases_by_mount(mounts=[f"{MOUNT}/"])
    assert creds["lease_id"] in leases.index
    assert leases.loc[creds["lease_id"], "role"] == "app"
    renewed = bao_client.leases.renew(creds["lease_id"], 3600)
    assert renewed["lease_duration"] == 3600

    bao_client.leases.revoke(creds["lease_id"])
    assert user not in postgres.roles()
    assert not logs_in(postgres, user, password)


def test_a_role_the_connection_does_not_allow_is_refused(engine: Database) -> None:
    engine.write_role("not-allowed", CONNECTION, [_seed.CREATE_ROLE])
    assert bool(engine.roles_frame().loc["not-allowed", "allowed"]) is False
    with pytest.raises(APIError) as refused:
        engine.generate_credentials("not-allowed")
    assert refused.value.status in (400, 500)
    engine.delete_role("not-allowed")
    assert "not-allowed" not in engine.list_roles()


def test_a_static_role_rotation_really_changes_the_password(
    engine: Database, postgres: Postgres
) -> None:
    role = engine.write_static_role("static-app", CONNECTION, STATIC_USER, "1h")
    assert role["username"] == STATIC_USER and role["rotation_period"] == 3600
    assert role["last_rotation"] is not None  # rotated on creation
    assert not logs_in(postgres, STATIC_USER, "static-initial")

    first = engine.static_credentials("static-app")
    assert isinstance(first["password"], Sensitive) and 0 < first["ttl"] <= 3600
    assert logs_in(postgres, STATIC_USER, first["password"].reveal())

    rotated = engine.rotate_static_role("static-app")
    assert rotated["last_rotation"] >= role["last_rotation"]
    second = engine.static_credentials("static-app")
    assert second["password"].reveal() != first["password"].reveal()
    assert logs_in(postgres, STATIC_USER, second["password"].reveal())
    assert not logs_in(postgres, STATIC_USER, first["password"].reveal())

    frame = engine.static_roles_frame()
    assert frame.loc["static-app", "username"] == STATIC_USER
    assert bool(frame.loc["static-app", "overdue"]) is False
    assert str(frame["next_rotation"].dtype) == "datetime64[ns, UTC]"


def test_rotating_the_root_password_locks_out_the_old_one_and_creds_still_work(
    engine: Database, postgres: Postgres
) -> None:
    assert logs_in(postgres, ADMIN, ADMIN_PASSWORD)
    engine.rotate_root(CONNECTION)
    assert not logs_in(postgres, ADMIN, ADMIN_PASSWORD)
    engine.reset_connection(CONNECTION)
    creds: dict[str, Any] = dict(engine.generate_credentials("app"))
    assert logs_in(postgres, creds["username"], creds["password"].reveal())
