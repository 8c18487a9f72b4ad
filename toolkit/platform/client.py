"""The workspace platform client: one object, one attribute per API area."""

from __future__ import annotations

from typing import Any

from .._config import platform_settings
from .._http import HTTPLayer, RetryPolicy
from ._jsonapi import MEDIA_TYPE
from .agent_pools import AgentPools
from .organizations import Organizations
from .policy_set_parameters import PolicySetParameters
from .team_access import TeamAccess

__all__ = ["PlatformClient"]


class PlatformClient:
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
        max_concurrency: int = 8,
        retry: RetryPolicy | None = None,
        transport: Any = None,
    ) -> None:
        settings = platform_settings(address, token, ca_file=ca_file, verify=verify)
        self.address = settings.address.rstrip("/")
        self.http = HTTPLayer(
            settings.address,
            "/api/v2",
            headers={"Authorization": f"Bearer {settings.token}", "Accept": MEDIA_TYPE},
            timeout=timeout,
            verify=settings.verify,
            ca_file=settings.ca_file,
            retry=retry,
            max_concurrency=max_concurrency,
            transport=transport,
        )
        self.organizations = Organizations(self.http)
        self.agent_pools = AgentPools(self.http)
        self.policy_set_parameters = PolicySetParameters(self.http)
        self.team_access = TeamAccess(self.http)

    def ping(self) -> bool:
        """True when the API answers ``GET /ping``."""
        self.http.request("GET", "/ping")
        return True

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> PlatformClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<PlatformClient {self.address}>"
