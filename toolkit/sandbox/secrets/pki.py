"""The certificate engine (spec 4.10): state and rules, no HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import SecretsService
    from .mounts import Mount

__all__ = ["PKI"]


class PKI:
    """One mount's state of the certificate engine (spec 4.10)."""

    def __init__(self, service: SecretsService, mount: Mount) -> None:
        self.service = service
        self.mount = mount
