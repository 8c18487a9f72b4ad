"""The message-broker engine (spec 4.9): state and rules, no HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import SecretsService
    from .mounts import Mount

__all__ = ["Broker"]


class Broker:
    """One mount's state of the message-broker engine (spec 4.9)."""

    def __init__(self, service: SecretsService, mount: Mount) -> None:
        self.service = service
        self.mount = mount
