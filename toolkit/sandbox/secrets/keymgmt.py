"""The key management engine (spec 4.6, part 2 'Managed key', 'KMS provider', part 3 'Key distribution'): state and rules, no HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import SecretsService
    from .mounts import Mount

__all__ = ["KeyManagement"]


class KeyManagement:
    """One mount's state of the key management engine (spec 4.6, part 2 'Managed key', 'KMS provider', part 3 'Key distribution')."""

    def __init__(self, service: SecretsService, mount: Mount) -> None:
        self.service = service
        self.mount = mount
