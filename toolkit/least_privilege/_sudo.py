"""The paths OpenBao protects with ``sudo``: its OpenAPI document's ``x-vault-sudo`` marks.

``sudo_paths.json`` was written from OpenBao 2.7.2's ``sys/internal/specs/openapi``
(never typed by hand); ``tests/real/test_least_privilege.py`` compares it with the
running server's document, so a new OpenBao that marks another path fails there.
"""

from __future__ import annotations

import functools
import json
import re
from importlib.resources import files

__all__ = ["needs_sudo", "sudo_paths"]


@functools.lru_cache(maxsize=1)
def sudo_paths() -> tuple[str, ...]:
    """The OpenAPI paths marked ``x-vault-sudo`` (``/sys/auth/{path}``), as shipped."""
    text = (files("toolkit.least_privilege") / "sudo_paths.json").read_text(encoding="utf-8")
    return tuple(json.loads(text)["paths"])


@functools.lru_cache(maxsize=1)
def _regex() -> re.Pattern[str]:
    pieces = []
    for path in sudo_paths():
        body = path.strip("/")
        parts = re.split(r"(\{[^}]*\})", body)
        # A parameter is one segment, except the last one of a path, which the server's
        # route reads to the end (``sys/leases/lookup/{prefix}`` takes ``a/b/c``).
        text = "".join(
            (".+" if i == len(parts) - 2 else "[^/]+") if p.startswith("{") else re.escape(p)
            for i, p in enumerate(parts)
        )
        pieces.append(text + "/?")
    return re.compile("|".join(f"(?:{p})" for p in pieces))


@functools.lru_cache(maxsize=65536)
def needs_sudo(path: str) -> bool:
    """Whether a request on ``path`` needs ``sudo`` as well as its capability."""
    return _regex().fullmatch(path.strip("/") + ("/" if path.endswith("/") else "")) is not None
