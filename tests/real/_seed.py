"""What the tests plant on the real servers, over plain HTTP: setup, not under test.

Thousands of real leases (tokens, database credentials), and the database
engine's connection to the real PostgreSQL.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.servers.openbao import OpenBao
from tests.servers.postgres import Postgres

WORKERS = 16


def token_role(bao: OpenBao, role: str, ttl: str = "2h") -> None:
    """A token role: tokens created through it have leases under ``auth/token/create/<role>/``."""
    with bao.http() as http:
        reply = http.post(f"auth/token/roles/{role}", json={"token_ttl": ttl, "orphan": True})
        assert reply.status_code == 204, reply.text


def tokens(bao: OpenBao, role: str, count: int, first_ttl: int = 3600) -> list[str]:
    """Create ``count`` tokens through ``role``, ttls ``first_ttl``, ``first_ttl + 1``, ...;
    returns the tokens."""
    token_role(bao, role, ttl=f"{first_ttl + count}s")
    with bao.http() as http:

        def one(i: int) -> str:
            reply = http.post(f"auth/token/create/{role}", json={"ttl": f"{first_ttl + i}s"})
            assert reply.status_code == 200, reply.text
            return str(reply.json()["auth"]["client_token"])

        with ThreadPoolExecutor(WORKERS) as pool:
            return list(pool.map(one, range(count)))


def lease_keys(bao: OpenBao, prefix: str) -> list[str]:
    """The server's own listing of ``sys/leases/lookup/<prefix>`` (one level)."""
    with bao.http() as http:
        reply = http.request("LIST", f"sys/leases/lookup/{prefix}")
    if reply.status_code == 404:
        return []
    assert reply.status_code == 200, reply.text
    return list(reply.json()["data"]["keys"])


def read_many(bao: OpenBao, path: str, count: int) -> list[dict[str, Any]]:
    """``GET path`` ``count`` times concurrently (e.g. dynamic credentials); the bodies."""
    with bao.http() as http:

        def one(_: int) -> dict[str, Any]:
            reply = http.get(path)
            assert reply.status_code == 200, reply.text
            return dict(reply.json())

        with ThreadPoolExecutor(WORKERS) as pool:
            return list(pool.map(one, range(count)))


# Dropping the role alone keeps revoking a thousand leases fast; the plugin's
# default revocation walks every database's grants first.
CREATE_ROLE = (
    """CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';"""
)
DROP_ROLE = 'DROP ROLE IF EXISTS "{{name}}";'


def database_connection(bao: OpenBao, postgres: Postgres, mount: str, name: str) -> None:
    """Mount the database engine at ``mount`` (if needed) with a connection ``name`` to
    the real PostgreSQL, as its superuser."""
    with bao.http() as http:
        if f"{mount}/" not in http.get("sys/mounts").json()["data"]:
            reply = http.post(f"sys/mounts/{mount}", json={"type": "database"})
            assert reply.status_code == 204, reply.text
        reply = http.post(
            f"{mount}/config/{name}",
            json={
                "plugin_name": "postgresql-database-plugin",
                "connection_url": postgres.template_url,
                "username": postgres.user,
                "password": postgres.password,
                "allowed_roles": ["*"],
                "max_open_connections": 16,
            },
        )
        assert reply.status_code == 204, reply.text


def dynamic_role(bao: OpenBao, mount: str, connection: str, role: str, ttl: str = "1h") -> None:
    with bao.http() as http:
        reply = http.post(
            f"{mount}/roles/{role}",
            json={
                "db_name": connection,
                "creation_statements": [CREATE_ROLE],
                "revocation_statements": [DROP_ROLE],
                "default_ttl": ttl,
                "max_ttl": "24h",
            },
        )
        assert reply.status_code == 204, reply.text
