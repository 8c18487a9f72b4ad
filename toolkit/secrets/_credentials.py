"""What the credential engines' clients (database, message broker) share."""

from __future__ import annotations

from typing import Any, ClassVar

from .._errors import InputError
from .._records import Record
from ._base import EngineArea, Names, hide, lease_of, unwrap

__all__ = ["CredentialEngine", "issue_credentials", "required"]


def required(**values: Any) -> None:
    """Refuse a missing or blank argument before anything is sent, naming it."""
    for what, value in values.items():
        if value is None or (isinstance(value, str) and not value.strip()):
            raise InputError(f"a {what.replace('_', ' ')} is required")


def issue_credentials(area: EngineArea, role: str, kind: str) -> Record:
    """``GET /<mount>/creds/<role>``: ``role``, ``username``, ``password`` (Sensitive) and the lease.

    The lease fields are ``lease_id``, ``lease_duration``, ``renewable``.
    """
    required(role_name=role)
    payload = area._http.json("GET", area._path("creds/{role}", role=role))
    data = hide(unwrap(payload), "password", label="password")
    return Record(
        {"role": role, "username": data.get("username"), "password": data.get("password")}
        | lease_of(payload),
        kind=kind,
    )


class CredentialEngine(EngineArea):
    """An engine whose roles issue leased credentials (database, message broker):
    the calls that are the same for each, under the engine's own mount."""

    # The kind of the credentials' record (``database-credentials``, ...).
    credentials_kind: ClassVar[str]

    def list_roles(self) -> Names:
        """Role names (the roles that issue credentials). ``LIST /<mount>/roles``."""
        return self._list(self._path("roles"))

    def delete_role(self, name: str) -> None:
        """Delete a role (issued creds stay until their leases end). ``DELETE /<mount>/roles/:name``."""
        required(role_name=name)
        self._send("DELETE", self._path("roles/{name}", name=name))

    def generate_credentials(self, role: str) -> Record:
        """New credentials for ``role``: a new user. ``GET /<mount>/creds/:name``.

        Fields ``username``, ``password`` (:class:`~toolkit.Sensitive`),
        ``lease_id``, ``lease_duration``, ``renewable``. Revoking the lease
        removes the user.
        """
        return issue_credentials(self, role, self.credentials_kind)
