"""What the sandbox knows of the database plugins (spec 4.8): no HTTP, no engine state.

The sandbox reaches no real database. For each family of plugins (PostgreSQL,
MySQL and the rest) it knows which connection parameters are required, how a
connection URL must look, the default rotation and revocation statements, and
how long a username may be; and it renders statements as the plugins' query
helper does. :mod:`.database` runs the engine on top of this.
"""

from __future__ import annotations

import re
import secrets
import string
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ...errors import InvalidRequest

__all__ = [
    "Dialect",
    "check_details",
    "default_password",
    "dialect_of",
    "redact_url",
    "render",
    "url_password",
    "username_for",
]

_LOWER = string.ascii_lowercase
_UPPER = string.ascii_uppercase
_DIGITS = string.digits
_ALNUM = _LOWER + _UPPER + _DIGITS


@dataclass(frozen=True)
class Dialect:
    """What the sandbox knows of one family of database plugins."""

    family: str
    required: tuple[str, ...]  # connection parameters that must be set
    rotate: str  # default statement to change a user's password
    revoke: str  # default statement to drop a user
    name_length: int  # the plugin's username template truncates to this

    def check_url(self, url: str) -> str | None:
        """Why ``url`` (templates rendered) is not a connection string here, or None."""
        if self.family == "postgresql":
            if "://" not in url:
                return None if re.search(r"(^|\s)host=\S+", url) else "missing host in DSN"
            parts = urlsplit(url)
            if parts.scheme not in ("postgres", "postgresql"):
                return f"invalid connection URL scheme {parts.scheme!r}"
            return None if parts.hostname else "missing host in connection URL"
        if self.family == "mysql":
            if re.match(r"^[^@]*@(tcp|unix)\([^)]+\)/\S*$", url):
                return None
            return "invalid DSN: expected user:password@tcp(host:port)/dbname"
        return None


_SQL_REVOKE = 'DROP ROLE IF EXISTS "{{name}}";'
_POSTGRES = Dialect(
    "postgresql",
    ("connection_url",),
    "ALTER ROLE \"{{name}}\" WITH PASSWORD '{{password}}';",
    _SQL_REVOKE,
    63,
)
_MYSQL = Dialect(
    "mysql",
    ("connection_url",),
    "ALTER USER '{{name}}'@'%' IDENTIFIED BY '{{password}}';",
    "DROP USER IF EXISTS '{{name}}'@'%';",
    32,
)
_DIALECTS: dict[str, Dialect] = {
    "postgresql-database-plugin": _POSTGRES,
    "mysql-database-plugin": _MYSQL,
    "mysql-aurora-database-plugin": _MYSQL,
    "mysql-rds-database-plugin": _MYSQL,
    "mysql-legacy-database-plugin": Dialect(
        "mysql", _MYSQL.required, _MYSQL.rotate, _MYSQL.revoke, 16
    ),
    "cassandra-database-plugin": Dialect(
        "cassandra",
        ("hosts", "username", "password"),
        "ALTER USER '{{username}}' WITH PASSWORD '{{password}}';",
        "DROP USER '{{username}}';",
        100,
    ),
    "influxdb-database-plugin": Dialect(
        "influxdb",
        ("host", "username", "password"),
        "SET PASSWORD FOR \"{{username}}\" = '{{password}}';",
        'DROP USER "{{username}}";',
        100,
    ),
    "redis-database-plugin": Dialect(
        "redis",
        ("host", "port", "username", "password"),
        "ACL SETUSER {{username}} >{{password}}",
        "ACL DELUSER {{username}}",
        100,
    ),
    "valkey-database-plugin": Dialect(
        "redis",
        ("host", "port", "username", "password"),
        "ACL SETUSER {{username}} >{{password}}",
        "ACL DELUSER {{username}}",
        100,
    ),
}
# A registered plugin the sandbox knows nothing of: parameters taken as given.
_GENERIC = Dialect("generic", (), _POSTGRES.rotate, _SQL_REVOKE, 63)


def dialect_of(plugin_name: str) -> Dialect:
    return _DIALECTS.get(plugin_name, _GENERIC)


def render(statement: str, values: dict[str, str]) -> str:
    """``statement`` with each ``{{key}}`` replaced, as the plugins' query helper does."""
    for key, value in values.items():
        statement = statement.replace("{{" + key + "}}", value)
    return statement


def default_password() -> str:
    """20 characters with a lower, an upper, a digit and a dash: the engine's default."""
    chars = [
        secrets.choice(_LOWER),
        secrets.choice(_UPPER),
        secrets.choice(_DIGITS),
        "-",
        *(secrets.choice(_ALNUM + "-") for _ in range(16)),
    ]
    secrets.SystemRandom().shuffle(chars)
    return "".join(chars)


def redact_url(url: str) -> str:
    """``url`` with a literal password in its user part shown as ``xxxxx``."""
    password = url_password(url)
    if password is None:
        return url
    parts = urlsplit(url)
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:xxxxx@{host}"))


def url_password(url: str) -> str | None:
    """The literal password of a URL's user part (templates do not count), else None."""
    if "://" not in url:
        return None
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return None
    if not password or "{{" in password:
        return None
    return password


def username_for(dialect: Dialect, display_name: str, role: str, now: datetime) -> str:
    """The plugin's default username template: display name, role, random, (unix time)."""
    random_part = "".join(secrets.choice(_ALNUM) for _ in range(20))
    if dialect.name_length <= 16:  # the legacy MySQL limit
        pieces = ["v", display_name[:4], role[:4], random_part]
    elif dialect.family == "mysql":
        pieces = ["v", display_name[:10], role[:10], random_part]
    else:
        pieces = ["v", display_name[:8], role[:8], random_part, str(int(now.timestamp()))]
    return "-".join(pieces)[: dialect.name_length]


def check_details(dialect: Dialect, details: dict[str, Any], verify: bool) -> None:
    """Refuse connection parameters the plugin would refuse (and, verifying, fail to use)."""
    for key in dialect.required:
        if key in ("username", "password") and not verify:
            continue
        value = details.get(key)
        if value is None or value == "" or value == []:
            raise InvalidRequest(f"error creating database object: {key} cannot be empty")
    for key in ("username", "password"):
        value = details.get(key)
        if value is not None and not isinstance(value, str):
            raise InvalidRequest(f"error creating database object: {key}: expected a string")
        if isinstance(value, str) and ("{{username}}" in value or "{{password}}" in value):
            raise InvalidRequest(
                "error creating database object: username and/or password cannot contain "
                "the template variables",
            )
    url = details.get("connection_url")
    if url is not None and not isinstance(url, str):
        raise InvalidRequest("error creating database object: connection_url: expected a string")
    if not verify or not isinstance(url, str):
        return
    for key in ("username", "password"):
        if "{{" + key + "}}" in url and not details.get(key):
            raise InvalidRequest(
                f"error creating database object: error verifying connection: connection_url "
                f"uses {{{{{key}}}}} but no {key} is set",
            )
    rendered = render(url, {"username": "user", "password": "secret"})
    reason = dialect.check_url(rendered)
    if reason:
        raise InvalidRequest(
            f"error creating database object: error verifying connection: {reason}"
        )
