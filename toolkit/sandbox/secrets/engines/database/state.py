"""The database engine (spec 4.8): state and rules, no HTTP.

One :class:`DatabaseEngine` per mount holds the connections, roles and static roles,
and a simulated database behind each connection: the sandbox reaches no real
database, so each connection keeps the users it knows and a log of the
statements the engine ran (``{{name}}``, ``{{username}}``, ``{{password}}``,
``{{expiration}}`` rendered), which tests read through :meth:`DatabaseEngine.statements`
and :meth:`DatabaseEngine.users`. That log holds passwords, as a real database's
statement log would: it is never served over HTTP, never in a ``repr``.

Rules, as the real server applies them (OpenBao's ``database`` engine):

- a connection names a database plugin of the catalog; ``verify_connection``
  (default true) checks the plugin's connection parameters are well formed,
  as connecting would; the password is never returned and a password written
  into ``connection_url`` is shown redacted;
- a role's ``db_name`` must name a connection; its ``allowed_roles`` must hold
  the role (or ``*``) when creds are issued, not when the role is written (a
  role can be written before the connection allows it, as on the real server);
- dynamic creds are leases whose revocation runs the role's revocation
  statements (the plugin's default when it has none); when the connection is
  gone the revocation fails and the lease becomes irrevocable;
- static roles rotate on the sandbox clock: every call first rotates the roles
  whose ``last rotation + rotation_period`` has passed, stamping the rotation
  at the instant it fell due, as a server running all along would have.

What each plugin family requires and how its statements look is in
:mod:`.plugins`. The state methods take typed requests
(:class:`ConnectionWrite`, :class:`RoleWrite`, :class:`StaticRoleWrite`) that
``http/database.py`` reads from the request bodies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from ....._time import format_rfc3339
from ..._credentials import (
    Credentials,
    Requester,
    creds_lease,
    generate_password,
    lease_ttls,
)
from ...errors import InvalidRequest, SecretsError
from .plugins import (
    check_details,
    default_password,
    dialect_of,
    render,
    url_password,
    username_for,
)

if TYPE_CHECKING:
    from ...host import EngineHost
    from ...leases import Lease
    from ...mounts import Mount

__all__ = [
    "ENGINE_FIELDS",
    "Connection",
    "ConnectionWrite",
    "DatabaseEngine",
    "ExecutedStatement",
    "DatabaseRole",
    "RoleWrite",
    "StaticRole",
    "StaticRoleWrite",
]

T = TypeVar("T")

# The queue tick of the real server: a static role cannot rotate more often.
MIN_ROTATION_PERIOD = 5
# Creds outlive their lease by this much, so the user never expires first.
EXPIRATION_BUFFER = 5

# Fields of a connection write that belong to the engine, not to the plugin.
ENGINE_FIELDS = (
    "name",
    "plugin_name",
    "plugin_version",
    "allowed_roles",
    "verify_connection",
    "root_rotation_statements",
    "password_policy",
)
# Connection parameters never returned on read.
SECRET_DETAILS = ("password", "private_key")


@dataclass
class Connection:
    """One ``config/:name``. ``details`` holds the plugin's parameters, password included."""

    name: str
    plugin_name: str
    plugin_version: str = ""
    details: dict[str, Any] = field(default_factory=dict, repr=False)
    allowed_roles: list[str] = field(default_factory=list)
    root_rotation_statements: list[str] = field(default_factory=list)
    password_policy: str = ""
    verify_connection: bool = True
    restarts: int = 0  # times the plugin was (re)started: at write and by reset/:name

    def allows(self, role: str) -> bool:
        """Whether ``allowed_roles`` lets ``role`` use this connection (``*`` or a glob)."""
        return any(
            pattern == "*" or re.fullmatch(_glob(pattern), role) is not None
            for pattern in self.allowed_roles
        )


@dataclass
class DatabaseRole:
    """One dynamic role (``roles/:name``); ttls in seconds, 0 meaning the mount's."""

    name: str
    db_name: str
    creation_statements: list[str]
    revocation_statements: list[str] = field(default_factory=list)
    rollback_statements: list[str] = field(default_factory=list)
    renew_statements: list[str] = field(default_factory=list)
    default_ttl: int = 0
    max_ttl: int = 0


