"""Tokens: create one, look up the caller's own, and audit them all (``auth/token/*``).

Token values come back as :class:`~toolkit.Sensitive`. The audit never sees a
token's value: :meth:`Tokens.inventory` lists accessors (``LIST
auth/token/accessors``, which needs ``sudo``) and looks each up by accessor,
which answers everything but the id. :meth:`Tokens.findings` flags root
tokens and tokens that never expire, and reports a listing it was refused as a
finding rather than failing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from ..._coverage import Coverage, carries_coverage
from ..._errors import InputError, PermissionDenied, TokenRefused
from ..._frames import Schema, build_frame
from ..._http import Request, api_path, decode_json
from ..._records import Record
from ..._time import parse_duration
from ...findings import Finding, findings_frame
from .._base import (
    GONE_OR_REFUSED,
    SecretsArea,
    hide,
    listed_keys,
    lookup_requests,
    skipped,
    unwrap,
)
from ..checkpoint import DEFAULT_MAX_ROWS
from ._common import TOKEN_INVENTORY, inventory_row
from .sprawl import CHUNK as SCAN_CHUNK
from .sprawl import TokenScan, scan_tokens, token_sprawl

__all__ = ["TOKEN_INVENTORY", "TOKEN_ROLES", "Tokens", "token_findings"]

TOKEN_ROLES = Schema.of(
    """role allowed_policies:object disallowed_policies:object orphan:bool renewable:bool
    token_period:int token_explicit_max_ttl:int""",
    index="role",
)


class Tokens(SecretsArea):
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

    # -- the audit ------------------------------------------------------------------
    def list_accessors(self) -> list[str]:
        """The accessor of every token. ``LIST /auth/token/accessors`` (sudo)."""
        return self._list("/auth/token/accessors")

    def lookup_accessor(self, accessor: str) -> Record:
        """A token's properties by its accessor, without its id.

        ``POST /auth/token/lookup-accessor`` (a read, sent as POST).
        """
        if not accessor:
            raise InputError("accessor is required")
        payload = self._http.json(
            "POST", "/auth/token/lookup-accessor", json={"accessor": accessor}, idempotent=True
        )
        data = unwrap(payload)
        data.pop("id", None)  # empty on this endpoint; never kept
        return Record(data, kind="token")

    def inventory(self) -> pd.DataFrame:
        """Every token, by accessor, without any token's value.

        ``LIST /auth/token/accessors`` (sudo), then ``POST
        /auth/token/lookup-accessor`` for each accessor concurrently (the
        lookups are reads, so they are marked safe to repeat). Index
        ``accessor``; columns ``display_name``, ``policies`` (a list), ``ttl``
        (seconds left, 0 when it never expires), ``creation_ttl``,
        ``issue_time``, ``expire_time`` (empty when it never expires),
        ``orphan``, ``path`` (where it was created), ``type``. A token revoked
        between the listing and its lookup is left out. Raises
        :class:`~toolkit.PermissionDenied` when the caller may not list accessors.
        """
        cov = Coverage("tokens.inventory", asked=["auth/token/accessors"])
        todo = self.list_accessors()
        calls = lookup_requests(
            "/auth/token/lookup-accessor", "accessor", todo, ok_statuses=GONE_OR_REFUSED
        )
        rows = []
        for accessor, response in zip(todo, self._http.many(calls), strict=True):
            if skipped(cov, f"auth/token/lookup-accessor ({accessor})", response, self._http):
                continue
            data = unwrap(decode_json(response, "POST"))
            rows.append(inventory_row(accessor, data))
        cov.note_read(len(rows))
        return cov.attach(build_frame(rows, TOKEN_INVENTORY))

    def scan(
        self,
        *,
        chunk: int = SCAN_CHUNK,
        checkpoint: str | Path | None = None,
        max_rows: int = DEFAULT_MAX_ROWS,
        deadline: float | None = None,
    ) -> TokenScan:
        """Every token by accessor, streamed, memory bounded and resumable:
        :func:`~toolkit.secrets.tokens.sprawl.scan_tokens` (the inventory at scale)."""
        return scan_tokens(
            self._http, chunk=chunk, checkpoint=checkpoint, max_rows=max_rows, deadline=deadline
        )

    def token_sprawl(
        self,
        *,
        max_age: timedelta = timedelta(days=90),
        checkpoint: str | Path | None = None,
    ) -> pd.DataFrame:
        """Root tokens, tokens that never expire, orphans, tokens older than ``max_age``,
        by creation path: :func:`~toolkit.secrets.tokens.sprawl.token_sprawl` of :meth:`scan`
        (``frame.attrs["coverage"]`` says what could not be read)."""
        scan = self.scan(checkpoint=checkpoint)
        frame = token_sprawl(scan, max_age=max_age)
        frame.attrs["coverage"] = scan.walk.coverage(
            "tokens.token_sprawl", ["auth/token/accessors"]
        )
        return frame

    def roles_frame(self) -> pd.DataFrame:
        """Token roles and the policies they may grant.

        ``LIST /auth/token/roles``, then ``GET /auth/token/roles/:name`` each.
        Index ``role``; columns ``allowed_policies``, ``disallowed_policies``
        (lists), ``orphan``, ``renewable``, ``token_period``,
        ``token_explicit_max_ttl`` (seconds). No roles (or a server without
        them) is an empty frame.
        """
        cov = Coverage("tokens.roles_frame", asked=["auth/token/roles"])
        names = self._list("/auth/token/roles")
        calls = [
            Request(
                "GET",
                api_path("/auth/token/roles/{listed_role}", listed_role=n),
                ok_statuses=GONE_OR_REFUSED,
            )
            for n in names
        ]
        rows = []
        for name, response in zip(names, self._http.many(calls), strict=True):
            if skipped(cov, f"auth/token/roles/{name}", response, self._http):
                continue
            data = unwrap(decode_json(response, "GET"))
            rows.append(
                {
                    "role": name,
                    "allowed_policies": listed_keys(
                        data.get("allowed_policies"), "allowed_policies"
                    ),
                    "disallowed_policies": listed_keys(
                        data.get("disallowed_policies"), "disallowed_policies"
                    ),
                    "orphan": data.get("orphan"),
                    "renewable": data.get("renewable"),
                    "token_period": data.get("token_period", data.get("period")),
                    "token_explicit_max_ttl": data.get(
                        "token_explicit_max_ttl", data.get("explicit_max_ttl")
                    ),
                }
            )
        cov.note_read(len(rows))
        return cov.attach(build_frame(rows, TOKEN_ROLES))

    def findings(self) -> pd.DataFrame:
        """What is wrong with the tokens: :func:`token_findings` of :meth:`inventory`.

        When the caller may not list accessors (no ``sudo``), the answer is one
        finding saying so instead of an error: the audit is incomplete, not failed.
        """
        try:
            inventory = self.inventory()
        except TokenRefused:
            raise
        except PermissionDenied as exc:
            cov = Coverage("tokens.findings", asked=["auth/token/accessors"])
            cov.note_error("auth/token/accessors", exc)
            return cov.attach(
                findings_frame(
                    [
                        Finding(
                            "medium",
                            "tokens",
                            "auth/token/accessors",
                            "not permitted: listing token accessors needs sudo; tokens not audited",
                        )
                    ]
                )
            )
        found = token_findings(inventory)
        found.attrs["coverage"] = inventory.attrs.get("coverage")
        return found


@carries_coverage("tokens.token_findings")
def token_findings(inventory: pd.DataFrame) -> pd.DataFrame:
    """Findings of a :meth:`Tokens.inventory` frame.

    - **critical**: a root token (holds the ``root`` policy);
    - **high**: a token that never expires (no expiry time and no ttl).
    """
    found: list[Finding] = []
    for accessor, row in inventory.iterrows():
        name = f"{accessor} ({row['display_name']})"
        policies = list(row["policies"] or [])
        if "root" in policies:
            found.append(Finding("critical", "tokens", name, "root token: holds the root policy"))
        # No expiry and a ttl of 0; a ttl the answer left out says nothing either way.
        if pd.isna(row["expire_time"]) and pd.notna(row["ttl"]) and row["ttl"] == 0:
            found.append(
                Finding("high", "tokens", name, f"never expires (policies {', '.join(policies)})")
            )
    return findings_frame(found)
