"""The directory engine's library (spec part 3 'Library service account'): state, no HTTP.

Library sets lend service accounts of the directory one borrower at a time. A
check-out is a lease (``<mount>library/<set>/check-out/<id>``) whose revocation,
by expiry, ``sys/leases/revoke`` or the borrower's token being revoked, checks
the account in through :meth:`Library.lease_ended`; every check-in gives the
account a new password, as the real engine does.

:class:`Library` belongs to one :class:`~.state.ADEngine` (its mount), whose
directory of accounts, configuration and password generation it uses, through
the narrow :class:`LendingDirectory` (so the library does not import the engine
that holds it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ...errors import bad_request, not_found

if TYPE_CHECKING:
    from datetime import datetime

    from ...host import EngineHost
    from ...leases import Lease
    from ...mounts import Mount
    from ...tokens import Token
    from .accounts import DirectoryEntry

__all__ = ["LIBRARY_TTL", "CheckOut", "Lent", "Library", "LibrarySet", "borrower_token"]

LIBRARY_TTL = 24 * 3600


@dataclass
class CheckOut:
    """Who holds a library account, and the lease that brings it back."""

    borrower_entity_id: str
    borrower_client_token: str  # a hash of the token, never the token itself
    lease_id: str


@dataclass(frozen=True)
class Lent:
    """What a check-out hands the borrower: the account and its password (kept out of the
    repr). The HTTP side puts them in the answer's ``data``."""

    service_account_name: str
    password: str = field(repr=False)


@dataclass
class LibrarySet:
    """``<mount>library/:name``: accounts lent out one borrower at a time."""

    name: str
    service_account_names: list[str]
    ttl: int = LIBRARY_TTL
    max_ttl: int = LIBRARY_TTL
    disable_check_in_enforcement: bool = False
    check_outs: dict[str, CheckOut] = field(default_factory=dict)


def borrower_token(token: Token) -> str:
    """What the engine keeps of a borrower's token: a hash, as the real server passes it."""
    return hashlib.sha256(f"library-borrower:{token.id}".encode()).hexdigest()


class LendingDirectory(Protocol):
    """What a library uses of its engine (:class:`~.state.ADEngine`)."""

    @property
    def service(self) -> EngineHost: ...

    @property
    def mount(self) -> Mount: ...

    def require_config(self) -> object: ...

    def key(self, name: str) -> str: ...

    def entry(self, name: str, field_name: str = ...) -> DirectoryEntry: ...

    def account_free(self, account: str, *, role: str = "", library_set: str = "") -> None: ...

    def generate_password(self) -> str: ...

    def set_password(
        self, entry: DirectoryEntry, when: datetime | None = None, password: str | None = None
    ) -> str: ...


