"""One account in the directory the engine binds to: what the engine and its library share."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

__all__ = ["DirectoryEntry"]


@dataclass
class DirectoryEntry:
    """One account in the directory the engine binds to (the sandbox's LDAP server)."""

    name: str  # the account name roles and sets use (userPrincipalName or sAMAccountName)
    dn: str
    password: str = field(default="", repr=False)
    password_last_set: datetime | None = None
