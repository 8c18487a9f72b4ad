"""What a secrets engine may use of the server that mounts it: a narrow interface.

An engine's state (``engines/<name>/state.py``) and demo loader are handed the
server as an :class:`EngineHost`, never as the whole :class:`~.models.SecretsService`:
they reach the clock, the lease manager, the token store, the password
policies, the plugin catalog and the mount table, and nothing else. The
service satisfies this protocol; so the engines import the stores they use,
and the service that holds the engines imports none of them (no import cycle
runs through the service, see ``tests/sandbox/test_house.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .._clock import Clock
    from .leases import LeaseStore
    from .mounts import MountTable
    from .password_policies import PasswordPolicyStore
    from .plugins import PluginCatalog
    from .tokens import TokenStore

__all__ = ["EngineHost"]


class EngineHost(Protocol):
    """The parts of the secrets server an engine uses (read-only attributes)."""

    @property
    def clock(self) -> Clock: ...

    @property
    def leases(self) -> LeaseStore: ...

    @property
    def tokens(self) -> TokenStore: ...

    @property
    def password_policies(self) -> PasswordPolicyStore: ...

    @property
    def plugins(self) -> PluginCatalog: ...

    @property
    def mounts(self) -> MountTable: ...
