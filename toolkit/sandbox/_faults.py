"""Faults the sandbox can inject, so that clients' handling of them can be tested.

``sandbox.faults.drop_after_apply("POST", "/v1/sys/rekey/update")`` makes the
next matching request run to completion (its change is applied and stored),
after which the connection is dropped before the answer's body is sent: the
client sees a dropped connection and cannot know whether its call was applied.
A correct client retries such a call only when applying it twice is harmless.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["ConnectionDropped", "Faults"]


class ConnectionDropped(Exception):
    """Raised inside the server to drop a connection after the answer started (never a bug)."""


@dataclass
class _Rule:
    method: str
    path: str
    remaining: int


class Faults:
    """The faults armed on one sandbox; thread-safe. ``dropped`` counts connections dropped."""

    def __init__(self) -> None:
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        self.dropped = 0

    def drop_after_apply(self, method: str, path: str, times: int = 1) -> None:
        """Drop the connection of the next ``times`` requests ``method path`` (path prefix)."""
        if times < 1:
            raise ValueError("times must be at least 1")
        with self._lock:
            self._rules.append(_Rule(method.upper(), path, times))

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def take(self, method: str, path: str) -> bool:
        """Whether this request is to be dropped (consuming one use of the rule)."""
        with self._lock:
            for rule in self._rules:
                if rule.method == method.upper() and path.startswith(rule.path):
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        self._rules.remove(rule)
                    self.dropped += 1
                    return True
        return False


class InjectFaults:
    """Pure ASGI middleware applying :class:`Faults` (outermost, so the change is applied first)."""

    def __init__(self, app: Any, faults: Faults) -> None:
        self.app = app
        self.faults = faults

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not self.faults.take(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return

        async def send_headers_then_drop(message: Any) -> None:
            if message["type"] != "http.response.start":
                await send(message)
                return
            # Headers that promise a body, then the connection closes (the server
            # closes a connection whose application fails mid-answer): the client
            # sees the answer cut off, whatever the status would have been.
            headers = [
                (k, v) for k, v in message.get("headers", []) if k.lower() != b"content-length"
            ]
            headers.append((b"content-length", b"65536"))
            status = 200 if message["status"] in (204, 304) else message["status"]
            await send({**message, "status": status, "headers": headers})
            raise ConnectionDropped(f"dropped {scope['method']} {scope['path']} after applying it")

        await self.app(scope, receive, send_headers_then_drop)
