"""Calls of the database engine (spec 4.8), against any mount (default ``database``).

One method per endpoint: connections (configure, read, list, delete, reset,
rotate-root), roles (write, read, list, delete, creds), static roles (write,
read, list, delete, creds, rotate). Passwords come back as
:class:`~toolkit.Sensitive`; the root password given to a connection is sent
once and never returned. The views read many records concurrently:

- :meth:`Database.connections_frame`: one row per connection;
- :meth:`Database.roles_frame`: one row per dynamic role, with whether its
  connection still allows it;
- :meth:`Database.static_roles_frame`: one row per static role with its last and
  next rotation, judged on the server's clock.

Reads accept both the spec's field names and the real server's where they
differ (``root_rotation_statements`` / ``root_credentials_rotate_statements``,
``last_service_rotation`` / ``last_vault_rotation``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from .._coverage import Coverage, carries_coverage, carry
from .._errors import DecodeError, InputError
from .._frames import Schema, build_frame
from .._masking import Sensitive, hidden
from .._records import Record, text
from .._time import later, parse_time
from ..findings import Finding, findings_frame
from ._base import Names, fields_of, hide, listed_keys, warnings_of
from ._credentials import CredentialEngine, required

__all__ = ["CONNECTIONS", "DB_ROLES", "STATIC_ROLES", "Database", "connection_findings"]

CONNECTIONS = Schema.of(
    """name plugin_name plugin_version connection_url username allowed_roles:object
    root_rotation_statements:int password_policy verify_connection:bool""",
    index="name",
)
DB_ROLES = Schema.of(
    """name db_name default_ttl:int max_ttl:int creation_statements:int revocation_statements:int
    renew_statements:int rollback_statements:int allowed:bool""",
    index="name",
)
STATIC_ROLES = Schema.of(
    """name db_name username rotation_period:int last_rotation:datetime next_rotation:datetime
    ttl:int overdue:bool allowed:bool""",
    index="name",
)

Duration = int | str
# A list of names (the class defines methods named like the types).
_STATEMENT_LISTS = (
    "creation_statements",
    "revocation_statements",
    "renew_statements",
    "rollback_statements",
)


def _statements(name: str, value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) for v in items):
        raise InputError(f"{name} must be a list of statements (strings)")
    return items


def _allows(patterns: Sequence[str], role: str) -> bool:
    """Whether a connection's ``allowed_roles`` let ``role`` in (``*`` and globs)."""
    return any(p == "*" or fnmatch.fnmatchcase(role, p) for p in patterns)


def _seconds(value: Any) -> int:
    """Seconds as the server gives a ttl (a number, or digits)."""
    try:
        return int(float(value or 0))
    except (ValueError, TypeError, OverflowError):
        raise DecodeError("the server's answer has a ttl that is not a number of seconds") from None


