"""``GET /account/details``: who the token stands for (a JSON:API ``users`` resource)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import BASE, PlatformRequest, Routes

__all__ = ["ROUTES", "account_document"]

ROUTES = Routes()


def account_document(account: Mapping[str, Any]) -> dict[str, Any]:
    """``GET /account/details``: the caller's user (JSON:API ``users``)."""
    user_id = account["id"]
    return {
        "data": {
            "id": user_id,
            "type": "users",
            "attributes": {
                "username": account["username"],
                "email": account["email"],
                "is-service-account": account["service"],
                "is-site-admin": account["site_admin"],
                "is-sso-login": False,
                "auth-method": "tfc",
                "v2-only": False,
                "unconfirmed-email": None,
                "avatar-url": None,
                "two-factor": {"enabled": False, "verified": False},
                "permissions": {
                    "can-create-organizations": not account["service"],
                    "can-change-email": not account["service"],
                    "can-change-username": not account["service"],
                    "can-manage-user-tokens": not account["service"],
                },
            },
            "relationships": {
                "authentication-tokens": {
                    "links": {"related": f"{BASE}/users/{user_id}/authentication-tokens"}
                }
            },
            "links": {"self": f"{BASE}/users/{user_id}"},
        }
    }


@ROUTES.handles("GET", "/account/details")
async def account_details(call: PlatformRequest) -> dict[str, Any]:
    """Who the token stands for."""
    return account_document(call.service.org_store.account(call.caller))
