"""The workspace platform client: one object, one attribute per API area."""

from __future__ import annotations

from typing import Any

from .._client import ServiceClient
from .._config import platform_settings
from .._http import RetryPolicy
from .._http.layer import FAN_OUT_TIMEOUT
from .._masking import Sensitive
from ._jsonapi import MEDIA_TYPE
from .agent_pools import AgentPools
from .organizations import Organizations
from .policy_set_parameters import PolicySetParameters
from .team_access import TeamAccess

__all__ = ["PlatformClient"]


class PlatformClient(ServiceClient):
    """A client of the workspace platform API (spec 000), base path ``/api/v2``.

    ``address`` and ``token`` default to ``TFE_ADDRESS`` and ``TFE_TOKEN``.
    Areas: :attr:`organizations`, :attr:`agent_pools`,
    :attr:`policy_set_parameters`, :attr:`team_access`. Lists return
    DataFrames; writes return the written record.
    """

    def __init__(
        self,
        address: str | None = None,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        verify: bool | None = None,
        ca_file: str | None = None,
        fan_out_timeout: float = FAN_OUT_TIMEOUT,
        max_concurrency: int = 8,
        retry: RetryPolicy | None = None,
        connector: Any = None,
    ) -> None:
        settings = platform_settings(address, token, ca_file=ca_file, verify=verify)
        super().__init__(
            settings,
            "/api/v2",
            {"Authorization": Sensitive(f"Bearer {settings.token}", "token"), "Accept": MEDIA_TYPE},
            timeout=timeout,
            fan_out_timeout=fan_out_timeout,
            max_concurrency=max_concurrency,
            retry=retry,
            connector=connector,
        )
        self.organizations = Organizations(self.http)
        self.agent_pools = AgentPools(self.http)
        self.policy_set_parameters = PolicySetParameters(self.http)
        self.team_access = TeamAccess(self.http)

    def ping(self) -> bool:
        """True when the API answers ``GET /ping``."""
        self.http.request("GET", "/ping")
        return True
