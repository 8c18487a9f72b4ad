"""Calls of the directory (AD) engine (spec 4.7), against any mount (default ``ad``).

One method an endpoint: the configuration, roles and their rotated
credentials, the library of service accounts (sets, check-out, check-in,
status) and root rotation. Passwords come back as :class:`~toolkit.Sensitive`.

Views: :meth:`AD.library_status` (every account of every set, with its
borrower and the lease it is out under) and :meth:`AD.roles_frame`.

The server does not say which lease an account is lent under (a lease lookup
gives only times), so the status view matches leases to accounts by what
this client knows: the leases of the check-outs it made, and, in a set where
exactly one borrowed account and exactly one lease are left unmatched, that
pair. Other borrowed accounts show no lease.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from functools import partial
from typing import Any, Self

import pandas as pd

from .._errors import APIError, InputError
from .._frames import Schema, build_frame
from .._http import HTTPLayer
from .._masking import Sensitive, hidden, reveal
from .._progress import walking
from .._records import Record, integer
from .._time import later, parse_duration, parse_time
from ._base import EngineArea, fields_of, hide, lease_of, unwrap, warnings_of
from .leases import Leases

__all__ = ["LIBRARY_STATUS", "ROLES", "AD"]

LIBRARY_STATUS = Schema.of(
    "account set available:bool borrower lease_id lease_expiry:datetime",
    index="account",
)

ROLES = Schema.of(
    """role service_account_name ttl:int last_service_rotation:datetime
    password_last_set:datetime next_rotation:datetime""",
    index="role",
)

Duration = int | str | timedelta


def _names(value: str | Iterable[str] | None) -> list[str] | None:
    if value is None:
        return None
    names = [value] if isinstance(value, str) else list(value)
    return [n for n in (str(x).strip() for x in names) if n]


def _seconds(value: Duration | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        return parse_duration(value, field=name)
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None


class AD(EngineArea):
    """The directory (AD) engine (spec 4.7); ``client.ad.at(path)`` for another mount."""

    def __init__(self, http: HTTPLayer, mount: str) -> None:
        super().__init__(http, mount)
        # The leases of the check-outs made through this client: (mount, set, account) -> id.
        self._lent: dict[tuple[str, str, str], str] = {}

    def at(self, mount: str) -> Self:
        other = super().at(mount)
        other._lent = self._lent
        return other

    # -- configuration ----------------------------------------------------------------
    def configure(self, binddn: str, bindpass: str | Sensitive, **options: Any) -> None:
        """Write the engine's configuration. ``POST /<mount>/config``.

        ``options`` are the other parameters of spec 4.7 (``url``, ``userdn``,
        ``upndomain``, ``ttl``, ``max_ttl``, ``password_policy`` or the
        deprecated ``length``/``formatter``, TLS settings...). The write
        replaces the whole configuration.
        """
        if not binddn:
            raise InputError("binddn is required")
        if not reveal(bindpass):
            raise InputError("bindpass is required")
        if options.get("password_policy") and (
            options.get("length") is not None or options.get("formatter")
        ):
            raise InputError("password_policy is exclusive with length and formatter")
        body = {"binddn": binddn, "bindpass": hidden(bindpass, "password"), **options}
        del bindpass
        self._send("POST", self._path("config"), body)

    def read_config(self) -> Record:
        """The configuration (never ``bindpass``). ``GET /<mount>/config``."""
        return self._record(self._read(self._path("config")), "directory-config")

    def delete_config(self) -> None:
        """Remove the configuration. ``DELETE /<mount>/config``."""
        self._send("DELETE", self._path("config"))

    def rotate_root(self) -> list[str]:
        """Rotate ``bindpass`` to a value only the server knows. ``GET /<mount>/rotate-root``.

        Returns the warnings: empty when the rotation was done (204), one when
        another rotation was already running (200).
        """
        return warnings_of(self._http.json("GET", self._path("rotate-root")))

    # -- roles ------------------------------------------------------------------------
    def list_roles(self) -> list[str]:
        """Role names. ``LIST /<mount>/roles``."""
        return self._list(self._path("roles"))

    def write_role(
        self, name: str, service_account_name: str | None = None, *, ttl: Duration | None = None
    ) -> None:
        """Create or update a role. ``POST /<mount>/roles/:name``.

        The account must exist in the directory; ``ttl`` defaults to the
        configuration's and may not exceed its ``max_ttl``.
        """
        if not name:
            raise InputError("a role needs a name")
        body: dict[str, Any] = {}
        if service_account_name:
            body["service_account_name"] = service_account_name
        seconds = _seconds(ttl, "ttl")
        if seconds is not None:
            body["ttl"] = seconds
        self._send("POST", self._path("roles/{name}", name=name), body)

    def read_role(self, name: str) -> Record:
        """A role: ``service_account_name``, ``ttl``, ``last_service_rotation`` and
        ``password_last_set`` (UTC datetimes, None when never). ``GET /<mount>/roles/:name``.
        """
        data = self._read(self._path("roles/{name}", name=name))
        for key in ("last_service_rotation", "password_last_set"):
            data[key] = parse_time(data.get(key) or None)
        return self._record({"name": name, **data}, "directory-role")

    def delete_role(self, name: str) -> None:
        """Remove a role. ``DELETE /<mount>/roles/:name``."""
        self._send("DELETE", self._path("roles/{name}", name=name))

    def creds(self, name: str) -> Record:
        """A role's ``username``, ``current_password`` and ``last_password`` (Sensitive).

        The server rotates the password first when the role's ttl has passed.
        ``GET /<mount>/creds/:name``.
        """
        data = self._read(self._path("creds/{name}", name=name))
        return self._record(
            hide(data, "current_password", "last_password", label="password"), "directory-creds"
        )

    # -- library ----------------------------------------------------------------------
    def list_sets(self) -> list[str]:
        """Library set names. ``LIST /<mount>/library``."""
        return self._list(self._path("library"))

    def write_set(
        self,
        name: str,
        service_account_names: str | Iterable[str] | None = None,
        *,
        ttl: Duration | None = None,
        max_ttl: Duration | None = None,
        disable_check_in_enforcement: bool | None = None,
    ) -> None:
        """Create or update a library set. ``POST /<mount>/library/:name``.

        Accounts must exist in the directory and be in no other set or role;
        ``ttl`` and ``max_ttl`` default to 24 hours, 0 meaning unlimited.
        """
        if not name:
            raise InputError("a library set needs a name")
        body: dict[str, Any] = {"name": name}
        names = _names(service_account_names)
        if names is not None:
            if not names:
                raise InputError("service_account_names is empty")
            body["service_account_names"] = names
        for key, value in (("ttl", ttl), ("max_ttl", max_ttl)):
            seconds = _seconds(value, key)
            if seconds is not None:
                body[key] = seconds
        if disable_check_in_enforcement is not None:
            body["disable_check_in_enforcement"] = disable_check_in_enforcement
        self._send("POST", self._path("library/{name}", name=name), body)

    def read_set(self, name: str) -> Record:
        """A set: ``service_account_names``, ``ttl``, ``max_ttl``,
        ``disable_check_in_enforcement``. ``GET /<mount>/library/:name``.
        """
        return self._record(
            {"name": name, **self._read(self._path("library/{name}", name=name))}, "library-set"
        )

    def delete_set(self, name: str) -> None:
        """Remove a set. ``DELETE /<mount>/library/:name``."""
        self._send("DELETE", self._path("library/{name}", name=name))

    def check_out(self, name: str, *, ttl: Duration | None = None) -> Record:
        """Borrow a free account of the set. ``POST /<mount>/library/:name/check-out``.

        ``ttl`` is capped by the server at the set's. Returns
        ``service_account_name``, ``password`` (Sensitive), ``lease_id``,
        ``lease_duration`` (seconds), ``renewable``. 400 when none is free.
        """
        body: dict[str, Any] = {"name": name}
        seconds = _seconds(ttl, "ttl")
        if seconds is not None:
            body["ttl"] = seconds
        payload = self._send("POST", self._path("library/{name}/check-out", name=name), body)
        data = unwrap(payload)
        record = {**hide(data, "password", label="password"), **lease_of(payload)}
        account = str(record.get("service_account_name") or "")
        if account and record.get("lease_id"):
            self._lent[(self.mount, name, account)] = str(record["lease_id"])
        return self._record(record, "library-check-out")

    def check_in(
        self, name: str, service_account_names: str | Iterable[str] | None = None
    ) -> list[str]:
        """Bring borrowed accounts back; the ones this call checked in.

        Only the borrower may, unless the set disables enforcement. Without
        ``service_account_names`` the caller's one borrowed account is meant;
        an account already in is no error and is left out of the answer. The
        server gives each account a new password.
        ``POST /<mount>/library/:name/check-in``.
        """
        return self._check_in("library/{name}/check-in", name, service_account_names)

    def manage_check_in(
        self, name: str, service_account_names: str | Iterable[str] | None = None
    ) -> list[str]:
        """Force accounts back whoever borrowed them (a privileged path).

        ``POST /<mount>/library/manage/:name/check-in``; returns the accounts checked in.
        """
        return self._check_in("library/manage/{name}/check-in", name, service_account_names)

    def _check_in(
        self, template: str, name: str, accounts: str | Iterable[str] | None
    ) -> list[str]:
        body: dict[str, Any] = {"name": name}
        names = _names(accounts)
        if names:
            body["service_account_names"] = names
        data = unwrap(self._send("POST", self._path(template, name=name), body))
        done = [str(a) for a in data.get("check_ins") or []]
        for account in done:
            self._lent.pop((self.mount, name, account), None)
        return done

    def status(self, name: str) -> dict[str, Record]:
        """Each account of the set: ``available``, and for a borrowed one
        ``borrower_client_token`` (a hash the server keeps, not a token) and
        ``borrower_entity_id``. ``GET /<mount>/library/:name/status``.
        """
        data = self._read(self._path("library/{name}/status", name=name))
        return {
            account: self._record(fields_of(fields, account), "library-account")
            for account, fields in sorted(data.items())
        }

    # -- views ------------------------------------------------------------------------
    def library_status(self, sets: Iterable[str] | None = None) -> pd.DataFrame:
        """Every account of the sets (all by default), one row each.

        Index ``account``; columns ``set``, ``available``, ``borrower`` (the
        borrower's entity id, else the hash of its token), ``lease_id`` and
        ``lease_expiry`` (UTC). Status from ``GET .../status``, leases from
        ``LIST sys/leases/lookup/<mount>/library/<set>/check-out/`` and
        ``PUT sys/leases/lookup``. Without the permission to list leases, only
        this client's own check-outs show a lease id, and no expiry.
        """
        names = list(sets) if sets is not None else self.list_sets()
        leases = Leases(self._http)
        rows: list[dict[str, Any]] = []
        cov = self._coverage("library_status")
        for set_name in walking(names, f"{self.mount}/library"):
            where = self._path("library/{name}/status", name=set_name).lstrip("/")
            status = cov.read_or_gap(where, partial(self.status, set_name))
            if status is None:
                continue
            cov.note_read()
            expiries = self._set_leases(leases, set_name)
            if expiries is None:
                cov.note_gap(
                    f"sys/leases/lookup/{self.mount}/library/{set_name}/check-out/",
                    403,
                    "check-out leases not listed: only this client's own show a lease, none "
                    "an expiry",
                )
            matched = self._match_leases(set_name, status, expiries)
            for account, fields in status.items():
                available = bool(fields.get("available"))
                lease_id = matched.get(account)
                rows.append(
                    {
                        "account": account,
                        "set": set_name,
                        "available": available,
                        "borrower": None
                        if available
                        else (
                            fields.get("borrower_entity_id")
                            or fields.get("borrower_client_token")
                            or None
                        ),
                        "lease_id": lease_id,
                        "lease_expiry": (expiries or {}).get(lease_id) if lease_id else None,
                    }
                )
        return cov.attach(build_frame(rows, LIBRARY_STATUS))

    def _set_leases(self, leases: Leases, set_name: str) -> dict[str, datetime | None] | None:
        """The live check-out leases of a set and their expiry; None without permission."""
        prefix = f"{self.mount}/library/{set_name}/check-out/"
        try:
            frame = leases.lookup_leases(leases.list_lease_ids(prefix), mounts=[self.mount + "/"])
        except APIError as exc:
            if exc.status == 403:
                return None
            raise
        return {
            str(lease_id): (None if pd.isna(expiry) else expiry.to_pydatetime())
            for lease_id, expiry in frame["expire_time"].items()
        }

    def _match_leases(
        self,
        set_name: str,
        status: Mapping[str, Mapping[str, Any]],
        live: Mapping[str, Any] | None,
    ) -> dict[str, str]:
        """Borrowed account -> lease id; ``live`` None: the leases could not be listed."""
        borrowed = [a for a, f in status.items() if not f.get("available")]
        matched: dict[str, str] = {}
        for account in list(status):
            key = (self.mount, set_name, account)
            lease_id = self._lent.get(key)
            if lease_id is None:
                continue
            if account in borrowed and (live is None or lease_id in live):
                matched[account] = lease_id
            else:
                del self._lent[key]  # checked in, or its lease ended
        if live is None:
            return matched
        left_accounts = [a for a in borrowed if a not in matched]
        left_leases = [i for i in live if i not in matched.values()]
        if len(left_accounts) == 1 and len(left_leases) == 1:
            matched[left_accounts[0]] = left_leases[0]
        return matched

    def roles_frame(self) -> pd.DataFrame:
        """Every role, read. Index ``role``; columns ``service_account_name``,
        ``ttl`` (seconds), ``last_service_rotation``, ``password_last_set`` and
        ``next_rotation`` (when the password rotates on the next creds read:
        last rotation plus ttl; empty when the service never rotated it).
        """
        rows: list[dict[str, Any]] = []
        cov = self._coverage("roles_frame")
        names = self.list_roles()
        read = [
            cov.read_or_gap(f"{self.mount}/roles/{name}", partial(self.read_role, name))
            for name in names
        ]
        for name, role in zip(names, read, strict=True):
            if role is None:
                continue  # deleted since the listing, or refused (a gap)
            last = role.get("last_service_rotation")
            ttl = integer(role.get("ttl"), "ttl")
            rows.append(
                {
                    "role": name,
                    "service_account_name": role.get("service_account_name"),
                    "ttl": ttl,
                    "last_service_rotation": last,
                    "password_last_set": role.get("password_last_set"),
                    "next_rotation": later(last, ttl),
                }
            )
        cov.note_read(len(rows))
        return cov.attach(build_frame(rows, ROLES))
