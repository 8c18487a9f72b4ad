"""Demo data of the database engine at ``database/``: written through the engine.

Three connections (PostgreSQL, MySQL, and a registered Snowflake plugin), the
dynamic roles the demo leases and the ``db-readers`` policy name (``readonly``,
``app``, ``reporting``), a MySQL writer role, three static roles whose last
rotations are spread before the clock's start, and a few live creds leases
issued at the clock's start with fixed ids. Passwords are random: nothing shows
them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from ..._credentials import Requester
from ...backends import demo_at
from .state import ConnectionWrite, DatabaseEngine, RoleWrite, StaticRoleWrite

if TYPE_CHECKING:
    from ...host import EngineHost

__all__ = ["load_demo"]

_PG_CREATE = [
    "CREATE ROLE \"{{name}}\" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';",
]
_PG_REVOKE = [
    'REVOKE ALL PRIVILEGES ON ALL TABLES IN SCHEMA public FROM "{{name}}";',
    'DROP ROLE IF EXISTS "{{name}}";',
]

_HOUR = 3600

_CONNECTIONS: dict[str, ConnectionWrite] = {
    "orders-postgres": ConnectionWrite(
        plugin_name="postgresql-database-plugin",
        allowed_roles=["readonly", "app", "reporting", "orders-*"],
        root_rotation_statements=["ALTER ROLE \"{{username}}\" WITH PASSWORD '{{password}}';"],
        details={
            "connection_url": "postgresql://{{username}}:{{password}}@orders-db.internal:5432/orders",
            "username": "vault-admin",
            "password": "demo-orders-root",
            "max_open_connections": 8,
        },
    ),
    "billing-mysql": ConnectionWrite(
        plugin_name="mysql-database-plugin",
        allowed_roles=["billing-*"],
        details={
            "connection_url": "{{username}}:{{password}}@tcp(billing-db.internal:3306)/",
            "username": "vault-admin",
            "password": "demo-billing-root",
        },
    ),
    "warehouse-snowflake": ConnectionWrite(
        plugin_name="snowflake-database-plugin",
        plugin_version="v0.10.0",
        allowed_roles=["*"],
        verify_connection=False,
        details={
            "connection_url": "{{username}}:{{password}}@acme-eu.snowflakecomputing.com/analytics",
            "username": "VAULT_ADMIN",
            "password": "demo-warehouse-root",
        },
    ),
}

_ROLES: dict[str, RoleWrite] = {
    "readonly": RoleWrite(
        db_name="orders-postgres",
        creation_statements=[
            *_PG_CREATE,
            'GRANT SELECT ON ALL TABLES IN SCHEMA public TO "{{name}}";',
        ],
        revocation_statements=_PG_REVOKE,
        default_ttl=1 * _HOUR,
        max_ttl=72 * _HOUR,
    ),
    "app": RoleWrite(
        db_name="orders-postgres",
        creation_statements=[
            *_PG_CREATE,
            'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "{{name}}";',
        ],
        revocation_statements=_PG_REVOKE,
        renew_statements=["ALTER ROLE \"{{name}}\" VALID UNTIL '{{expiration}}';"],
        default_ttl=4 * _HOUR,
        max_ttl=168 * _HOUR,
    ),
    "reporting": RoleWrite(
        db_name="orders-postgres",
        creation_statements=[*_PG_CREATE, 'GRANT reporting TO "{{name}}";'],
        default_ttl=_HOUR // 2,
        max_ttl=24 * _HOUR,
    ),
    "billing-writer": RoleWrite(
        db_name="billing-mysql",
        creation_statements=[
            "CREATE USER '{{name}}'@'%' IDENTIFIED BY '{{password}}';",
            "GRANT SELECT, INSERT, UPDATE ON billing.* TO '{{name}}'@'%';",
        ],
        revocation_statements=["DROP USER IF EXISTS '{{name}}'@'%';"],
        default_ttl=2 * _HOUR,
        max_ttl=12 * _HOUR,
    ),
}

# name -> (connection, username, rotation period, last rotation before the clock's start)
_STATIC_ROLES: dict[str, tuple[str, str, int, timedelta]] = {
    "orders-batch": ("orders-postgres", "orders_batch", 24 * _HOUR, timedelta(hours=20)),
    "orders-migrations": ("orders-postgres", "migrator", 168 * _HOUR, timedelta(days=2)),
    "billing-etl": ("billing-mysql", "etl_billing", 12 * _HOUR, timedelta(hours=11, minutes=30)),
}

# (role, lease id suffix, display name of the token that asked)
_LIVE_CREDS = (
    ("readonly", "demoLiveReadonly0000001", "token-orders-api"),
    ("readonly", "demoLiveReadonly0000002", "token-orders-api"),
    ("app", "demoLiveApp00000000000001", "token-orders-worker"),
    ("billing-writer", "demoLiveBillingWriter001", "token-billing-job"),
)


@demo_at("database", DatabaseEngine)
def load_demo(service: EngineHost, db: DatabaseEngine) -> None:
    """Fill the ``database/`` mount with the demo set (after the plugins are registered)."""
    start = service.clock.start.replace(microsecond=0)
    for name, connection in _CONNECTIONS.items():
        db.configure(name, connection)
    for name, role_write in _ROLES.items():
        db.write_role(name, role_write)
    for name, (connection_name, username, period, ago) in _STATIC_ROLES.items():
        db.write_static_role(
            name,
            StaticRoleWrite(db_name=connection_name, username=username, rotation_period=period),
            rotated_at=start - ago,
        )
    for role, suffix, display_name in _LIVE_CREDS:
        db.issue_creds(role, Requester(display_name, issued_at=start, lease_suffix=suffix))
