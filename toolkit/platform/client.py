"""The workspace platform client: one object, one attribute per API area."""

from __future__ import annotations

from typing import Any

from .._client import ServiceClient
from .._config import platform_settings
from .._http import RetryPolicy
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
        max_concurrency: int = 8,
        pipeline: int = 8,
        retry: RetryPolicy | None = None,
        transport: Any = None,
    ) -> None:
        settings = platform_settings(address, token, ca_file=ca_file, verify=verify)
        super().__init__(
            settings,
            "/api/v2",
            {"Authorization": f"Bearer {settings.token}", "Accept": MEDIA_TYPE},
            timeout=timeout,
            max_concurrency=max_concurrency,
            pipeline=pipeline,
            retry=retry,
            transport=transport,
        )
        self.organizations = Organizations(self.http)
        self.agent_pools = AgentPools(self.http)
        self.policy_set_parameters = PolicySetParameters(self.http)
        self.team_access = TeamAccess(self.http)

    def ping(self) -> bool:
        """True when the API answers and accepts the token; raises otherwise.

        ``GET /ping`` needs no token, so it only shows the service is up; an
        authenticated read (``GET /organizations``, one record) then checks the
        token: a token the service refuses raises :class:`~toolkit.Unauthorized`.
        """
        self.http.request("GET", "/ping")
        self.http.request("GET", "/organizations", params={"page[size]": 1})
        return True
