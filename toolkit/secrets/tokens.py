"""Tokens: create one, and look up the caller's own (``auth/token/*``).

Token values come back as :class:`~toolkit.Sensitive`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from .._errors import InputError
from .._records import Record
from .._time import parse_duration
from ._base import Area, hide, unwrap

__all__ = ["Tokens"]


class Tokens(Area):
    """``auth/token``: issuing and inspecting tokens."""

    def create(
        self,
        policies: Sequence[str] | None = None,
        ttl: str | int | timedelta | None = None,
        *,
        renewable: bool | None = None,
        display_name: str | None = None,
        no_parent: bool | None = None,
        meta: dict[str, str] | None = None,
    ) -> Record:
        """A new token. ``POST /auth/token/create``.

        Returns ``client_token`` (Sensitive), ``accessor``, ``policies``,
        ``lease_duration``, ``renewable``.
        """
        body: dict[str, Any] = {}
        if policies is not None:
            body["policies"] = list(policies)
        if ttl is not None:
            try:
                body["ttl"] = f"{parse_duration(ttl, field='ttl')}s"
            except ValueError as exc:
                raise InputError(str(exc)) from None
        for key, value in (
            ("renewable", renewable),
            ("display_name", display_name),
            ("no_parent", no_parent),
            ("meta", meta),
        ):
            if value is not None:
                body[key] = value
        payload = self._http.json(
            "POST",
            "/auth/token/create",
            json=body,
            check="list the token accessors (auth/token/accessors) and look them up by accessor",
        )
        auth = dict((payload or {}).get("auth") or {})
        return Record(hide(auth, "client_token", label="token"), kind="token")

    def lookup_self(self) -> Record:
        """The caller's token. ``GET /auth/token/lookup-self``; ``id`` is Sensitive."""
        data = unwrap(self._http.json("GET", "/auth/token/lookup-self"))
        return Record(hide(data, "id", label="token"), kind="token")

    def revoke_self(self) -> None:
        """Revoke the caller's own token, its children and its lease.

        ``POST /auth/token/revoke-self``. The client cannot be used afterwards.
        """
        self._http.json("POST", "/auth/token/revoke-self")
