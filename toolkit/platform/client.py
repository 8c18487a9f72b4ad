"""The workspace platform client: one object, one attribute per API area."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from .._card import connection_card
from .._client import ServiceClient
from .._config import hidden_token, platform_settings
from .._errors import NotFound, ToolkitError, Unauthorized
from .._http import RetryPolicy, decode_json
from .._http.layer import FAN_OUT_TIMEOUT
from .._masking import Sensitive
from .._records import Record
from .._spec.jsonapi import MEDIA_TYPE
from ._jsonapi import resource_of
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
        token: str | Sensitive | None = None,
        *,
        timeout: float = 30.0,
        verify: bool | None = None,
        ca_file: str | None = None,
        fan_out_timeout: float = FAN_OUT_TIMEOUT,
        max_concurrency: int = 8,
        retry: RetryPolicy | None = None,
        connector: Any = None,
    ) -> None:
        token = hidden_token(token)  # no frame of a failed construction holds it plain
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

    def explain(self, exc: ToolkitError) -> ToolkitError:
        """A 404 names what was not found (an organization, workspace, team, agent
        pool, agent or policy set), and that it may exist unseen by this token; a 401
        says to get a new token."""
        exc = super().explain(exc)
        if type(exc) is NotFound:
            return _named_not_found(exc, self.address)
        if type(exc) is Unauthorized and not exc.hint:
            exc.hint = (
                "the service refused the token: create a new one (user settings, "
                "or `terraform login`) and set TFE_TOKEN"
            )
        return exc

    def ping(self) -> bool:
        """True when the API answers and accepts the token; raises otherwise.

        ``GET /ping`` needs no token, so it only shows the service is up; an
        authenticated read (``GET /organizations``, one record) then checks the
        token: a token the service refuses raises :class:`~toolkit.Unauthorized`.
        """
        self.http.request("GET", "/ping")
        self.http.request("GET", "/organizations", params={"page[size]": 1})
        return True

    # -- who and where: health, authentication, the connection card -------------------
    def health(self) -> Record:
        """What the service says of itself. ``GET /ping`` (no token needed).

        ``status`` (the HTTP status), and from the answer's headers ``api_version``
        (``TFP-API-Version``), ``app`` (``TFP-AppName``) and ``version``
        (``X-TFE-Version``, on self-hosted installations); a header the service
        does not send is None. Raises :class:`~toolkit.ConnectError` when nothing
        answers.
        """
        response = self.http.request("GET", "/ping")
        headers = response.headers
        return Record(
            {
                "status": response.status_code,
                "api_version": headers.get("TFP-API-Version"),
                "app": headers.get("TFP-AppName"),
                "version": headers.get("X-TFE-Version"),
            },
            kind="health",
        )

    def is_authenticated(self) -> bool:
        """True when the service accepts the token. ``GET /organizations`` (its first page).

        ``/ping`` needs no token, so an authenticated read is what proves one. False
        on 401; anything else (no answer) raises, since it says nothing about the token.
        """
        try:
            self.http.request("GET", "/organizations", params={"page[size]": 1})
        except Unauthorized:
            return False
        return True

    def connection(self) -> Record:
        """Where this client points and what the service says of it and of the token.

        ``address``, ``state``, ``api_version``, ``app``, ``version``,
        ``authenticated``, the ``organizations`` the token sees, and the
        ``token_owner``: the user of a user token, from ``GET /account/details``
        (an organization or team token has none). From ``GET /ping``,
        ``GET /organizations`` and ``GET /account/details``. Never raises: what
        could not be read is said in ``problem``.
        """
        facts: dict[str, Any] = {"address": self.address}
        try:
            health = self.health()
        except ToolkitError as exc:
            return Record({**facts, "state": "unreachable", "problem": str(exc)}, kind="connection")
        facts["state"] = "answering"
        facts.update({k: v for k, v in health.items() if k != "status" and v is not None})
        try:
            names = self.organizations.organizations_frame()["name"]
        except Unauthorized:
            facts["authenticated"] = False
            return Record(facts, kind="connection")
        except ToolkitError as exc:
            facts["authenticated"] = "unknown"
            facts["problem"] = f"organizations not read: {exc}"
            return Record(facts, kind="connection")
        facts["authenticated"] = True
        facts["organizations"] = [str(n) for n in names]
        facts["token_owner"] = self._token_owner()
        return Record(facts, kind="connection")

    def account(self) -> Record:
        """Who the token stands for. ``GET /account/details``.

        ``username``, ``email``, ``user_id``, ``service_account`` (True for an
        organization or team token, which the service gives a service-account user
        of its own), ``site_admin``, and ``kind``: ``user``, ``organization token``,
        ``team token`` or ``service account``. A service that answers 404 (an
        installation without the endpoint) gives ``kind`` "unknown".
        """
        response = self.http.request("GET", "/account/details", ok_statuses={404})
        if response.status_code == 404:
            return Record({"kind": "unknown", "username": None}, kind="account")
        user = resource_of(decode_json(response), "the account")
        service = bool(user.get("is_service_account"))
        name = str(user.get("username") or "")
        kind = "user"
        if service:
            kind = (
                "organization token"
                if name.startswith("api-org-")
                else "team token"
                if name.startswith("api-team")
                else "service account"
            )
        return Record(
            {
                "kind": kind,
                "username": name or None,
                "email": user.get("email"),
                "user_id": user.get("id"),
                "service_account": service,
                "site_admin": bool(user.get("is_site_admin")),
            },
            kind="account",
        )

    def _token_owner(self) -> str:
        try:
            account = self.account()
        except ToolkitError as exc:
            return f"not read: {exc}"
        name, kind = account.get("username"), account["kind"]
        if kind == "unknown":
            return "unknown (the service has no account/details)"
        if kind != "user":
            return f"{kind} ({name})"
        admin = ", site administrator" if account.get("site_admin") else ""
        email = account.get("email")
        return f"{name}" + (f" <{email}>" if email else "") + admin

    def _repr_html_(self) -> str:
        return connection_card(
            f"Workspace platform {self.address}", self.address, self.connection, "answering"
        )


# The platform's records by the first segment of their path, as the message names them.
_RECORDS = {
    "organizations": "organization",
    "workspaces": "workspace",
    "teams": "team",
    "agent-pools": "agent pool",
    "agents": "agent",
    "policy-sets": "policy set",
    "team-workspaces": "team access record",
}


def _named_not_found(exc: NotFound, address: str) -> NotFound:
    """``exc`` naming the record the path asked for: the service answers 404 both
    for a record that does not exist and for one the token may not see."""
    path = urlsplit(exc.url).path
    prefix = urlsplit(address).path.rstrip("/") + "/api/v2/"
    parts = path[len(prefix) :].split("/") if path.startswith(prefix) else []
    if len(parts) < 2 or parts[0] not in _RECORDS:
        return exc
    what = _RECORDS[parts[0]]
    return exc.restated(
        NotFound,
        [f"{what} {unquote(parts[1])!r} not found, or not visible to this token"],
        hint=(
            f"check the {what}'s name or id (`client.organizations.list_organizations()` "
            "lists what this token sees), or use a token of a team that can see it"
        ),
    )