@dataclass
class StaticRole:
    """One static role (``static-roles/:name``): a database user whose password rotates."""

    name: str
    db_name: str
    username: str
    rotation_period: int
    rotation_statements: list[str] = field(default_factory=list)
    password: str = field(default="", repr=False)
    last_rotation: datetime | None = None

    @property
    def next_rotation(self) -> datetime | None:
        if self.last_rotation is None:
            return None
        return self.last_rotation + timedelta(seconds=self.rotation_period)


@dataclass(frozen=True)
class ConnectionWrite:
    """What a ``POST config/:name`` asks, as the HTTP side read it.

    None (or an empty ``details``) keeps what an existing connection has;
    ``details`` are the plugin's own parameters (``connection_url``, ``username``,
    ``password``, ...), merged into the stored ones.
    """

    plugin_name: str | None = None
    plugin_version: str | None = None
    verify_connection: bool = True
    allowed_roles: list[str] | None = None
    root_rotation_statements: list[str] | None = None
    password_policy: str | None = None
    details: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class RoleWrite:
    """What a ``POST roles/:name`` asks (None: keep the role's value, or the default)."""

    db_name: str | None = None
    creation_statements: list[str] | None = None
    revocation_statements: list[str] | None = None
    rollback_statements: list[str] | None = None
    renew_statements: list[str] | None = None
    default_ttl: int | None = None
    max_ttl: int | None = None


@dataclass(frozen=True)
class StaticRoleWrite:
    """What a ``POST static-roles/:name`` asks (None: keep the role's value)."""

    db_name: str | None = None
    username: str | None = None
    rotation_period: int | None = None
    rotation_statements: list[str] | None = None


@dataclass(frozen=True)
class ExecutedStatement:
    """One statement the simulated database ran. ``statement`` may hold a password."""

    time: datetime
    connection: str
    operation: str  # creds, revoke, static-create, static-rotate, static-delete, rotate-root
    username: str
    statement: str = field(repr=False)


