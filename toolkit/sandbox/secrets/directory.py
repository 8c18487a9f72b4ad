"""The directory (AD) engine (spec 4.7, part 3 'Library service account'): state and rules, no HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .models import SecretsService
    from .mounts import Mount

__all__ = ["Directory"]


class Directory:
    """One mount's state of the directory (AD) engine (spec 4.7, part 3 'Library service account')."""

    def __init__(self, service: SecretsService, mount: Mount) -> None:
        self.service = service
        self.mount = mount
