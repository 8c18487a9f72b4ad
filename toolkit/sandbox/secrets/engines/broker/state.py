"""The message-broker engine (spec 4.9): state and rules, no HTTP.

One :class:`BrokerEngine` per mount holds the connection to the broker's management
API, the lease settings and the roles, and a simulated broker: the users the
engine created, each with its tags and its permissions per virtual host and
per exchange, which tests read through :meth:`BrokerEngine.users`.

Rules, as the real server applies them (OpenBao's ``rabbitmq`` engine):

- ``config/connection`` needs ``connection_uri``, ``username`` and ``password``;
  with ``verify_connection`` (default true) the URI must be a management API
  address (``http(s)://host[:port]``), as listing the broker's users would
  check; the password is never returned (there is no read of the connection);
- a role has ``tags`` or ``vhosts`` (at least one); ``vhosts`` is a JSON map of
  virtual host to ``{configure, write, read}`` patterns, ``vhost_topics`` a
  JSON map of virtual host to exchange to ``{write, read}``: anything else is
  400 naming the field, and nothing is stored;
- creds make a broker user named ``<display name>-<uuid>`` with a password
  from the connection's ``password_policy`` (else 36 letters and digits), as a
  lease with the ``config/lease`` ttls (else the mount's); revoking the lease
  deletes the user, and fails while no connection is configured.
"""

from __future__ import annotations

import re
import secrets
import string
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..._credentials import (
    Credentials,
    Requester,
    creds_lease,
    generate_password,
    lease_ttls,
)
from ...errors import InvalidRequest

if TYPE_CHECKING:
    from ...host import EngineHost
    from ...leases import Lease
    from ...mounts import Mount

__all__ = [
    "BrokerEngine",
    "BrokerConnection",
    "BrokerRole",
    "BrokerUser",
    "check_vhost_topics",
    "check_vhosts",
]

_ALNUM = string.ascii_letters + string.digits
_VHOST_KEYS = ("configure", "write", "read")
_TOPIC_KEYS = ("write", "read")


@dataclass
class BrokerConnection:
    """``config/connection``. The password is kept for the broker, never shown."""

    connection_uri: str
    username: str
    password: str = field(repr=False)
    password_policy: str = ""
    username_template: str = ""
    verify_connection: bool = True


@dataclass
class BrokerRole:
    """One role: tags, and permission patterns per virtual host and per exchange."""

    name: str
    tags: str = ""
    vhosts: dict[str, dict[str, str]] = field(default_factory=dict)
    vhost_topics: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)


@dataclass
class BrokerUser:
    """A user of the simulated broker, as the management API would list it."""

    username: str
    role: str
    tags: list[str]
    permissions: dict[str, dict[str, str]]
    topic_permissions: dict[str, dict[str, dict[str, str]]]


