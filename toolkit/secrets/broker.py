"""Calls of the message-broker engine (spec 4.9), against any mount (default ``broker``).

One method per endpoint: the connection to the broker's management API and
the lease setting, roles (write, read, list, delete) and creds. The
administrator password is sent once and never returned (the server has no
read of the connection); generated passwords come back as
:class:`~toolkit.Sensitive`. The views read every role concurrently:

- :meth:`Broker.roles_frame`: one row per role;
- :meth:`Broker.vhost_permissions`: one row per role and virtual host, with
  its ``configure``, ``write`` and ``read`` patterns;
- :meth:`Broker.topic_permissions`: one row per role, virtual host and
  exchange, with its ``write`` and ``read`` patterns.

Role maps are written as the JSON strings the server takes; reads accept them
as strings or as objects (the real server answers objects).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .._coverage import Coverage
from .._errors import DecodeError, InputError, NotFound
from .._frames import Schema, build_frame
from .._masking import Sensitive, hidden, reveal
from .._records import Record, integer
from ._credentials import CredentialEngine, required

__all__ = ["BROKER_ROLES", "TOPIC_PERMISSIONS", "VHOST_PERMISSIONS", "Broker"]

BROKER_ROLES = Schema.of("name tags:object vhosts:int exchanges:int", index="name")
VHOST_PERMISSIONS = Schema.of("role vhost configure write read tags")
TOPIC_PERMISSIONS = Schema.of("role vhost exchange write read")

VhostMap = Mapping[str, Mapping[str, str]]
TopicMap = Mapping[str, Mapping[str, Mapping[str, str]]]
_VHOST_KEYS = ("configure", "write", "read")
_TOPIC_KEYS = ("write", "read")


def _decoded(value: Any, field: str, depth: int) -> dict[str, Any]:
    """A role map as read: a JSON string or an object (empty when absent), objects
    ``depth`` levels down to text patterns (``vhosts`` 2, ``vhost_topics`` 3)."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except (ValueError, RecursionError):
            raise DecodeError(f"the server's role holds a {field!r} that is not JSON") from None
    if value is None:
        return {}
    if not _nested(value, depth):
        raise DecodeError(f"the server's role holds a {field!r} that is not a permissions map")
    return dict(value)


def _nested(value: Any, depth: int) -> bool:
    if depth == 0:
        return isinstance(value, str)
    return isinstance(value, Mapping) and all(_nested(v, depth - 1) for v in value.values())


def _check(field: str, where: str, perms: Any, keys: tuple[str, ...]) -> None:
    if not isinstance(perms, Mapping):
        raise InputError(f"{field}: {where} must map {', '.join(keys)} to patterns")
    unknown = sorted(set(perms) - set(keys))
    if unknown:
        raise InputError(f"{field}: {where} has unknown key {unknown[0]!r}")
    if not all(isinstance(v, str) for v in perms.values()):
        raise InputError(f"{field}: {where} patterns must be strings")


def _encoded_vhosts(vhosts: VhostMap | str) -> str:
    if isinstance(vhosts, str):
        return vhosts
    for vhost, perms in vhosts.items():
        _check("vhosts", repr(vhost), perms, _VHOST_KEYS)
    return json.dumps({v: dict(p) for v, p in vhosts.items()})


def _encoded_topics(topics: TopicMap | str) -> str:
    if isinstance(topics, str):
        return topics
    for vhost, exchanges in topics.items():
        if not isinstance(exchanges, Mapping):
            raise InputError(f"vhost_topics: {vhost!r} must map exchanges to permissions")
        for exchange, perms in exchanges.items():
            _check("vhost_topics", f"{vhost!r} / {exchange!r}", perms, _TOPIC_KEYS)
    return json.dumps({v: {e: dict(p) for e, p in ex.items()} for v, ex in topics.items()})


