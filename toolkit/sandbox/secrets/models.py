"""The secrets server's state: one object holding every area's state class."""

from __future__ import annotations

import threading
from typing import Any

from .._clock import Clock
from .errors import SecretsError

__all__ = ["SecretsService"]


class SecretsService:
    """Everything the sandbox's secrets server knows, with no HTTP in it."""

    def __init__(
        self,
        *,
        clock: Clock,
        root_token: str,
        key_shares: int = 5,
        key_threshold: int = 3,
    ) -> None:
        self.clock = clock
        self.root_token = root_token
        # One lock for the whole service: handlers run one at a time under it,
        # so concurrent requests see each change whole.
        self.lock = threading.RLock()
        self.sealed = False

    # -- tokens and access --------------------------------------------------------
    def authenticate(self, token_id: str | None) -> Any:
        """The token record for ``token_id``; 403 ``permission denied`` when unknown."""
        if token_id and token_id == self.root_token:
            return token_id
        raise SecretsError(403, "permission denied")

    def authorize(self, token: Any, path: str, capability: str, *, sudo: bool = False) -> None:
        """Raise 403 ``permission denied`` unless ``token`` holds ``capability`` on ``path``."""
        if token == self.root_token:
            return
        raise SecretsError(403, "permission denied")

    def write_init_file(self, path: str) -> None:
        raise SecretsError(500, "the initial shares are not available yet")