class BrokerEngine:
    """One mount's state of the message-broker engine (spec 4.9)."""

    def __init__(self, service: EngineHost, mount: Mount) -> None:
        self.service = service
        self.mount = mount
        self.connection: BrokerConnection | None = None
        self.lease_ttl = 0
        self.lease_max_ttl = 0
        self.lease_configured = False
        self.roles: dict[str, BrokerRole] = {}
        # The simulated broker: users by name.
        self._users: dict[str, BrokerUser] = {}

    def __repr__(self) -> str:
        return f"<BrokerEngine {self.mount.path} {len(self.roles)} roles, {len(self._users)} users>"

    def users(self) -> dict[str, BrokerUser]:
        """The broker's users the engine created and has not deleted (for tests)."""
        return dict(self._users)

    # -- configuration -------------------------------------------------------------
    def configure_connection(
        self,
        *,
        connection_uri: str,
        username: str,
        password: str,
        verify_connection: bool = True,
        password_policy: str = "",
        username_template: str = "",
    ) -> None:
        """``POST config/connection``: every field checked before the old one is replaced."""
        uri, verify = connection_uri, verify_connection
        policy, template = password_policy, username_template
        for name, value in (
            ("connection_uri", uri),
            ("username", username),
            ("password", password),
        ):
            if not value:
                raise InvalidRequest(f"missing {name}")
        if verify:
            reason = _management_uri_problem(uri)
            if reason:
                raise InvalidRequest(f"failed to validate the connection: {reason}")
        self.connection = BrokerConnection(
            connection_uri=uri,
            username=username,
            password=password,
            password_policy=policy,
            username_template=template,
            verify_connection=verify,
        )

    def configure_lease(self, *, ttl: int = 0, max_ttl: int = 0) -> None:
        """``POST config/lease``: ``ttl`` and ``max_ttl`` in seconds (0: the mount's)."""
        for key, value in (("ttl", ttl), ("max_ttl", max_ttl)):
            if value < 0:
                raise InvalidRequest(f"{key}: cannot be negative")
        if max_ttl and ttl > max_ttl:
            raise InvalidRequest("ttl: cannot be greater than max_ttl")
        self.lease_ttl, self.lease_max_ttl, self.lease_configured = ttl, max_ttl, True

    def lease_config(self) -> dict[str, int] | None:
        """The ``data`` of ``GET config/lease``; None before it was written."""
        if not self.lease_configured:
            return None
        return {"ttl": self.lease_ttl, "max_ttl": self.lease_max_ttl}

    # -- roles ---------------------------------------------------------------------
    def write_role(
        self,
        name: str,
        *,
        tags: str = "",
        vhosts: Any = None,
        vhost_topics: Any = None,
    ) -> None:
        """``POST roles/:name``: replaces the role; both maps validated first.

        ``vhosts`` maps a virtual host to ``{configure, write, read}`` patterns,
        ``vhost_topics`` a virtual host to an exchange to ``{write, read}`` (as
        decoded from the request's JSON text; None when not given).
        """
        if not tags and vhosts is None:
            raise InvalidRequest("both tags and vhosts not specified")
        checked = check_vhosts(vhosts)
        topics = check_vhost_topics(vhost_topics)
        self.roles[name] = BrokerRole(name, tags, checked, topics)

    def delete_role(self, name: str) -> None:
        self.roles.pop(name, None)

    # -- creds ---------------------------------------------------------------------
    def issue_creds(self, name: str, requester: Requester) -> tuple[Credentials, Lease]:
        """``GET creds/:name``: a new broker user with the role's permissions, as a lease."""
        role = self.roles.get(name)
        if role is None:
            raise InvalidRequest(f"unknown role: {name}")
        connection = self.connection
        if connection is None:
            raise InvalidRequest(
                "failed to create a new user with the generated credentials: "
                f"no connection is configured at {self.mount.path}config/connection",
            )
        username = f"{requester.display_name}-{uuid.uuid4()}"
        password = self._password(connection)
        self._users[username] = BrokerUser(
            username=username,
            role=name,
            tags=[t.strip() for t in role.tags.split(",") if t.strip()],
            permissions={v: dict(p) for v, p in role.vhosts.items()},
            topic_permissions={
                v: {e: dict(p) for e, p in ex.items()} for v, ex in role.vhost_topics.items()
            },
        )
        ttls = lease_ttls(self.mount, self.lease_ttl, self.lease_max_ttl)
        lease = creds_lease(self, name, requester, ttls, {"username": username})
        return Credentials(username, password), lease

    def revoke_creds(self, lease: Lease) -> None:
        """A creds lease ends: delete its user from the broker."""
        if self.connection is None:
            raise InvalidRequest("could not delete user: no connection is configured")
        username = str((lease.data or {}).get("username", ""))
        self._users.pop(username, None)

    def _password(self, connection: BrokerConnection) -> str:
        return generate_password(self.service, connection.password_policy, alphanumeric_password)


def alphanumeric_password() -> str:
    """36 letters and digits: the engine's password without a policy."""
    return "".join(secrets.choice(_ALNUM) for _ in range(36))


def _management_uri_problem(uri: str) -> str | None:
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("http", "https"):
        return f"unsupported protocol scheme {parts.scheme!r} (the management API is http or https)"
    if not parts.hostname:
        return "no host in connection_uri"
    return None


def _permissions(name: str, where: str, value: Any, keys: tuple[str, ...]) -> dict[str, str]:
    if not isinstance(value, dict):
        raise InvalidRequest(f"{name}: {where} must be an object with keys {', '.join(keys)}")
    unknown = sorted(set(value) - set(keys))
    if unknown:
        raise InvalidRequest(
            f"{name}: {where} has unknown key {unknown[0]!r} (allowed: {', '.join(keys)})"
        )
    result = {}
    for key in keys:
        pattern = value.get(key, "")
        if not isinstance(pattern, str):
            raise InvalidRequest(f"{name}: {where}.{key} must be a string pattern")
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InvalidRequest(f"{name}: {where}.{key} is not a valid pattern: {exc}") from None
        result[key] = pattern
    return result


def check_vhosts(decoded: Any) -> dict[str, dict[str, str]]:
    """``vhosts``: an object of virtual host to ``{configure, write, read}`` (None: none)."""
    if decoded is None:
        return {}
    if not isinstance(decoded, dict):
        raise InvalidRequest("vhosts: expected a JSON object of virtual host to permissions")
    return {
        vhost: _permissions("vhosts", repr(vhost), perms, _VHOST_KEYS)
        for vhost, perms in decoded.items()
    }


def check_vhost_topics(decoded: Any) -> dict[str, dict[str, dict[str, str]]]:
    """``vhost_topics``: an object of virtual host to exchange to ``{write, read}``."""
    if decoded is None:
        return {}
    if not isinstance(decoded, dict):
        raise InvalidRequest(
            "vhost_topics: expected a JSON object of virtual host to exchange to permissions"
        )
    result: dict[str, dict[str, dict[str, str]]] = {}
    for vhost, exchanges in decoded.items():
        if not isinstance(exchanges, dict):
            raise InvalidRequest(
                f"vhost_topics: {vhost!r} must be an object of exchange to permissions"
            )
        result[vhost] = {
            exchange: _permissions("vhost_topics", f"{vhost!r} / {exchange!r}", perms, _TOPIC_KEYS)
            for exchange, perms in exchanges.items()
        }
    return result