class Broker(CredentialEngine):
    """The message-broker engine (spec 4.9); ``client.broker.at(path)`` for another mount."""

    credentials_kind = "broker-credentials"

    # -- configuration -----------------------------------------------------------------
    def configure_connection(
        self,
        connection_uri: str,
        username: str,
        password: str | Sensitive,
        *,
        verify_connection: bool = True,
        password_policy: str | None = None,
    ) -> None:
        """Set the management API address and administrator. ``POST /broker/config/connection``.

        With ``verify_connection`` the server checks it can reach the API first.
        ``password_policy`` names the policy for generated passwords (none: 36
        letters and digits). The password is sent, never returned.
        """
        required(connection_uri=connection_uri, username=username)
        if not reveal(password):
            raise InputError("a password is required")
        body: dict[str, Any] = {
            "connection_uri": connection_uri,
            "username": username,
            "password": hidden(password, "password"),
            "verify_connection": verify_connection,
        }
        if password_policy is not None:
            body["password_policy"] = password_policy
        self._send("POST", self._path("config/connection"), body)

    def configure_lease(self, ttl: int | str = 0, max_ttl: int | str = 0) -> Record:
        """Set the creds' lease ttls (0: the mount's). ``POST /broker/config/lease``.

        Returns the setting as :meth:`read_lease` does.
        """
        self._send("POST", self._path("config/lease"), {"ttl": ttl, "max_ttl": max_ttl})
        found = self.read_lease()
        assert found is not None  # just written
        return found

    def read_lease(self) -> Record | None:
        """The creds' lease ttls in seconds, None before they were set. ``GET /broker/config/lease``."""
        try:
            data = self._read(self._path("config/lease"))
        except NotFound:
            return None
        return Record(
            {
                "ttl": integer(data.get("ttl"), "ttl"),
                "max_ttl": integer(data.get("max_ttl"), "max_ttl"),
            },
            kind="broker-lease",
        )

    # -- roles -------------------------------------------------------------------------
    def write_role(
        self,
        name: str,
        *,
        tags: str | list[str] = "",
        vhosts: VhostMap | str | None = None,
        vhost_topics: TopicMap | str | None = None,
    ) -> Record:
        """Create or replace a role. ``POST /broker/roles/:name``.

        ``tags``: management tags (a list or a comma-separated string);
        ``vhosts``: virtual host -> ``{configure, write, read}`` patterns;
        ``vhost_topics``: virtual host -> exchange -> ``{write, read}`` (broker
        3.7.0 and later). A role needs tags or vhosts. Maps are checked here and
        sent as JSON strings. Returns the role as :meth:`read_role` does.
        """
        required(role_name=name)
        tag_text = ",".join(tags) if isinstance(tags, list) else tags
        if not tag_text and not vhosts:
            raise InputError("a role needs tags or vhosts")
        body: dict[str, Any] = {"tags": tag_text}
        if vhosts:
            body["vhosts"] = _encoded_vhosts(vhosts)
        if vhost_topics:
            body["vhost_topics"] = _encoded_topics(vhost_topics)
        self._send("POST", self._path("roles/{name}", name=name), body)
        return self.read_role(name)

    def read_role(self, name: str) -> Record:
        """A role: ``name``, ``tags`` (list), ``vhosts`` and ``vhost_topics`` (dicts).

        ``GET /broker/roles/:name``.
        """
        required(role_name=name)
        data = self._read(self._path("roles/{name}", name=name))
        tags = str(data.get("tags") or "")
        return Record(
            {
                "name": name,
                "tags": [t.strip() for t in tags.split(",") if t.strip()],
                "vhosts": _decoded(data.get("vhosts"), "vhosts", 2),
                "vhost_topics": _decoded(data.get("vhost_topics"), "vhost_topics", 3),
            },
            kind="broker-role",
        )

    # -- views -------------------------------------------------------------------------
    def _roles(self, cov: Coverage | None = None) -> list[Record]:
        cov = cov if cov is not None else self._coverage("roles")
        return self._read_each(cov, self.list_roles(), self.read_role, "roles")

    def roles_frame(self) -> pd.DataFrame:
        """One row per role (index ``name``): ``tags`` (list), how many ``vhosts`` and ``exchanges``."""
        cov = self._coverage("roles_frame")
        rows = [
            {
                "name": r["name"],
                "tags": r["tags"],
                "vhosts": len(r["vhosts"]),
                "exchanges": sum(len(ex) for ex in r["vhost_topics"].values()),
            }
            for r in self._roles(cov)
        ]
        return cov.attach(build_frame(rows, BROKER_ROLES))

    def vhost_permissions(self, roles: list[Record] | None = None) -> pd.DataFrame:
        """One row per role and virtual host: ``configure``, ``write``, ``read`` patterns.

        ``tags`` is the role's tags joined by commas. A role with tags only has
        one row with no virtual host, so every role shows.
        """
        cov, roles = self._given_or_read("vhost_permissions", roles)
        rows: list[dict[str, Any]] = []
        for role in roles:
            tags = ",".join(role["tags"])
            if not role["vhosts"]:
                rows.append({"role": role["name"], "vhost": None, "tags": tags})
            for vhost, perms in sorted(role["vhosts"].items()):
                rows.append({"role": role["name"], "vhost": vhost, "tags": tags, **perms})
        return cov.attach(build_frame(rows, VHOST_PERMISSIONS))

    def topic_permissions(self, roles: list[Record] | None = None) -> pd.DataFrame:
        """One row per role, virtual host and exchange: its ``write`` and ``read`` patterns."""
        cov, roles = self._given_or_read("topic_permissions", roles)
        rows = [
            {"role": role["name"], "vhost": vhost, "exchange": exchange, **perms}
            for role in roles
            for vhost, exchanges in sorted(role["vhost_topics"].items())
            for exchange, perms in sorted(exchanges.items())
        ]
        return cov.attach(build_frame(rows, TOPIC_PERMISSIONS))

    def _given_or_read(
        self, view: str, roles: list[Record] | None
    ) -> tuple[Coverage, list[Record]]:
        """The view's record and its roles: read (a refused read is a gap), or the ones
        the caller passed, which this view did not read (``asked`` says so)."""
        if roles is None:
            cov = self._coverage(view)
            return cov, self._roles(cov)
        cov = Coverage(f"broker.{view}", asked=["roles passed in by the caller"])
        cov.note_read(len(roles))
        return cov, roles
