"""The plugin catalog (spec section 4.5): a frame of it, and register/read/delete."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from .._errors import InputError
from .._frames import Col, Schema, build_frame
from .._http import segment
from .._records import Record
from ._base import Area

__all__ = ["CATALOG", "PLUGIN_TYPES", "Plugins"]

PLUGIN_TYPES = ("auth", "database", "secret")
CATALOG = Schema.of(
    Col("type"),
    Col("name"),
    Col("version"),
    Col("builtin", "bool"),
    Col("deprecation_status"),
)
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def _type(plugin_type: str) -> str:
    if plugin_type not in PLUGIN_TYPES:
        raise InputError(f"plugin type must be one of {PLUGIN_TYPES}, not {plugin_type!r}")
    return plugin_type


def _params(version: str | None) -> dict[str, str] | None:
    return {"version": version} if version else None


class Plugins(Area):
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
            detailed = [{"type": t, "name": n} for t in PLUGIN_TYPES for n in data.get(t) or []]
        frame = build_frame(list(detailed), CATALOG)
        return frame.set_index(["type", "name", "version"]).sort_index()

    def list(self, plugin_type: str) -> list[str]:
        """Names registered for a type. ``LIST /sys/plugins/catalog/:type``."""
        return self._list(f"/sys/plugins/catalog/{_type(plugin_type)}")

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
        self._send("POST", f"/sys/plugins/catalog/{plugin_type}/{segment(name)}", body)

    def read(self, plugin_type: str, name: str, version: str | None = None) -> Record:
        """One entry. ``GET /sys/plugins/catalog/:type/:name?version=`` (sudo).

        ``args``, ``builtin``, ``command``, ``name``, ``sha256``, ``version``.
        """
        path = f"/sys/plugins/catalog/{_type(plugin_type)}/{segment(name)}"
        return Record(self._read(path, _params(version)), kind="plugin")

    def delete(self, plugin_type: str, name: str, version: str | None = None) -> None:
        """Remove an entry. ``DELETE /sys/plugins/catalog/:type/:name?version=`` (sudo)."""
        path = f"/sys/plugins/catalog/{_type(plugin_type)}/{segment(name)}"
        self._http.json("DELETE", path, params=_params(version))
