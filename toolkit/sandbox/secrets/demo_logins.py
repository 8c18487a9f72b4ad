"""Demo logins: userpass users, LDAP directory users and groups, and AppRoles.

DEMO ONLY. The passwords below are published in this file so that the login
form and the runbooks work offline against the sandbox; they protect nothing.
A real server's users never have passwords written down anywhere.

The LDAP users are people who log in to the server. They are not the
directory engine's service accounts (:mod:`.engines.ad.demo`), which the
engine rotates and lends out and which never log in here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .logins import TokenSettings

if TYPE_CHECKING:
    from .models import SecretsService

__all__ = ["DEMO_APPROLES", "DEMO_LDAP_USERS", "DEMO_USERPASS_USERS", "load_demo_logins"]

# username: (demo-only password, policies)
DEMO_USERPASS_USERS: dict[str, tuple[str, list[str]]] = {
    "olivia": ("demo-olivia-pass", ["operators"]),
    "arthur": ("demo-arthur-pass", ["auditors"]),
}

# username: (demo-only password, directory groups)
DEMO_LDAP_USERS: dict[str, tuple[str, list[str]]] = {
    "lena.ops": ("demo-lena-pass", ["platform-ops"]),
    "sam.audit": ("demo-sam-pass", ["security-audit"]),
}

DEMO_LDAP_GROUPS: dict[str, list[str]] = {
    "platform-ops": ["operators"],
    "security-audit": ["auditors"],
}

# role name: (fixed role id, policies, token ttl, token max ttl)
DEMO_APPROLES: dict[str, tuple[str, list[str], int, int]] = {
    "nightly-audit": ("demo-role-nightly-audit", ["auditors"], 3600, 4 * 3600),
    "db-reader-app": ("demo-role-db-reader-app", ["db-readers"], 1800, 3600),
}


def load_demo_logins(service: SecretsService) -> None:
    logins = service.logins
    for name, (password, policies) in DEMO_USERPASS_USERS.items():
        logins.put_user(name, password, TokenSettings(list(policies)))
    for name, (password, groups) in DEMO_LDAP_USERS.items():
        logins.put_ldap_user(name, password, groups)
    for group, policies in DEMO_LDAP_GROUPS.items():
        logins.put_ldap_group(group, policies)
    for name, (role_id, policies, ttl, max_ttl) in DEMO_APPROLES.items():
        logins.put_role(name, TokenSettings(list(policies), ttl, max_ttl), role_id=role_id)
