"""Audit devices: where the sandbox logs every request and answer, as OpenBao's file
device does (one JSON object a line: a ``request`` entry, then a ``response`` entry).

A device hashes the secrets in what it logs (tokens, accessors, request and answer
values) with HMAC-SHA256 under a salt of its own, written ``hmac-sha256:<hex>``;
``sys/audit-hash/:path`` hashes a value the same way, so an operator can find a known
token's accessor in the log (:mod:`toolkit.auditlog`). The file is created readable by
its owner only. Devices are configured at start (``--audit-file``), as OpenBao 2.7
configures them: enabling one through the API is refused as it refuses it.

Plain state: the entries are built by the HTTP layer (``http._base``), which knows the
requests; this module hashes and writes them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidRequest

__all__ = ["AuditDevice", "AuditDevices", "HMAC_PREFIX"]

HMAC_PREFIX = "hmac-sha256:"


@dataclass
class AuditDevice:
    """A file audit device: its path (``file/``), the file it appends to, its salt."""

    path: str
    file_path: str
    salt: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    def hash(self, value: str) -> str:
        digest = hmac.new(self.salt, value.encode(), hashlib.sha256).hexdigest()
        return HMAC_PREFIX + digest

    def hash_values(self, value: Any) -> Any:
        """Every string in ``value`` hashed, as the device logs request and answer data
        (numbers and booleans are kept, as OpenBao keeps them)."""
        if isinstance(value, str):
            return self.hash(value)
        if isinstance(value, dict):
            return {k: self.hash_values(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.hash_values(v) for v in value]
        return value

    def write(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, separators=(",", ":"), default=str) + "\n"
        # Never through a link: the file is the operator's, created 0600 when missing.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(self.file_path, flags, 0o600)
        with os.fdopen(descriptor, "a", encoding="utf-8") as out:
            out.write(line)

    def document(self) -> dict[str, Any]:
        """The device as ``GET sys/audit`` shows it."""
        return {
            "type": "file",
            "description": "",
            "local": False,
            "path": self.path,
            "options": {"file_path": self.file_path},
        }


class AuditDevices:
    """The server's audit devices, by path (with its trailing ``/``)."""

    def __init__(self) -> None:
        self.devices: dict[str, AuditDevice] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"devices": self.devices}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.devices = state["devices"]
        self._lock = threading.Lock()

    def enable_file(self, path: str, file_path: str) -> AuditDevice:
        """A file device at ``path`` appending to ``file_path`` (start-up configuration)."""
        key = path.strip("/") + "/"
        device = AuditDevice(key, file_path)
        self.devices[key] = device
        return device

    def device(self, path: str) -> AuditDevice:
        """The device at ``path``; 400 ``unknown audit backend`` as OpenBao answers."""
        key = path.strip("/") + "/"
        found = self.devices.get(key)
        if found is None:
            raise InvalidRequest(f'unknown audit backend "{key}"')
        return found

    def log(self, build: Any) -> None:
        """Write an entry to each device: ``build(device)`` makes it (hashed its way)."""
        if not self.devices:
            return
        with self._lock:
            for device in self.devices.values():
                device.write(build(device))