class Database(CredentialEngine):
    """The database engine (spec 4.8); ``client.database.at(path)`` for another mount."""

    credentials_kind = "database-credentials"

    # -- connections -----------------------------------------------------------------
    def list_connections(self) -> Names:
        """Connection names. ``LIST /database/config``."""
        return self._list(self._path("config"))

    def configure_connection(
        self,
        name: str,
        plugin_name: str,
        *,
        connection_url: str | None = None,
        username: str | None = None,
        password: str | Sensitive | None = None,
        allowed_roles: Sequence[str] | str | None = None,
        root_rotation_statements: Sequence[str] | None = None,
        password_policy: str | None = None,
        verify_connection: bool = True,
        plugin_version: str | None = None,
        **details: Any,
    ) -> Record:
        """Create or update a connection. ``POST /database/config/:name``.

        ``plugin_name`` names a database plugin of the catalog; ``connection_url``,
        ``username``, ``password`` and any other ``details`` are the plugin's own
        parameters (templated URLs such as ``postgresql://{{username}}:{{password}}@host/db``
        let the root password rotate). ``allowed_roles`` lists the roles that may
        use the connection (``*`` for any). The password is sent, never returned.
        Returns the connection as :meth:`read_connection` does, with the server's
        ``warnings`` (for example a password written into the URL).
        """
        required(connection_name=name, plugin_name=plugin_name)
        given = {
            "connection_url": connection_url,
            "username": username,
            "password_policy": password_policy,
            "plugin_version": plugin_version,
        }
        body: dict[str, Any] = {"plugin_name": plugin_name, "verify_connection": verify_connection}
        body |= {key: value for key, value in given.items() if value is not None}
        if password is not None:
            body["password"] = hidden(password, "password")
            del password
        if allowed_roles is not None:
            body["allowed_roles"] = (
                [allowed_roles] if isinstance(allowed_roles, str) else list(allowed_roles)
            )
        statements = _statements("root_rotation_statements", root_rotation_statements)
        if statements is not None:
            body["root_rotation_statements"] = statements
        body.update(details)
        payload = self._send("POST", self._path("config/{name}", name=name), body)
        record = self.read_connection(name)
        record["warnings"] = warnings_of(payload)
        return record

    def read_connection(self, name: str) -> Record:
        """A connection without its password. ``GET /database/config/:name``.

        Fields ``name``, ``plugin_name``, ``plugin_version``, ``connection_url``,
        ``username`` (from ``connection_details``), ``connection_details`` (the
        plugin's parameters), ``allowed_roles``, ``root_rotation_statements``,
        ``password_policy``, ``verify_connection``.
        """
        required(connection_name=name)
        data = self._read(self._path("config/{name}", name=name))
        details = dict(fields_of(data.get("connection_details"), "connection_details"))
        details.pop("password", None)
        rotation = data.get("root_credentials_rotate_statements")
        if rotation is None:
            rotation = data.get("root_rotation_statements")
        return Record(
            {
                "name": name,
                "plugin_name": data.get("plugin_name") or "",
                "plugin_version": data.get("plugin_version") or "",
                "connection_url": details.get("connection_url"),
                "username": details.get("username"),
                "connection_details": details,
                "allowed_roles": listed_keys(data.get("allowed_roles"), "allowed_roles"),
                "root_rotation_statements": listed_keys(rotation, "root_rotation_statements"),
                "password_policy": data.get("password_policy") or "",
                "verify_connection": data.get("verify_connection"),
            },
            kind="database-connection",
        )

    def delete_connection(self, name: str) -> None:
        """Delete a connection. ``DELETE /database/config/:name``.

        Leases issued through it can no longer be revoked by the engine.
        """
        required(connection_name=name)
        self._send("DELETE", self._path("config/{name}", name=name))

    def reset_connection(self, name: str) -> None:
        """Close the connection and restart its plugin. ``POST /database/reset/:name``."""
        required(connection_name=name)
        self._send("POST", self._path("reset/{name}", name=name))

    def rotate_root(self, name: str) -> None:
        """Rotate the connection's root password. ``POST /database/rotate-root/:name``.

        The new password is known only to the server; it is never returned.
        """
        required(connection_name=name)
        self._send("POST", self._path("rotate-root/{name}", name=name))

    # -- roles -------------------------------------------------------------------------
    def write_role(
        self,
        name: str,
        db_name: str,
        creation_statements: Sequence[str] | str,
        *,
        revocation_statements: Sequence[str] | str | None = None,
        rollback_statements: Sequence[str] | str | None = None,
        renew_statements: Sequence[str] | str | None = None,
        default_ttl: Duration | None = None,
        max_ttl: Duration | None = None,
    ) -> Record:
        """Create or update a role. ``POST /database/roles/:name``.

        Statements may use ``{{name}}``, ``{{password}}`` and ``{{expiration}}``.
        ``default_ttl`` and ``max_ttl`` are seconds or text such as ``1h``
        (0: the mount's). Returns the role as :meth:`read_role` does.
        """
        required(role_name=name, db_name=db_name)
        creation = _statements("creation_statements", creation_statements) or []
        if not creation:
            raise InputError("at least one creation statement is required")
        body: dict[str, Any] = {"db_name": db_name, "creation_statements": creation}
        for key, value in (
            ("revocation_statements", revocation_statements),
            ("rollback_statements", rollback_statements),
            ("renew_statements", renew_statements),
        ):
            listed = _statements(key, value)
            if listed is not None:
                body[key] = listed
        if default_ttl is not None:
            body["default_ttl"] = default_ttl
        if max_ttl is not None:
            body["max_ttl"] = max_ttl
        self._send("POST", self._path("roles/{name}", name=name), body)
        return self.read_role(name)

    def read_role(self, name: str) -> Record:
        """A dynamic role. ``GET /database/roles/:name``.

        Fields ``name``, ``db_name``, the four statement lists, ``default_ttl``
        and ``max_ttl`` (seconds).
        """
        required(role_name=name)
        data = self._read(self._path("roles/{name}", name=name))
        return Record(
            {
                "name": name,
                "db_name": text(data.get("db_name"), "db_name") or "",
                **{key: listed_keys(data.get(key), key) for key in _STATEMENT_LISTS},
                "default_ttl": _seconds(data.get("default_ttl")),
                "max_ttl": _seconds(data.get("max_ttl")),
            },
            kind="database-role",
        )

    # -- static roles ------------------------------------------------------------------
    def list_static_roles(self) -> Names:
        """Static role names. ``LIST /database/static-roles``."""
        return self._list(self._path("static-roles"))

    def write_static_role(
        self,
        name: str,
        db_name: str,
        username: str,
        rotation_period: Duration,
        *,
        rotation_statements: Sequence[str] | str | None = None,
    ) -> Record:
        """Create or update a static role. ``POST /database/static-roles/:name``.

        The server rotates the user's password at creation, then every
        ``rotation_period`` (at least 5 seconds); the username cannot change
        afterwards. Returns the role as :meth:`read_static_role` does.
        """
        required(role_name=name, db_name=db_name, username=username)
        if isinstance(rotation_period, int) and rotation_period < 5:
            raise InputError(f"rotation_period must be 5 seconds or more, not {rotation_period}")
        body: dict[str, Any] = {
            "db_name": db_name,
            "username": username,
            "rotation_period": rotation_period,
        }
        statements = _statements("rotation_statements", rotation_statements)
        if statements is not None:
            body["rotation_statements"] = statements
        self._send("POST", self._path("static-roles/{name}", name=name), body)
        return self.read_static_role(name)

    def read_static_role(self, name: str) -> Record:
        """A static role. ``GET /database/static-roles/:name``.

        Fields ``name``, ``db_name``, ``username``, ``rotation_statements``,
        ``rotation_period`` (seconds), ``last_rotation`` and ``next_rotation``
        (aware datetimes; None when the server has not rotated yet).
        """
        required(role_name=name)
        data = self._read(self._path("static-roles/{name}", name=name))
        period = _seconds(data.get("rotation_period"))
        last = parse_time(data.get("last_service_rotation") or data.get("last_vault_rotation"))
        return Record(
            {
                "name": name,
                "db_name": text(data.get("db_name"), "db_name") or "",
                "username": data.get("username") or "",
                "rotation_statements": listed_keys(
                    data.get("rotation_statements"), "rotation_statements"
                ),
                "rotation_period": period,
                "last_rotation": last,
                "next_rotation": later(last, period),
            },
            kind="database-static-role",
        )

    def delete_static_role(self, name: str) -> None:
        """Delete a static role; the server also drops its database user.

        ``DELETE /database/static-roles/:name``.
        """
        required(role_name=name)
        self._send("DELETE", self._path("static-roles/{name}", name=name))

    def static_credentials(self, name: str) -> Record:
        """A static role's current credentials. ``GET /database/static-creds/:name``.

        Fields ``username``, ``password`` (:class:`~toolkit.Sensitive`),
        ``last_rotation`` (aware datetime), ``rotation_period`` and ``ttl``
        (seconds until the next rotation).
        """
        required(role_name=name)
        data = self._read(self._path("static-creds/{name}", name=name))
        hide(data, "password", label="password")
        return Record(
            {
                "name": name,
                "username": data.get("username"),
                "password": data.get("password"),
                "last_rotation": parse_time(
                    data.get("last_service_rotation") or data.get("last_vault_rotation")
                ),
                "rotation_period": _seconds(data.get("rotation_period")),
                "ttl": _seconds(data.get("ttl")),
            },
            kind="database-static-credentials",
        )

    def rotate_static_role(self, name: str) -> Record:
        """Rotate a static role's password now; its period starts again.

        ``POST /database/rotate-role/:name``. Returns the role as
        :meth:`read_static_role` does, with the new ``last_rotation``.
        """
        required(role_name=name)
        self._send("POST", self._path("rotate-role/{name}", name=name))
        return self.read_static_role(name)

    # -- views -------------------------------------------------------------------------
    def _connections(self, cov: Coverage | None = None) -> list[Record]:
        cov = cov if cov is not None else self._coverage("connections")
        return self._read_each(cov, self.list_connections(), self.read_connection, "config")

    def connections_frame(self) -> pd.DataFrame:
        """One row per connection (index ``name``); never a password.

        Columns ``plugin_name``, ``plugin_version``, ``connection_url`` (redacted
        by the server), ``username``, ``allowed_roles`` (list),
        ``root_rotation_statements`` (how many), ``password_policy``,
        ``verify_connection``.
        """
        cov = self._coverage("connections_frame")
        rows = [
            {**c, "root_rotation_statements": len(c["root_rotation_statements"])}
            for c in self._connections(cov)
        ]
        return cov.attach(build_frame(rows, CONNECTIONS))

    def roles_frame(self) -> pd.DataFrame:
        """One row per dynamic role (index ``name``).

        Columns ``db_name``, ``default_ttl``, ``max_ttl`` (seconds, 0 for the
        mount's), how many statements of each kind, and ``allowed``: whether the
        role's connection exists and lists it in ``allowed_roles``.
        """
        cov = self._coverage("roles_frame")
        roles = self._read_each(cov, self.list_roles(), self.read_role, "roles")
        allowed = self._allowed_by_connection(cov)
        rows = [
            {
                **r,
                **{key: len(r[key]) for key in _STATEMENT_LISTS},
                "allowed": _allows(allowed.get(r["db_name"], ()), r["name"]),
            }
            for r in roles
        ]
        return cov.attach(build_frame(rows, DB_ROLES))

    def static_roles_frame(self, *, now: datetime | None = None) -> pd.DataFrame:
        """One row per static role (index ``name``), soonest rotation first.

        Columns ``db_name``, ``username``, ``rotation_period`` (seconds),
        ``last_rotation``, ``next_rotation`` (last rotation + period), ``ttl``
        (seconds until then, 0 once passed), ``overdue`` (the next rotation has
        passed: the server did not rotate), ``allowed`` (the connection still
        lets the role in). Judged on the server's clock (its ``Date`` header)
        unless ``now`` is given.
        """
        cov = self._coverage("static_roles_frame")
        roles = self._read_each(
            cov, self.list_static_roles(), self.read_static_role, "static-roles"
        )
        allowed = self._allowed_by_connection(cov)
        reference = now or self._http.server_now()
        rows = []
        for role in roles:
            due = role["next_rotation"]
            left = (due - reference).total_seconds() if due else None
            rows.append(
                {
                    **role,
                    "ttl": max(0, int(left)) if left is not None else None,
                    "overdue": left is not None and left < 0,
                    "allowed": _allows(allowed.get(role["db_name"], ()), role["name"]),
                }
            )
        frame = build_frame(rows, STATIC_ROLES)
        return cov.attach(frame.sort_values("next_rotation", kind="stable", na_position="last"))

    def _allowed_by_connection(self, cov: Coverage) -> Mapping[str, Sequence[str]]:
        return {c["name"]: c["allowed_roles"] for c in self._connections(cov)}

    def findings(self) -> pd.DataFrame:
        """What is risky in this mount's connections: :func:`connection_findings` of
        :meth:`connections_frame` (``LIST`` then ``GET /<mount>/config/:name`` each)."""
        connections = self.connections_frame()
        found = connection_findings(connections, self.mount)
        return carry(found, connections, view="database.findings")


@carries_coverage("database.connection_findings")
def connection_findings(connections: pd.DataFrame, mount: str = "database") -> pd.DataFrame:
    """Findings of a :meth:`Database.connections_frame` frame.

    - **high**: ``allowed_roles`` holds ``*``: every role on the mount, present
      and future, may issue credentials through this connection;
    - **medium**: ``verify_connection`` false: the configuration was saved
      without checking it reaches the database, so a typo shows only when
      credentials are first asked for.
    """
    found = []
    for name, row in connections.iterrows():
        where = f"{mount.strip('/')}/config/{name}"
        if "*" in list(row["allowed_roles"] or []):
            reason = "allowed_roles is *: every role, present and future, may use it"
            found.append(Finding("high", "database", where, reason))
        verify = row["verify_connection"]
        if not pd.isna(verify) and not bool(verify):
            reason = "verify_connection is false: saved without checking it connects"
            found.append(Finding("medium", "database", where, reason))
    return findings_frame(found)
