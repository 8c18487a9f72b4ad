"""The mount table: which engine answers under which path (spec part 1).

The sandbox starts with the real server's own mounts (``sys/``,
``cubbyhole/``, ``identity/``, the ``token/`` auth method) and each engine's
default mount (its descriptor's, see :mod:`.backends`), which the demo leases
live under. ``GET sys/mounts`` and
``GET sys/auth`` read it; ``POST``/``DELETE sys/mounts/:path`` enable and
disable an engine elsewhere, as on the real server.

Each engine mount carries its engine's state in :attr:`Mount.backend`, made
from its engine's descriptor (:mod:`.backends`) when the mount is enabled; the HTTP dispatcher in
``http/engines.py`` routes ``/v1/<mount>/...`` to that engine's handlers.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidRequest

__all__ = ["Mount", "MountTable", "SYSTEM_MAX_TTL"]

BUILTIN_VERSION = "v2.7.2+builtin.bao"
# The system's default and maximum lease ttl (768 hours), as on the real server.
SYSTEM_MAX_TTL = 768 * 3600
# Paths no engine may be mounted at or under.
_RESERVED = ("sys/", "auth/", "cubbyhole/", "identity/")

_SYSTEM_MOUNTS: dict[str, tuple[str, str]] = {
    "cubbyhole/": ("cubbyhole", "per-token private secret storage"),
    "identity/": ("identity", "identity store"),
    "sys/": ("system", "system endpoints used for control, policy and debugging"),
}


@dataclass
class Mount:
    path: str
    type: str
    description: str = ""
    default_lease_ttl: int = 0
    max_lease_ttl: int = 0
    local: bool = False
    seal_wrap: bool = False
    options: dict[str, str] | None = None
    uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    # The engine's state object (see :mod:`.backends`); None for system mounts.
    backend: Any = field(default=None, repr=False, compare=False)

    @property
    def accessor(self) -> str:
        digest = hashlib.sha256(self.path.encode()).hexdigest()[:8]
        return f"{self.type}_{digest}"

    def lease_ttls(self, system_max: int = SYSTEM_MAX_TTL) -> tuple[int, int]:
        """The mount's (default, max) lease ttl in seconds, the system's where unset."""
        max_ttl = self.max_lease_ttl or system_max
        default = self.default_lease_ttl or max_ttl
        return min(default, max_ttl), max_ttl


class MountTable:
    """Secrets engine mounts and auth method mounts, by path (with a trailing ``/``)."""

    def __init__(self, engine_mounts: Mapping[str, tuple[str, str]] | None = None) -> None:
        """The system mounts, and ``engine_mounts`` (path: (type, description)), the
        engines a fresh server has (``EngineRegistry.default_mounts()``; none in a namespace)."""
        self.engines: dict[str, Mount] = {
            path: Mount(path, kind, text)
            for path, (kind, text) in {**_SYSTEM_MOUNTS, **(engine_mounts or {})}.items()
        }
        # The login methods the sandbox serves at their default mounts are listed too,
        # so that a client discovers them as it would on a real server.
        self.auth: dict[str, Mount] = {
            path: Mount(path, kind, text)
            for path, (kind, text) in {
                "token/": ("token", "token based credentials"),
                "userpass/": ("userpass", "user names and passwords"),
                "ldap/": ("ldap", "directory users and groups"),
                "approle/": ("approle", "machine roles"),
            }.items()
        }

    def engine(self, path: str) -> Mount | None:
        return self.engines.get(path.strip("/") + "/")

    def match(self, api_path: str) -> Mount | None:
        """The engine mount that ``api_path`` (relative to /v1) falls under: the longest prefix."""
        best: Mount | None = None
        for path, mount in self.engines.items():
            if (api_path + "/").startswith(path) and (best is None or len(path) > len(best.path)):
                best = mount
        return best

    def enable(
        self,
        path: str,
        kind: str,
        *,
        description: str = "",
        default_lease_ttl: int = 0,
        max_lease_ttl: int = 0,
        options: dict[str, str] | None = None,
    ) -> Mount:
        """Add an engine mount at ``path`` (``POST sys/mounts/:path``); 400 when taken."""
        key = normalize_path(path)
        for reserved in _RESERVED:
            if key.startswith(reserved) or reserved.startswith(key):
                raise InvalidRequest(f"cannot mount under reserved path {reserved!r}")
        for existing in self.engines:
            if key.startswith(existing) or existing.startswith(key):
                raise InvalidRequest(f"path is already in use at {existing}")
        mount = Mount(
            key,
            kind,
            description,
            default_lease_ttl=default_lease_ttl,
            max_lease_ttl=max_lease_ttl,
            options=options,
        )
        self.engines[key] = mount
        return mount

    def disable(self, path: str) -> Mount | None:
        """Remove the engine mount at ``path``; None when nothing is mounted there."""
        key = normalize_path(path)
        if key in _SYSTEM_MOUNTS:
            raise InvalidRequest(f"cannot unmount {key!r}")
        return self.engines.pop(key, None)


def normalize_path(path: str) -> str:
    """A mount path as the table keys it: no leading ``/``, one trailing ``/``; 400 when empty."""
    key = path.strip().strip("/")
    if not key or "//" in key or any(part in (".", "..") for part in key.split("/")):
        raise InvalidRequest(f"invalid mount path {path!r}")
    return key + "/"