class DatabaseEngine:
    """One mount's state of the database engine (spec 4.8)."""

    def __init__(self, service: EngineHost, mount: Mount) -> None:
        self.service = service
        self.mount = mount
        self.connections: dict[str, Connection] = {}
        self.roles: dict[str, DatabaseRole] = {}
        self.static_roles: dict[str, StaticRole] = {}
        # The simulated database behind each connection: its users and its statement log.
        self._users: dict[str, set[str]] = {}
        self._log: list[ExecutedStatement] = []

    def __repr__(self) -> str:
        return (
            f"<DatabaseEngine {self.mount.path} {len(self.connections)} connections, "
            f"{len(self.roles)} roles, {len(self.static_roles)} static roles>"
        )

    # -- what the simulated databases saw (for tests; never served) ---------------
    def statements(self, connection: str) -> tuple[ExecutedStatement, ...]:
        """Every statement run against ``connection``'s database, oldest first."""
        return tuple(s for s in self._log if s.connection == connection)

    def users(self, connection: str) -> frozenset[str]:
        """The users the engine created or manages in ``connection``'s database."""
        return frozenset(self._users.get(connection, ()))

    # -- connections -------------------------------------------------------------
    def connection(self, name: str) -> Connection:
        """The connection ``name``; 400 as the real server's lookup failure."""
        self.rotate_due()
        found = self.connections.get(name)
        if found is None:
            raise InvalidRequest(f'failed to find entry for connection with name: "{name}"')
        return found

    def configure(self, name: str, request: ConnectionWrite) -> list[str]:
        """Write ``config/:name`` (a create, or an update merging into the old); warnings.

        Every field is checked, and the plugin "started" (verified when
        ``verify_connection``), before anything is stored.
        """
        self.rotate_due()
        old = self.connections.get(name)
        base = old or Connection(name=name, plugin_name="", details={})
        plugin_name = _keep(request.plugin_name, base.plugin_name)
        if not plugin_name:
            raise InvalidRequest("empty plugin name")
        version = _keep(request.plugin_version, base.plugin_version)
        try:
            self.service.plugins.runnable("database", plugin_name, version)
        except SecretsError as exc:
            raise InvalidRequest("error creating database object: " + exc.messages[0]) from None
        verify = request.verify_connection
        allowed = list(_keep(request.allowed_roles, base.allowed_roles))
        rotation = list(_keep(request.root_rotation_statements, base.root_rotation_statements))
        policy = _keep(request.password_policy, base.password_policy)
        details = dict(base.details)
        details.update(request.details)
        dialect = dialect_of(plugin_name)
        check_details(dialect, details, verify)
        connection = Connection(
            name=name,
            plugin_name=plugin_name,
            plugin_version=version if version != _builtin_version(self, plugin_name) else "",
            details=details,
            allowed_roles=allowed,
            root_rotation_statements=rotation,
            password_policy=policy,
            verify_connection=verify,
            restarts=(old.restarts if old else 0) + 1,
        )
        self.connections[name] = connection
        users = self._users.setdefault(name, set())
        root = details.get("username")
        if isinstance(root, str) and root:
            users.add(root)
        warnings = []
        url = details.get("connection_url")
        if isinstance(url, str) and url_password(url) is not None:
            warnings.append(
                "Password found in connection_url, use a templated url to enable root "
                "rotation and prevent read access to password information."
            )
        return warnings

    def delete_connection(self, name: str) -> None:
        """``DELETE config/:name``: the configuration goes; leases on it become unrevocable."""
        self.rotate_due()
        self.connections.pop(name, None)

    def reset(self, name: str) -> None:
        """``POST reset/:name``: close the plugin and start it again from the stored config
        (which checks its binary against the catalog again, as every start does)."""
        connection = self.connection(name)
        self.service.plugins.runnable("database", connection.plugin_name, connection.plugin_version)
        connection.restarts += 1

    def rotate_root(self, name: str) -> None:
        """``POST rotate-root/:name``: a new root password, set in the database and stored."""
        connection = self.connection(name)
        username = connection.details.get("username")
        if not isinstance(username, str) or not username:
            raise InvalidRequest("unable to rotate root credentials: no username in configuration")
        old = connection.details.get("password")
        if not isinstance(old, str) or not old:
            raise InvalidRequest("unable to rotate root credentials: no password in configuration")
        password = self._password(connection)
        dialect = dialect_of(connection.plugin_name)
        statements = connection.root_rotation_statements or [dialect.rotate]
        self._run(connection, "rotate-root", username, statements, password=password)
        connection.details["password"] = password
        connection.restarts += 1

    # -- roles -------------------------------------------------------------------
    def _check_role_name(self, name: str, *, static: bool) -> None:
        clash = name in (self.roles if static else self.static_roles)
        if clash:
            raise InvalidRequest("Role and Static Role names must be unique")

    def _allowed_connection(self, db_name: str, role: str) -> Connection:
        connection = self.connection(db_name)
        if not connection.allows(role):
            raise InvalidRequest(f'"{role}" is not an allowed role')
        return connection

    def write_role(self, name: str, request: RoleWrite) -> None:
        """``POST roles/:name`` (create, or update keeping what the request leaves out)."""
        self.rotate_due()
        self._check_role_name(name, static=False)
        old = self.roles.get(name)
        db_name = _keep(request.db_name, old.db_name if old else "")
        if not db_name:
            raise InvalidRequest("database name is required")
        creation = list(_keep(request.creation_statements, old.creation_statements if old else []))
        if not creation:
            raise InvalidRequest("missing creation_statements")
        revocation = _keep(request.revocation_statements, old.revocation_statements if old else [])
        rollback = _keep(request.rollback_statements, old.rollback_statements if old else [])
        renew = _keep(request.renew_statements, old.renew_statements if old else [])
        default_ttl = _keep(request.default_ttl, old.default_ttl if old else 0)
        max_ttl = _keep(request.max_ttl, old.max_ttl if old else 0)
        self._check_ttls(default_ttl, max_ttl)
        self.connection(db_name)  # allowed_roles is checked when creds are issued
        self.roles[name] = DatabaseRole(
            name=name,
            db_name=db_name,
            creation_statements=creation,
            revocation_statements=list(revocation),
            rollback_statements=list(rollback),
            renew_statements=list(renew),
            default_ttl=default_ttl,
            max_ttl=max_ttl,
        )

    def _check_ttls(self, default_ttl: int, max_ttl: int) -> None:
        _, mount_max = self.mount.lease_ttls()
        for key, value in (("default_ttl", default_ttl), ("max_ttl", max_ttl)):
            if value < 0:
                raise InvalidRequest(f"{key}: cannot be negative")
            if value > mount_max:
                raise InvalidRequest(
                    f"{key}: {value}s is longer than the mount's maximum lease ttl ({mount_max}s)",
                )
        if max_ttl and default_ttl > max_ttl:
            raise InvalidRequest("default_ttl: cannot be greater than max_ttl")

    def role(self, name: str) -> DatabaseRole | None:
        self.rotate_due()
        return self.roles.get(name)

    def delete_role(self, name: str) -> None:
        """``DELETE roles/:name``; issued creds keep their revocation statements."""
        self.rotate_due()
        self.roles.pop(name, None)

    def issue_creds(self, name: str, requester: Requester) -> tuple[Credentials, Lease]:
        """``GET creds/:name``: a new database user, and the lease that will drop it."""
        self.rotate_due()
        role = self.roles.get(name)
        if role is None:
            raise InvalidRequest(f"unknown role: {name}")
        connection = self._allowed_connection(role.db_name, name)
        ttl, max_ttl = ttls = lease_ttls(self.mount, role.default_ttl, role.max_ttl)
        password = self._password(connection)
        dialect = dialect_of(connection.plugin_name)
        now = requester.issued_at or self.service.clock.now()
        username = username_for(dialect, requester.display_name, name, now)
        expiration = (now + timedelta(seconds=ttl + EXPIRATION_BUFFER)).strftime(
            "%Y-%m-%d %H:%M:%S%z"
        )
        self._run(
            connection,
            "creds",
            username,
            role.creation_statements,
            password=password,
            expiration=expiration,
            at=now,
        )
        self._users.setdefault(connection.name, set()).add(username)
        lease = creds_lease(
            self,
            name,
            requester,
            ttls,
            {
                "username": username,
                "role": name,
                "db_name": role.db_name,
                "revocation_statements": list(role.revocation_statements),
            },
        )
        return Credentials(username, password), lease

    def revoke_creds(self, lease: Lease) -> None:
        """A creds lease ends: run its revocation statements and drop the user."""
        data = lease.data or {}
        username = str(data.get("username", ""))
        db_name = str(data.get("db_name", ""))
        connection = self.connections.get(db_name)
        if connection is None:
            raise InvalidRequest(f'failed to find entry for connection with name: "{db_name}"')
        statements = list(data.get("revocation_statements") or [])
        statements = statements or [dialect_of(connection.plugin_name).revoke]
        self._run(connection, "revoke", username, statements)
        self._users.get(db_name, set()).discard(username)

    # -- static roles ------------------------------------------------------------
    def write_static_role(
        self, name: str, request: StaticRoleWrite, *, rotated_at: datetime | None = None
    ) -> None:
        """``POST static-roles/:name``: a create rotates the password at once.

        ``rotated_at`` backdates that first rotation (demo data).
        """
        self.rotate_due()
        self._check_role_name(name, static=True)
        old = self.static_roles.get(name)
        creating = old is None
        db_name = _keep(request.db_name, old.db_name if old else "")
        if not db_name:
            raise InvalidRequest("database name is a required field")
        username = request.username or ""
        if creating and not username:
            raise InvalidRequest("username is a required field to create a static account")
        if old is not None and username and username != old.username:
            raise InvalidRequest("cannot update static account username")
        if request.rotation_period is None and creating:
            raise InvalidRequest("rotation_period is required to create static accounts")
        period = _keep(request.rotation_period, old.rotation_period if old else 0)
        if period < MIN_ROTATION_PERIOD:
            raise InvalidRequest(f"rotation_period must be {MIN_ROTATION_PERIOD} seconds or more")
        statements = list(
            _keep(request.rotation_statements, old.rotation_statements if old else [])
        )
        connection = self._allowed_connection(db_name, name)
        if old is not None:
            old.db_name, old.rotation_period, old.rotation_statements = db_name, period, statements
            return
        role = StaticRole(
            name=name,
            db_name=db_name,
            username=username,
            rotation_period=period,
            rotation_statements=statements,
        )
        self._rotate_static(
            role, connection, rotated_at or self.service.clock.now(), "static-create"
        )
        self._users.setdefault(db_name, set()).add(role.username)
        self.static_roles[name] = role

    def delete_static_role(self, name: str) -> None:
        """``DELETE static-roles/:name``: the role goes and its database user is dropped."""
        self.rotate_due()
        role = self.static_roles.pop(name, None)
        if role is None:
            return
        connection = self.connections.get(role.db_name)
        if connection is not None:
            revoke = dialect_of(connection.plugin_name).revoke
            self._run(connection, "static-delete", role.username, [revoke])
            self._users.get(role.db_name, set()).discard(role.username)

    def static_creds(self, name: str) -> tuple[StaticRole, datetime]:
        """``GET static-creds/:name``: the role with its current password, and the time
        it was read at (its ttl counts from then)."""
        self.rotate_due()
        role = self.static_roles.get(name)
        if role is None:
            raise InvalidRequest(f"unknown role: {name}")
        self._allowed_connection(role.db_name, name)
        return role, self.service.clock.now()

    def rotate_role(self, name: str) -> None:
        """``POST rotate-role/:name``: a new password now; the period starts again."""
        self.rotate_due()
        role = self.static_roles.get(name)
        if role is None:
            raise InvalidRequest("no static role found for role name")
        connection = self.connection(role.db_name)
        self._rotate_static(role, connection, self.service.clock.now(), "static-rotate")

    def rotate_due(self) -> None:
        """Rotate every static role whose rotation has fallen due on the sandbox clock."""
        now = self.service.clock.now()
        for role in self.static_roles.values():
            due = role.next_rotation
            if due is None or due > now or role.last_rotation is None:
                continue
            connection = self.connections.get(role.db_name)
            if connection is None:
                continue  # the real server retries; nothing to rotate against here
            periods = int((now - role.last_rotation).total_seconds() // role.rotation_period)
            stamp = role.last_rotation + timedelta(seconds=periods * role.rotation_period)
            self._rotate_static(role, connection, stamp, "static-rotate")

    def _rotate_static(
        self, role: StaticRole, connection: Connection, at: datetime, operation: str
    ) -> None:
        password = self._password(connection)
        statements = role.rotation_statements or [dialect_of(connection.plugin_name).rotate]
        self._run(connection, operation, role.username, statements, password=password, at=at)
        role.password = password
        role.last_rotation = at

    # -- the simulated database ----------------------------------------------------
    def _password(self, connection: Connection) -> str:
        return generate_password(
            self.service,
            connection.password_policy,
            default_password,
            "failed to generate password: ",
        )

    def _run(
        self,
        connection: Connection,
        operation: str,
        username: str,
        statements: list[str],
        *,
        password: str = "",
        expiration: str = "",
        at: datetime | None = None,
    ) -> None:
        when = at or self.service.clock.now()
        values = {
            "name": username,
            "username": username,
            "password": password,
            "expiration": expiration,
        }
        for statement in statements:
            self._log.append(
                ExecutedStatement(
                    when, connection.name, operation, username, render(statement, values)
                )
            )


def rfc3339(value: datetime) -> str:
    return format_rfc3339(value)


def _keep(given: T | None, current: T) -> T:
    """``given``, or ``current`` when the request left the field out (None)."""
    return current if given is None else given


def _builtin_version(db: DatabaseEngine, plugin_name: str) -> str:
    entry = db.service.plugins.get("database", plugin_name)
    return entry.version if entry is not None and entry.builtin else ""


def _glob(pattern: str) -> str:
    """A regex for an ``allowed_roles`` entry: ``*`` matches anything, the rest literally."""
    return ".*".join(re.escape(part) for part in pattern.split("*"))
