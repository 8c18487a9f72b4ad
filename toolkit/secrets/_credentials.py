"""What the credential engines' clients (database, message broker) share."""

from __future__ import annotations

from typing import Any

from .._errors import InputError
from .._records import Record
from ._base import EngineArea, hide, lease_of, unwrap

__all__ = ["issue_credentials", "required"]


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
