"""Demonstration traffic for the sandbox: its demo principals log in and use their tokens,
and the sandbox's own file audit device logs it, for the least-privilege review to read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._errors import APIError, InputError

__all__ = ["audit_file_of", "sandbox_demo_traffic"]

# (login method, who, demo-only password) of the demo principals (published in the
# sandbox's demo data: they protect nothing); AppRole logs in with a fresh secret id.
_LOGINS = (
    ("userpass", "olivia", "demo-olivia-pass"),
    ("userpass", "arthur", "demo-arthur-pass"),
    ("ldap", "lena.ops", "demo-lena-pass"),
    ("approle", "nightly-audit", ""),
)
# What each principal does with its token (``METHOD path``, in this order); some of
# it is refused.
_TRAFFIC = {
    "olivia": (
        "LIST sys/policies/acl",
        "GET sys/policies/acl/db-readers",
        "GET sys/policies/acl/operators",
        "LIST sys/leases/lookup/database/creds/readonly",
    ),
    "arthur": (
        "LIST sys/policies/acl",
        "GET sys/policies/acl/operators",
        "GET sys/policies/acl/auditors",
        "GET database/creds/readonly",
    ),
    "lena.ops": ("LIST sys/policies/acl", "GET sys/policies/acl/team-access"),
    "nightly-audit": ("LIST sys/policies/acl", "GET sys/policies/acl/auditors"),
}
_ROLE_ID = "demo-role-nightly-audit"


def audit_file_of(client: Any) -> Path:
    """The file the server's file audit device writes (``GET sys/audit``, sudo): the
    first file device's ``file_path``. ``InputError`` when there is none."""
    from ..secrets._base import unwrap

    devices = unwrap(client.http.json("GET", "/sys/audit"))
    for _, device in sorted(devices.items()):
        if isinstance(device, dict) and device.get("type") == "file":
            file_path = (device.get("options") or {}).get("file_path")
            if file_path and file_path not in ("stdout", "discard"):
                return Path(file_path)
    raise InputError(
        "the server has no file audit device: start the sandbox with --audit-file FILE, "
        "or give audit_log"
    )


def sandbox_demo_traffic(client: Any) -> Path:
    """Log the sandbox's demo principals in and send their requests for real, through
    the sandbox ``client`` points at (its owner token makes the AppRole secret id);
    return the file its audit device wrote them to (:func:`audit_file_of`). For the
    runbook's demonstration only: a live review reads the log of the server's own use."""
    from ..secrets import SecretsClient

    log = audit_file_of(client)
    users: dict[str, Any] = {}
    try:
        for method, who, password in _LOGINS:
            if method == "approle":
                answer = client.http.json("POST", f"/auth/approle/role/{who}/secret-id")
                fields = {"role_id": _ROLE_ID, "secret_id": answer["data"]["secret_id"]}
            else:
                fields = {"username": who, "password": password}
            users[who] = SecretsClient.login(method, client.address, **fields)
        for who, requests in _TRAFFIC.items():
            for request in requests:
                method, path = request.split(" ", 1)
                try:
                    users[who].http.json(method, f"/{path}")
                except APIError as exc:
                    if exc.status != 403:
                        raise
    finally:
        for user in users.values():
            user.close()
    return log
