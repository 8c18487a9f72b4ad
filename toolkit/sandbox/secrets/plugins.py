"""The plugin catalog (spec part 2 "Plugin catalog entry", section 4.5), in plain Python.

The catalog holds the builtin plugins the server ships with, as the real
server lists them (version ``v<server version>+builtin.bao``), plus the
plugins an operator registers with a SHA-256 sum and a command. The sandbox
has no plugin directory and runs no plugin: registering stores the entry and
reports it back. The sum is what a real server checks before every run, so a
registered plugin the sandbox would have to run (a database connection on it,
a mount of it) is refused, as the real server refuses a plugin whose binary is
missing or whose sum differs (:meth:`PluginCatalog.runnable`).

    catalog.register("secret", "my-plugin", sha256="ab...", command="my-plugin",
                     version="v1.0.0")
    catalog.get("secret", "my-plugin", "v1.0.0")
    catalog.names("secret")       # builtin and registered names, sorted
    catalog.delete("secret", "my-plugin", "v1.0.0")

Reading or deleting an entry registered with a version needs that version;
without it the unversioned registration (or the builtin) is meant. ``env``
may hold credentials: it is stored but never returned nor shown in a repr.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidRequest
from .seal import SERVER_VERSION

__all__ = ["BUILTIN_VERSION", "PLUGIN_TYPES", "PluginCatalog", "PluginEntry"]

PLUGIN_TYPES = ("auth", "database", "secret")

BUILTIN_VERSION = f"v{SERVER_VERSION}+builtin.bao"

# Builtin names per type; those in _DEPRECATED are listed as "deprecated", the rest "supported".
_BUILTINS: dict[str, tuple[str, ...]] = {
    "auth": (
        "approle",
        "cert",
        "jwt",
        "kerberos",
        "kubernetes",
        "ldap",
        "oidc",
        "radius",
        "userpass",
    ),
    "database": (
        "cassandra-database-plugin",
        "influxdb-database-plugin",
        "mysql-aurora-database-plugin",
        "mysql-database-plugin",
        "mysql-legacy-database-plugin",
        "mysql-rds-database-plugin",
        "postgresql-database-plugin",
        "redis-database-plugin",
        "valkey-database-plugin",
    ),
    # The secret plugins the real server ships that the sandbox serves no engine for; the
    # engines it serves add their own (``Engine.catalog_name``, see ``backends``).
    "secret": ("kubernetes", "kv", "ldap", "ssh", "totp", "transit"),
}
_DEPRECATED = {("secret", "ad"), ("database", "mysql-legacy-database-plugin")}

_SEMVER = re.compile(
    r"^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?$",
)
_SHA256 = re.compile(r"^[0-9a-fA-F]{64}$")


@dataclass
class PluginEntry:
    """One catalog entry, builtin or registered."""

    type: str
    name: str
    version: str = ""
    sha256: str = ""
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: list[str] = field(default_factory=list, repr=False)
    builtin: bool = False
    deprecation_status: str = ""
    # Whether the plugin directory holds a binary whose sum is ``sha256``. The sandbox
    # has no plugin directory: only the demo data, written as a server that had the
    # binary, sets it. Never shown on the wire.
    installed: bool = field(default=False, repr=False)


def check_type(plugin_type: str) -> str:
    """``plugin_type`` when it is ``auth``, ``database`` or ``secret``; 400 otherwise."""
    if plugin_type not in PLUGIN_TYPES:
        raise InvalidRequest(
            f"invalid plugin type {plugin_type!r}: expected one of auth, database, secret"
        )
    return plugin_type


def canonical_version(version: str) -> str:
    """``1.2.3`` -> ``v1.2.3``; empty stays empty; 400 for anything not semantic."""
    if not version:
        return ""
    match = _SEMVER.match(version)
    if not match:
        raise InvalidRequest(f"version {version!r} is not a valid semantic version")
    return version if version.startswith("v") else "v" + version


class PluginCatalog:
    """Builtin plugins plus registered ones, keyed by type, name and version."""

    def __init__(self, engine_plugins: Iterable[str] = ()) -> None:
        """``engine_plugins``: the builtin secret plugins of the engines the server serves."""
        builtins = {**_BUILTINS, "secret": (*_BUILTINS["secret"], *engine_plugins)}
        self._builtin: dict[tuple[str, str], PluginEntry] = {}
        for plugin_type, names in builtins.items():
            for name in sorted(names):
                status = "deprecated" if (plugin_type, name) in _DEPRECATED else "supported"
                self._builtin[(plugin_type, name)] = PluginEntry(
                    type=plugin_type,
                    name=name,
                    version=BUILTIN_VERSION,
                    builtin=True,
                    deprecation_status=status,
                )
        self._registered: dict[tuple[str, str, str], PluginEntry] = {}

    def __repr__(self) -> str:
        return f"<PluginCatalog {len(self._builtin)} builtin, {len(self._registered)} registered>"

    def register(
        self,
        plugin_type: str,
        name: str,
        *,
        sha256: Any,
        command: Any,
        args: Any = None,
        env: Any = None,
        version: Any = "",
        installed: bool = False,
    ) -> PluginEntry:
        """Register or replace a plugin; every field is checked before anything is stored.

        Endpoint: ``POST sys/plugins/catalog/:type/:name``. ``installed`` says the
        binary whose sum is ``sha256`` is in place (the demo data's plugins only).
        """
        check_type(plugin_type)
        if not name or "/" in name:
            raise InvalidRequest(f"invalid plugin name {name!r}")
        if not isinstance(version, str):
            raise InvalidRequest("version: expected a string")
        version = canonical_version(version)
        if version and "builtin" in version.partition("+")[2]:
            raise InvalidRequest(
                f"version {version!r} is not allowed because 'builtin' is a reserved "
                "metadata identifier",
            )
        if not sha256:
            raise InvalidRequest("missing SHA-256 value: sha256 is required")
        if not isinstance(sha256, str) or not _SHA256.match(sha256):
            raise InvalidRequest("sha256: expected the 64 hex digits of a SHA-256 sum")
        if not command:
            raise InvalidRequest("missing command value: command is required")
        if not isinstance(command, str):
            raise InvalidRequest("command: expected a string")
        if command.startswith(("/", "\\")) or "\\" in command or ".." in command.split("/"):
            raise InvalidRequest(f"command {command!r} must be a path inside the plugin directory")
        args_list = _string_list(args, "args")
        env_list = _string_list(env, "env")
        for position, item in enumerate(env_list, start=1):
            key, sep, _ = item.partition("=")
            if not sep or not key:
                # The entry may hold a secret value: name its position, not its text.
                raise InvalidRequest(f"env: entry {position} is not of the form key=value")
        entry = PluginEntry(
            type=plugin_type,
            name=name,
            version=version,
            sha256=sha256.lower(),
            command=command,
            args=args_list,
            env=env_list,
            installed=installed,
        )
        self._registered[(plugin_type, name, version)] = entry
        return entry

    def get(self, plugin_type: str, name: str, version: str = "") -> PluginEntry | None:
        """The entry for ``name`` at ``version`` (empty: unversioned, else the builtin)."""
        check_type(plugin_type)
        version = canonical_version(version)
        registered = self._registered.get((plugin_type, name, version))
        if registered is not None:
            return registered
        builtin = self._builtin.get((plugin_type, name))
        if builtin is not None and version in ("", builtin.version):
            return builtin
        return None

    def runnable(self, plugin_type: str, name: str, version: str = "") -> PluginEntry:
        """The entry a mount or a connection would run; 400 when it cannot run.

        The real server runs a registered plugin only when its command is a file
        in the plugin directory whose SHA-256 is the catalog's, and refuses to use
        it otherwise ("checksums did not match"). The sandbox has no plugin
        directory, so no plugin registered through the API has a binary there to
        match: it is refused, whatever its sum. The builtins run, and so do the demo
        data's plugins, stored as a server that had their binaries would hold them.
        """
        entry = self.get(plugin_type, name, version)
        if entry is None:
            shown = f"{name} {canonical_version(version)}".strip()
            raise InvalidRequest(f"plugin not found in the catalog: {shown}")
        if not (entry.builtin or entry.installed):
            raise InvalidRequest(
                f"cannot run plugin {name!r}: no binary in the plugin directory matches its "
                "catalog sha256 (the sandbox has none; builtin plugins run)",
            )
        return entry

    def delete(self, plugin_type: str, name: str, version: str = "") -> bool:
        """Remove a registered entry; False when there was none. Builtins cannot go.

        Endpoint: ``DELETE sys/plugins/catalog/:type/:name``.
        """
        check_type(plugin_type)
        version = canonical_version(version)
        if (plugin_type, name, version) in self._registered:
            del self._registered[(plugin_type, name, version)]
            return True
        if (plugin_type, name) in self._builtin and version == BUILTIN_VERSION:
            raise InvalidRequest(f"cannot delete builtin plugin {name!r}")
        return False

    def names(self, plugin_type: str) -> list[str]:
        """Builtin and registered names of one type, sorted and unique."""
        check_type(plugin_type)
        found = {name for (t, name) in self._builtin if t == plugin_type}
        found.update(name for (t, name, _) in self._registered if t == plugin_type)
        return sorted(found)

    def entries(self) -> list[PluginEntry]:
        """Every entry: builtins first, then registered ones, each by type and name."""
        builtin = sorted(self._builtin.values(), key=lambda e: (e.type, e.name))
        registered = sorted(self._registered.values(), key=lambda e: (e.type, e.name, e.version))
        return builtin + registered


def _string_list(value: Any, field_name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidRequest(f"{field_name}: expected a list of strings")
    return list(value)
