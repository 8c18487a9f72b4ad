"""The mount table: which engine answers under which path (spec part 1).

The sandbox starts with the real server's own mounts (``sys/``,
``cubbyhole/``, ``identity/``, the ``token/`` auth method) and the spec's
default engine mounts (``keymgmt/``, ``ad/``, ``database/``, ``broker/``,
``pki/``), which the demo leases live under. ``GET sys/mounts`` and
``GET sys/auth`` read it.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Mount", "MountTable", "DEFAULT_ENGINE_MOUNTS"]

BUILTIN_VERSION = "v2.7.2+builtin.bao"

# The spec's default mount path of each engine, and the engine type it holds.
DEFAULT_ENGINE_MOUNTS: dict[str, tuple[str, str]] = {
    "keymgmt/": ("keymgmt", "key management"),
    "ad/": ("ad", "directory service accounts"),
    "database/": ("database", "database credentials"),
    "broker/": ("rabbitmq", "message broker credentials"),
    "pki/": ("pki", "certificates"),
}
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

    @property
    def accessor(self) -> str:
        digest = hashlib.sha256(self.path.encode()).hexdigest()[:8]
        return f"{self.type}_{digest}"

    def describe(self) -> dict[str, Any]:
        """The mount as ``sys/mounts`` shows it."""
        return {
            "accessor": self.accessor,
            "config": {
                "default_lease_ttl": self.default_lease_ttl,
                "force_no_cache": False,
                "max_lease_ttl": self.max_lease_ttl,
            },
            "description": self.description,
            "external_entropy_access": False,
            "local": self.local,
            "options": self.options,
            "plugin_version": "",
            "running_plugin_version": BUILTIN_VERSION,
            "running_sha256": "",
            "seal_wrap": self.seal_wrap,
            "type": self.type,
            "uuid": self.uuid,
        }


class MountTable:
    """Secrets engine mounts and auth method mounts, by path (with a trailing ``/``)."""

    def __init__(self) -> None:
        self.engines: dict[str, Mount] = {
            path: Mount(path, kind, text)
            for path, (kind, text) in {**_SYSTEM_MOUNTS, **DEFAULT_ENGINE_MOUNTS}.items()
        }
        self.auth: dict[str, Mount] = {
            "token/": Mount("token/", "token", "token based credentials")
        }

    def engine_table(self) -> dict[str, dict[str, Any]]:
        return {path: m.describe() for path, m in sorted(self.engines.items())}

    def auth_table(self) -> dict[str, dict[str, Any]]:
        return {path: m.describe() for path, m in sorted(self.auth.items())}

    def engine(self, path: str) -> Mount | None:
        return self.engines.get(path.strip("/") + "/")
