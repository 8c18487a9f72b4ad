"""The plugin catalog (spec section 4.5): a frame of it, and register/read/delete."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from .._coverage import Coverage, carries_coverage, carry
from .._errors import InputError
from .._frames import Schema, build_frame
from .._http import api_path
from .._records import Record
from ..findings import Finding, findings_frame
from ._base import SecretsArea, listed_keys, records_of

__all__ = ["CATALOG", "PLUGIN_INVENTORY", "PLUGIN_TYPES", "Plugins", "plugin_findings"]

PLUGIN_TYPES = ("auth", "database", "secret")
CATALOG = Schema.of("type name version builtin:bool deprecation_status")
PLUGIN_INVENTORY = Schema.of("type name version builtin:bool sha256 command mounts:object")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def _type(plugin_type: str) -> str:
    if plugin_type not in PLUGIN_TYPES:
        raise InputError(f"plugin type must be one of {PLUGIN_TYPES}, not {plugin_type!r}")
    return plugin_type


def _params(version: str | None) -> dict[str, str] | None:
    return {"version": version} if version else None


class Plugins(SecretsArea):
    """``sys/plugins/catalog``."""

    def catalog(self) -> pd.DataFrame:
        """The whole catalog. ``GET /sys/plugins/catalog`` (its ``detailed`` list).

        Index (``type``, ``name``, ``version``), the catalog's key; columns
        ``builtin`` and ``deprecation_status``. Without ``detailed`` (older
        servers) the name lists per type are used.
        """
        data = self._read("/sys/plugins/catalog")
        detailed = data.get("detailed")
        if detailed is None:
            detailed = [
                {"type": t, "name": n} for t in PLUGIN_TYPES for n in listed_keys(data.get(t), t)
            ]
        frame = build_frame(records_of(detailed, "detailed"), CATALOG)
        # One read, whole or raised.
        cov = Coverage("plugins.catalog", asked=["sys/plugins/catalog"])
        cov.note_read(len(frame))
        return cov.attach(frame.set_index(["type", "name", "version"]).sort_index())

    def list_plugins(self, plugin_type: str) -> list[str]:
        """Names registered for a type. ``LIST /sys/plugins/catalog/:type``."""
        return self._list(api_path("/sys/plugins/catalog/{type}", type=_type(plugin_type)))

    def register(
        self,
        plugin_type: str,
        name: str,
        *,
        sha256: str,
        command: str,
        args: Sequence[str] = (),
        env: Sequence[str] | Mapping[str, str] = (),
        version: str = "",
    ) -> None:
        """Register or update a plugin. ``POST /sys/plugins/catalog/:type/:name`` (sudo).

        ``sha256`` (64 hex digits) and ``command`` are checked here before
        sending; ``env`` is ``key=value`` strings or a mapping. A real server
        needs a plugin directory in its configuration.
        """
        _type(plugin_type)
        if not name:
            raise InputError("a plugin needs a name")
        if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
            raise InputError(
                f"sha256 of plugin {name!r} must be 64 hexadecimal digits "
                f"(got {len(sha256) if isinstance(sha256, str) else type(sha256).__name__})"
            )
        if not command:
            raise InputError(f"plugin {name!r}: command is required")
        env_list = [f"{k}={v}" for k, v in env.items()] if isinstance(env, Mapping) else list(env)
        for entry in env_list:
            if "=" not in entry:
                raise InputError(f"plugin {name!r}: env entry {entry!r} is not key=value")
        body: dict[str, Any] = {
            "sha256": sha256.lower(),
            "command": command,
            "args": list(args),
            "env": env_list,
        }
        if version:
            body["version"] = version
        self._send(
            "POST",
            api_path("/sys/plugins/catalog/{type}/{name}", type=plugin_type, name=name),
            body,
        )

    def read(self, plugin_type: str, name: str, version: str | None = None) -> Record:
        """One entry. ``GET /sys/plugins/catalog/:type/:name?version=`` (sudo).

        ``args``, ``builtin``, ``command``, ``name``, ``sha256``, ``version``.
        """
        path = api_path("/sys/plugins/catalog/{type}/{name}", type=_type(plugin_type), name=name)
        return Record(self._read(path, _params(version)), kind="plugin")

    def delete(self, plugin_type: str, name: str, version: str | None = None) -> None:
        """Remove an entry. ``DELETE /sys/plugins/catalog/:type/:name?version=`` (sudo)."""
        path = api_path("/sys/plugins/catalog/{type}/{name}", type=_type(plugin_type), name=name)
        self._http.json("DELETE", path, params=_params(version))

    # -- findings ------------------------------------------------------------------------
    def inventory(self) -> pd.DataFrame:
        """Every external (not built-in) plugin with its ``sha256``, ``command`` and the
        ``mounts`` running it.

        ``GET /sys/plugins/catalog``, then ``GET /sys/plugins/catalog/:type/:name``
        (sudo) for each external entry, and ``GET /sys/mounts`` and
        ``GET /sys/auth`` for what runs where. A mount runs a plugin when its
        type is the plugin's name and its ``plugin_version`` is the plugin's
        version (an unversioned external plugin shadows the built-in of its
        name, so it runs the mounts that pin no version). Database plugins run
        inside database connections, not mounts: their ``mounts`` is empty.

        ``attrs["coverage"]`` notes an entry whose read was refused (its row is left
        out) and a mount table that could not be read (``mounts`` then shows only
        the other table's).
        """
        catalog = self.catalog().reset_index()
        cov = Coverage("plugins.inventory", asked=["sys/plugins/catalog", "sys/mounts", "sys/auth"])
        external = catalog[~catalog["builtin"].fillna(False).astype(bool)]
        entries = [
            (str(r.type), str(r.name), r.version if isinstance(r.version, str) else "")
            for r in external.itertuples()
        ]

        def detail_of(entry: tuple[str, str, str]) -> Record | None:
            kind, name, version = entry
            where = f"sys/plugins/catalog/{kind}/{name}"
            return cov.read_or_gap(where, lambda: self.read(kind, name, version or None))

        details = list(self._http.map(detail_of, entries))
        mounts = self._mounts(cov)
        rows = []
        for (kind, name, version), detail in zip(entries, details, strict=True):
            if detail is None:
                continue
            running = [
                path
                for path, (mount_kind, mount_type, pinned) in mounts.items()
                if mount_kind == kind and mount_type == name and pinned == version
            ]
            rows.append(
                {
                    "type": kind,
                    "name": name,
                    "version": version,
                    "builtin": False,
                    "sha256": detail.get("sha256"),
                    "command": detail.get("command"),
                    "mounts": sorted(running),
                }
            )
        cov.note_read(len(rows))
        return cov.attach(build_frame(rows, PLUGIN_INVENTORY))

    def findings(self) -> pd.DataFrame:
        """:func:`plugin_findings` of :meth:`inventory`."""
        inventory = self.inventory()
        return carry(plugin_findings(inventory), inventory, view="plugins.findings")

    def _mounts(self, cov: Coverage) -> dict[str, tuple[str, str, str]]:
        """Mount path -> (plugin type, engine type, pinned version), secrets and auth; a
        table the token may not read is a gap in ``cov``."""
        found: dict[str, tuple[str, str, str]] = {}
        for path, kind, prefix in (("/sys/mounts", "secret", ""), ("/sys/auth", "auth", "auth/")):
            table: dict[str, Any] | None = cov.read_or_gap(
                path.lstrip("/"), functools.partial(self._read, path)
            )
            for mount, config in (table or {}).items():
                if mount.endswith("/") and isinstance(config, Mapping):
                    pinned = str(config.get("plugin_version") or "")
                    found[prefix + mount] = (kind, str(config.get("type") or ""), pinned)
        return found


@carries_coverage("plugins.plugin_findings")
def plugin_findings(inventory: pd.DataFrame) -> pd.DataFrame:
    """Findings of a :meth:`Plugins.inventory` frame.

    - **medium**: an external plugin that mounts run: code from outside the
      server's release runs beside it; its ``sha256`` must match the vendor's;
    - **low**: an external plugin no mount runs: registered but unused, it can
      be mounted by anyone allowed to, and should be removed.

    Database plugins are judged by their connections, so they raise neither.
    """
    found = []
    rows: list[Any] = inventory.to_dict("records")
    for row in rows:
        version = str(row["version"] or "")
        name = f"{row['type']}/{row['name']}" + (f"@{version}" if version else "")
        sha = str(row["sha256"] or "")[:12]
        mounts = [str(m) for m in row["mounts"] or []]
        if mounts:
            reason = (
                f"external plugin run by {', '.join(mounts)}: command {row['command']!r}, "
                f"sha256 {sha}...; check it against the vendor's"
            )
            found.append(Finding("medium", "plugins", name, reason))
        elif row["type"] != "database":
            reason = f"external plugin registered but run by no mount (command {row['command']!r})"
            found.append(Finding("low", "plugins", name, reason))
    return findings_frame(found)