class Library:
    """One directory mount's library sets and their check-outs."""

    def __init__(self, directory: LendingDirectory) -> None:
        self.directory = directory
        self.sets: dict[str, LibrarySet] = {}

    def __repr__(self) -> str:
        lent = sum(len(s.check_outs) for s in self.sets.values())
        return f"<Library {self.directory.mount.path} {len(self.sets)} sets, {lent} lent>"

    def set_names(self) -> list[str]:
        return sorted(self.sets)

    def write_set(
        self,
        name: str,
        *,
        service_account_names: Sequence[str] = (),
        ttl: int | None = None,
        max_ttl: int | None = None,
        disable_check_in_enforcement: bool | None = None,
    ) -> None:
        """``POST library/:name``: create, or update the fields given (None, or no
        accounts: keep what the set has; a new set's ttls default to 24 hours).

        New accounts get a password set by the service (as a check-in does);
        an account still checked out cannot leave the set.
        """
        self.directory.require_config()
        key = self.directory.key(name)
        existing = self.sets.get(key)
        names = list(service_account_names) or (
            list(existing.service_account_names) if existing else []
        )
        if not names:
            raise bad_request("missing service_account_names")
        accounts: list[str] = []
        for account in names:
            entry = self.directory.entry(account, "service_account_names")
            if entry.name not in accounts:
                accounts.append(entry.name)
        for account in accounts:
            self.directory.account_free(account, library_set=key)
        if ttl is None:
            ttl = existing.ttl if existing else LIBRARY_TTL
        if max_ttl is None:
            max_ttl = existing.max_ttl if existing else LIBRARY_TTL
        if ttl < 0 or max_ttl < 0:
            raise bad_request("ttl and max_ttl cannot be negative")
        if max_ttl and ttl > max_ttl:
            raise bad_request(f"ttl: {ttl} is longer than max_ttl {max_ttl}")
        enforcement_off = disable_check_in_enforcement
        if enforcement_off is None:
            enforcement_off = existing.disable_check_in_enforcement if existing else False
        if existing is not None:
            leaving = [a for a in existing.check_outs if a not in accounts]
            if leaving:
                raise bad_request(
                    f"service_account_names: {', '.join(leaving)} checked out; "
                    "check them in before removing them from the set"
                )
        before = set(existing.service_account_names) if existing else set()
        # Every new password is made before anything changes: a policy that fails changes nothing.
        fresh = {a: self.directory.generate_password() for a in accounts if a not in before}
        for account, password in fresh.items():
            self.directory.set_password(self.directory.entry(account), password=password)
        if existing is None:
            self.sets[key] = LibrarySet(key, accounts, ttl, max_ttl, enforcement_off)
        else:
            existing.service_account_names = accounts
            existing.ttl, existing.max_ttl = ttl, max_ttl
            existing.disable_check_in_enforcement = enforcement_off

    def read_set(self, name: str) -> LibrarySet:
        """``GET library/:name``; 404 when there is no such set."""
        return self._set(name, missing=404)

    def delete_set(self, name: str) -> None:
        """``DELETE library/:name``; refused while accounts of the set are checked out."""
        library_set = self.sets.get(self.directory.key(name))
        if library_set is None:
            return
        if library_set.check_outs:
            raise bad_request(
                f"library set {library_set.name!r} has accounts checked out "
                f"({', '.join(sorted(library_set.check_outs))}); check them in first"
            )
        del self.sets[library_set.name]

    def _set(self, name: str, *, missing: int = 400) -> LibrarySet:
        library_set = self.sets.get(self.directory.key(name))
        if library_set is None:
            if missing == 404:
                raise not_found()
            raise bad_request(f"library set {name!r} does not exist")
        return library_set

    def status(self, name: str) -> list[tuple[str, CheckOut | None]]:
        """``GET library/:name/status``: each account with its check-out (None: available),
        expired check-outs brought back first."""
        library_set = self._set(name, missing=404)
        self._expire_leases()
        return [
            (account, library_set.check_outs.get(account))
            for account in library_set.service_account_names
        ]

    def _expire_leases(self) -> None:
        """Let the lease manager revoke what is due, so expired check-outs are back."""
        self.directory.service.leases.leases_under(self.directory.mount.path + "library/")

    # -- check-out and check-in -----------------------------------------------------------
    def check_out(self, name: str, token: Token, *, ttl: int = 0) -> tuple[Lent, Lease]:
        """``POST library/:name/check-out``: lend the first free account, under a lease.

        ``ttl`` (0: not given) defaults to the set's and is capped at it (0: unlimited, then
        the mount's lease ttls apply); 400 when every account is out.
        """
        library_set = self._set(name)
        requested = ttl
        if requested < 0:
            raise bad_request("ttl: cannot be negative")
        default_ttl, mount_max = self.directory.mount.lease_ttls()
        ttl = requested or library_set.ttl
        if library_set.ttl:
            ttl = min(ttl, library_set.ttl)
        ttl = ttl or default_ttl
        max_ttl = library_set.max_ttl or mount_max
        self._expire_leases()
        free = [a for a in library_set.service_account_names if a not in library_set.check_outs]
        if not free:
            raise bad_request(f"no service accounts are available in library set {name!r}")
        lease = self.lend(library_set.name, free[0], token, ttl=ttl, max_ttl=max_ttl)
        return Lent(free[0], self.directory.entry(free[0]).password), lease

    def lend(
        self,
        set_name: str,
        account: str,
        token: Token,
        *,
        ttl: int,
        max_ttl: int,
        issue_time: datetime | None = None,
        suffix: str | None = None,
    ) -> Lease:
        """Record ``account`` of the set as borrowed by ``token`` under a new lease.

        ``issue_time`` and ``suffix`` backdate the lease and fix its id (demo data).
        """
        library_set = self._set(set_name)
        if account in library_set.check_outs or account not in library_set.service_account_names:
            raise bad_request(f"{account!r} is not free in library set {set_name!r}")
        lease = self.directory.service.leases.create(
            f"{self.directory.mount.path}library/{library_set.name}/check-out",
            ttl=ttl,
            max_ttl=max_ttl,
            renewable=True,
            on_revoke=self.lease_ended,
            data={"set": library_set.name, "account": account},
            token=token.id,
            issue_time=issue_time,
            suffix=suffix,
        )
        library_set.check_outs[account] = CheckOut(
            token.entity_id, borrower_token(token), lease.lease_id
        )
        return lease

    def check_in(
        self,
        name: str,
        token: Token,
        *,
        service_account_names: Sequence[str] = (),
        manage: bool = False,
    ) -> list[str]:
        """``POST library/[manage/]:name/check-in``: the accounts this call checked in.

        Only the borrower (same entity, or same token) may check an account in,
        unless the set disables enforcement or ``manage`` (the manage path) is
        used. Without ``service_account_names`` the caller's one account is
        meant (400 when it holds several). An account already in is no error
        and is not listed. Each account checked in gets a new password.
        """
        library_set = self._set(name)
        self._expire_leases()
        named = list(service_account_names)
        enforce = not (manage or library_set.disable_check_in_enforcement)

        def may(out: CheckOut) -> bool:
            return not enforce or _is_borrower(out, token)

        if named:
            accounts: list[str] = []
            for account in named:
                entry = self.directory.entry(account, "service_account_names")
                if entry.name not in library_set.service_account_names:
                    raise bad_request(
                        f"service_account_names: {entry.name!r} is not in library set "
                        f"{library_set.name!r}"
                    )
                accounts.append(entry.name)
            refused = [
                a
                for a in accounts
                if a in library_set.check_outs and not may(library_set.check_outs[a])
            ]
            if refused:
                raise bad_request(
                    f"{', '.join(refused)} cannot be checked in: checked out by another "
                    "entity or token (the manage path can force it)"
                )
        else:
            accounts = [a for a, out in library_set.check_outs.items() if may(out)]
            if len(accounts) > 1:
                raise bad_request(
                    "service_account_names: more than one account is checked out "
                    f"({', '.join(sorted(accounts))}); name the ones to check in"
                )
        # Already-in accounts succeed and are not listed; new passwords are made first.
        back = [a for a in dict.fromkeys(accounts) if a in library_set.check_outs]
        fresh = {a: self.directory.generate_password() for a in back}
        for account in back:
            out = library_set.check_outs.pop(account)
            self.directory.set_password(self.directory.entry(account), password=fresh[account])
            self.directory.service.leases.revoke(
                out.lease_id
            )  # no longer matches: nothing more to do
        return back

    def lease_ended(self, lease: Lease) -> None:
        """A check-out's lease was revoked or expired: the account comes back, re-passworded."""
        data = lease.data if isinstance(lease.data, dict) else {}
        library_set = self.sets.get(str(data.get("set", "")))
        account = str(data.get("account", ""))
        if library_set is None:
            return
        out = library_set.check_outs.get(account)
        if out is None or out.lease_id != lease.lease_id:
            return  # checked in already (perhaps lent again under another lease)
        # A password that cannot be made leaves the account out and the lease irrevocable.
        password = self.directory.generate_password()
        del library_set.check_outs[account]
        self.directory.set_password(self.directory.entry(account), password=password)


def _is_borrower(out: CheckOut, token: Token) -> bool:
    if out.borrower_entity_id and token.entity_id == out.borrower_entity_id:
        return True
    return out.borrower_client_token == borrower_token(token)
