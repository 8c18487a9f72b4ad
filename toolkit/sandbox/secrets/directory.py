"""The directory (AD) engine (spec 4.7, part 3 'Library service account'): state and rules, no HTTP.

One :class:`Directory` per mount holds the engine's configuration, its roles,
its library sets with their check-outs, and a built-in directory of service
accounts: the sandbox's stand-in for the LDAP server the real engine binds to.
Roles and library sets may only name accounts that exist there (spec part 7),
and an account serves one role or one set, never two.

Passwords are generated from the configured password policy
(``service.password_policies``), or, with the deprecated ``length`` and
``formatter``, as ``?@09AZ`` followed by random letters and digits (or the
formatter's text around them). The service rotates a role's password when its
ttl has passed since the last rotation (on the next creds read), and an
account's password on every library check-in, as the real engine does.

A check-out is a lease (``<mount>library/<set>/check-out/<id>``) whose
revocation, by expiry, ``sys/leases/revoke`` or the borrower's token being
revoked, checks the account in through :meth:`Directory.lease_ended`.

Root rotation (``rotate-root``) takes :attr:`Directory.root_rotation_seconds`
on the sandbox clock; a second request while one runs answers with a warning.
"""

from __future__ import annotations

import hashlib
import secrets
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..._time import format_rfc3339
from . import fields
from .errors import SecretsError, bad_request, not_found

if TYPE_CHECKING:
    from .leases import Lease
    from .models import SecretsService
    from .mounts import Mount
    from .tokens import Token

__all__ = [
    "DEFAULT_LENGTH",
    "DEFAULT_URL",
    "LEGACY_PREFIX",
    "LIBRARY_TTL",
    "MIN_LENGTH",
    "CheckOut",
    "Directory",
    "DirectoryConfig",
    "DirectoryEntry",
    "LibrarySet",
    "Role",
]

DEFAULT_LENGTH = 64
MIN_LENGTH = 14
LEGACY_PREFIX = "?@09AZ"
PLACEHOLDER = "{{PASSWORD}}"
DEFAULT_URL = "ldap://127.0.0.1"
LIBRARY_TTL = 24 * 3600
REQUEST_TIMEOUT = 90
ROTATION_TOLERANCE = 5
# The fewest random characters a formatter must leave room for within ``length``.
MIN_GENERATED = 8
TLS_VERSIONS = ("tls10", "tls11", "tls12", "tls13")
_ALPHABET = string.ascii_letters + string.digits


@dataclass
class DirectoryEntry:
    """One account in the directory the engine binds to (the sandbox's LDAP server)."""

    name: str  # the account name roles and sets use (userPrincipalName or sAMAccountName)
    dn: str
    password: str = field(default="", repr=False)
    password_last_set: datetime | None = None


@dataclass
class DirectoryConfig:
    """``<mount>config``: how the engine reaches the directory and makes passwords."""

    binddn: str
    bindpass: str = field(repr=False)
    url: str = DEFAULT_URL
    userdn: str = ""
    upndomain: str = ""
    certificate: str = ""
    insecure_tls: bool = False
    starttls: bool = False
    tls_min_version: str = "tls12"
    tls_max_version: str = "tls12"
    ttl: int = 0
    max_ttl: int = 0
    password_policy: str = ""
    length: int = DEFAULT_LENGTH
    formatter: str = ""
    case_sensitive_names: bool = False
    request_timeout: int = REQUEST_TIMEOUT
    last_rotation_tolerance: int = ROTATION_TOLERANCE

    def read(self) -> dict[str, Any]:
        """The fields ``GET config`` answers (spec 4.7): never ``bindpass``."""
        return {
            "binddn": self.binddn,
            "certificate": self.certificate,
            "insecure_tls": self.insecure_tls,
            "length": 0 if self.password_policy else self.length,
            "max_ttl": self.max_ttl,
            "starttls": self.starttls,
            "tls_max_version": self.tls_max_version,
            "tls_min_version": self.tls_min_version,
            "ttl": self.ttl,
            "upndomain": self.upndomain,
            "url": self.url,
            "userdn": self.userdn,
        }


@dataclass
class Role:
    """``<mount>roles/:name``: one service account whose password the engine rotates."""

    name: str
    service_account_name: str
    ttl: int
    last_service_rotation: datetime | None = None
    current_password: str = field(default="", repr=False)
    last_password: str = field(default="", repr=False)


@dataclass
class CheckOut:
    """Who holds a library account, and the lease that brings it back."""

    borrower_entity_id: str
    borrower_client_token: str  # a hash of the token, never the token itself
    lease_id: str


@dataclass
class LibrarySet:
    """``<mount>library/:name``: accounts lent out one borrower at a time."""

    name: str
    service_account_names: list[str]
    ttl: int = LIBRARY_TTL
    max_ttl: int = LIBRARY_TTL
    disable_check_in_enforcement: bool = False
    check_outs: dict[str, CheckOut] = field(default_factory=dict)

    def read(self) -> dict[str, Any]:
        return {
            "service_account_names": list(self.service_account_names),
            "ttl": self.ttl,
            "max_ttl": self.max_ttl,
            "disable_check_in_enforcement": self.disable_check_in_enforcement,
        }


def borrower_token(token: Token) -> str:
    """What the engine keeps of a borrower's token: a hash, as the real server passes it."""
    return hashlib.sha256(f"library-borrower:{token.id}".encode()).hexdigest()


class Directory:
    """One mount's state of the directory (AD) engine (spec 4.7, part 3 'Library service account')."""

    # How long a root rotation runs on the sandbox clock (a second request meanwhile is warned).
    ROOT_ROTATION_SECONDS = 2.0

    def __init__(self, service: SecretsService, mount: Mount) -> None:
        self.service = service
        self.mount = mount
        self.config: DirectoryConfig | None = None
        self.roles: dict[str, Role] = {}
        self.library: dict[str, LibrarySet] = {}
        self.entries: dict[str, DirectoryEntry] = {}  # by DN, lower case
        self.root_rotation_seconds = self.ROOT_ROTATION_SECONDS
        self.root_rotation_ends: datetime | None = None
        self.root_rotations = 0

    def __repr__(self) -> str:
        return (
            f"<Directory {self.mount.path} {len(self.entries)} accounts, "
            f"{len(self.roles)} roles, {len(self.library)} sets>"
        )

    @property
    def now(self) -> datetime:
        return self.service.clock.now()

    # -- the directory (the LDAP server's stand-in) --------------------------------
    def set_directory(self, accounts: Iterable[tuple[str, str]]) -> None:
        """Replace the directory with ``(name, dn)`` accounts (demo data and tests).

        Each gets a random password last set now, as if an administrator had made it.
        """
        self.entries = {}
        for name, dn in accounts:
            self.add_account(name, dn)

    def add_account(self, name: str, dn: str, *, password_last_set: datetime | None = None) -> None:
        """Add one account to the directory (demo data and tests)."""
        self.entries[dn.lower()] = DirectoryEntry(
            name, dn, _random(24), password_last_set or self.now
        )

    def reset_password(self, name: str) -> None:
        """Change an account's password in the directory, outside the engine (tests, demos)."""
        entry = self._entry(name)
        entry.password = _random(24)
        entry.password_last_set = self.now

    def _matches(self, name: str) -> list[DirectoryEntry]:
        if not name:
            return []
        wanted = name.lower()
        exact = self.entries.get(wanted)
        if exact is not None:
            return [exact]
        return [e for e in self.entries.values() if e.name.lower() == wanted]

    def _entry(self, name: str, field_name: str = "service_account_name") -> DirectoryEntry:
        found = self._matches(name)
        if not found:
            raise bad_request(f"{field_name}: {name!r} does not exist in the directory")
        if len(found) > 1:
            raise bad_request(f"{field_name}: {name!r} matches {len(found)} directory entries")
        return found[0]

    # -- passwords ---------------------------------------------------------------------
    def generate_password(self) -> str:
        """A new password by the configuration: its password policy, else length/formatter."""
        config = self._config()
        if config.password_policy:
            try:
                return self.service.password_policies.generate(config.password_policy)
            except SecretsError as exc:
                raise bad_request(
                    f"password_policy {config.password_policy!r}: {'; '.join(exc.messages)}"
                ) from None
        formatter = config.formatter or LEGACY_PREFIX + PLACEHOLDER
        generated = _random(config.length - (len(formatter) - len(PLACEHOLDER)))
        return formatter.replace(PLACEHOLDER, generated)

    def _set_password(
        self, entry: DirectoryEntry, when: datetime | None = None, password: str | None = None
    ) -> str:
        """Give ``entry`` a new password (``password``, else a generated one)."""
        entry.password = password if password is not None else self.generate_password()
        entry.password_last_set = when or self.now
        return entry.password

    # -- config ------------------------------------------------------------------------
    def write_config(self, body: Mapping[str, Any]) -> None:
        """``POST config``: replace the configuration (every field validated first)."""
        default_ttl, mount_max = self.mount.lease_ttls()
        policy = fields.string(body, "password_policy")
        has_length = body.get("length") not in (None, "")
        formatter = fields.string(body, "formatter")
        if policy and (has_length or formatter):
            raise bad_request(
                "password_policy is exclusive with length and formatter: give one or the other"
            )
        if policy and policy not in self.service.password_policies.names():
            raise bad_request(f"password_policy: {policy!r} does not exist")
        length = fields.integer(body, "length", DEFAULT_LENGTH, minimum=MIN_LENGTH)
        if formatter:
            if formatter.count(PLACEHOLDER) != 1:
                raise bad_request(f"formatter: must contain {PLACEHOLDER} exactly once")
            room = length - (len(formatter) - len(PLACEHOLDER))
            if room < MIN_GENERATED:
                raise bad_request(
                    f"formatter: leaves {room} of length {length} for the generated password; "
                    f"at least {MIN_GENERATED} are needed"
                )
        max_ttl = fields.duration(body, "max_ttl", mount_max)
        ttl = fields.duration(body, "ttl", min(default_ttl, max_ttl))
        if max_ttl < 0 or ttl < 0:
            raise bad_request("ttl and max_ttl cannot be negative")
        if ttl > max_ttl:
            raise bad_request(f"ttl: {ttl} is longer than max_ttl {max_ttl}")
        tls_min = fields.string(body, "tls_min_version", "tls12")
        tls_max = fields.string(body, "tls_max_version", "tls12")
        for name, value in (("tls_min_version", tls_min), ("tls_max_version", tls_max)):
            if value not in TLS_VERSIONS:
                raise bad_request(
                    f"{name}: must be one of {', '.join(TLS_VERSIONS)}, not {value!r}"
                )
        if TLS_VERSIONS.index(tls_min) > TLS_VERSIONS.index(tls_max):
            raise bad_request("tls_min_version: must not be above tls_max_version")
        certificate = fields.string(body, "certificate")
        if certificate and "-----BEGIN CERTIFICATE-----" not in certificate:
            raise bad_request("certificate: expected an x509 PEM certificate")
        urls = fields.string(body, "url", DEFAULT_URL)
        for url in urls.split(","):
            if not url.strip().lower().startswith(("ldap://", "ldaps://")):
                raise bad_request(f"url: {url.strip()!r} is not an ldap:// or ldaps:// address")
        config = DirectoryConfig(
            binddn=fields.string(body, "binddn", need=True),
            bindpass=fields.string(body, "bindpass", need=True),
            url=urls,
            userdn=fields.string(body, "userdn"),
            upndomain=fields.string(body, "upndomain"),
            certificate=certificate,
            insecure_tls=fields.boolean(body, "insecure_tls"),
            starttls=fields.boolean(body, "starttls"),
            tls_min_version=tls_min,
            tls_max_version=tls_max,
            ttl=ttl,
            max_ttl=max_ttl,
            password_policy=policy,
            length=length,
            formatter=formatter,
            case_sensitive_names=fields.boolean(body, "case_sensitive_names"),
            request_timeout=fields.duration(body, "request_timeout", REQUEST_TIMEOUT),
            last_rotation_tolerance=fields.duration(
                body, "last_rotation_tolerance", ROTATION_TOLERANCE
            ),
        )
        self.config = config

    def read_config(self) -> dict[str, Any]:
        """``GET config``; 404 when the engine has none."""
        if self.config is None:
            raise not_found()
        return self.config.read()

    def delete_config(self) -> None:
        """``DELETE config``."""
        self.config = None

    def _config(self) -> DirectoryConfig:
        if self.config is None:
            raise bad_request(
                f"the engine at {self.mount.path} is not configured: write {self.mount.path}config"
            )
        return self.config

    def _key(self, name: str) -> str:
        """A role or set name as stored: lower case unless ``case_sensitive_names``."""
        if self.config is not None and self.config.case_sensitive_names:
            return name
        return name.lower()

    # -- roles -------------------------------------------------------------------------
    def role_names(self) -> list[str]:
        return sorted(self.roles)

    def write_role(self, name: str, body: Mapping[str, Any]) -> None:
        """``POST roles/:name``: the account must exist and serve no other role or set."""
        config = self._config()
        key = self._key(name)
        existing = self.roles.get(key)
        account = fields.string(
            body,
            "service_account_name",
            existing.service_account_name if existing else "",
            need=existing is None,
        )
        entry = self._entry(account)
        ttl = fields.duration(body, "ttl", existing.ttl if existing else config.ttl)
        if ttl < 0:
            raise bad_request("ttl: cannot be negative")
        if ttl > config.max_ttl:
            raise bad_request(f"ttl: {ttl} is longer than the config's max_ttl {config.max_ttl}")
        self._account_free(entry.name, role=key)
        if existing is not None and existing.service_account_name == entry.name:
            existing.ttl = ttl
            return
        self.roles[key] = Role(key, entry.name, ttl)

    def read_role(self, name: str) -> dict[str, Any]:
        role = self._role(name)
        entry = self._entry(role.service_account_name)
        return {
            "service_account_name": role.service_account_name,
            "ttl": role.ttl,
            "last_service_rotation": _time(role.last_service_rotation),
            "password_last_set": _time(entry.password_last_set),
        }

    def delete_role(self, name: str) -> None:
        self.roles.pop(self._key(name), None)

    def creds(self, name: str) -> dict[str, Any]:
        """``GET creds/:name``: the passwords, rotated first when the ttl has passed.

        Also rotated when the service never set the password, or when the
        directory shows a change later than the service's own rotation by more
        than ``last_rotation_tolerance`` (someone else set it).
        """
        config = self._config()
        role = self._role(name)
        entry = self._entry(role.service_account_name)
        now = self.now
        last = role.last_service_rotation
        tolerance = timedelta(seconds=config.last_rotation_tolerance)
        due = (
            last is None
            or not role.current_password
            or now >= last + timedelta(seconds=role.ttl)
            or (entry.password_last_set is not None and entry.password_last_set > last + tolerance)
        )
        if due:
            password = self._set_password(entry, now)
            role.last_password = role.current_password
            role.current_password = password
            role.last_service_rotation = now
        return {
            "current_password": role.current_password,
            "last_password": role.last_password,
            "username": role.service_account_name,
        }

    def _role(self, name: str) -> Role:
        role = self.roles.get(self._key(name))
        if role is None:
            raise not_found()
        return role

    def _account_free(self, account: str, *, role: str = "", library_set: str = "") -> None:
        """400 when ``account`` already serves another role or library set."""
        for other in self.roles.values():
            if other.service_account_name == account and other.name != role:
                raise bad_request(
                    f"service account {account!r} is already managed by role {other.name!r}"
                )
        for other_set in self.library.values():
            if account in other_set.service_account_names and other_set.name != library_set:
                raise bad_request(
                    f"service_account_names: {account!r} is already in library set "
                    f"{other_set.name!r}; an account can be in one set only"
                )

    # -- library sets -------------------------------------------------------------------
    def set_names(self) -> list[str]:
        return sorted(self.library)

    def write_set(self, name: str, body: Mapping[str, Any]) -> None:
        """``POST library/:name``: create, or update the fields given.

        New accounts get a password set by the service (as a check-in does);
        an account still checked out cannot leave the set.
        """
        self._config()
        key = self._key(name)
        existing = self.library.get(key)
        given = fields.string_list(body, "service_account_names", need=existing is None)
        names = given or (list(existing.service_account_names) if existing else [])
        if not names:
            raise bad_request("missing service_account_names")
        accounts: list[str] = []
        for account in names:
            entry = self._entry(account, "service_account_names")
            if entry.name not in accounts:
                accounts.append(entry.name)
        for account in accounts:
            self._account_free(account, library_set=key)
        ttl = fields.duration(body, "ttl", existing.ttl if existing else LIBRARY_TTL)
        max_ttl = fields.duration(body, "max_ttl", existing.max_ttl if existing else LIBRARY_TTL)
        if ttl < 0 or max_ttl < 0:
            raise bad_request("ttl and max_ttl cannot be negative")
        if max_ttl and ttl > max_ttl:
            raise bad_request(f"ttl: {ttl} is longer than max_ttl {max_ttl}")
        enforcement_off = fields.boolean(
            body,
            "disable_check_in_enforcement",
            existing.disable_check_in_enforcement if existing else False,
        )
        if existing is not None:
            leaving = [a for a in existing.check_outs if a not in accounts]
            if leaving:
                raise bad_request(
                    f"service_account_names: {', '.join(leaving)} checked out; "
                    "check them in before removing them from the set"
                )
        before = set(existing.service_account_names) if existing else set()
        # Every new password is made before anything changes: a policy that fails changes nothing.
        fresh = {a: self.generate_password() for a in accounts if a not in before}
        for account, password in fresh.items():
            self._set_password(self._entry(account), password=password)
        if existing is None:
            self.library[key] = LibrarySet(key, accounts, ttl, max_ttl, enforcement_off)
        else:
            existing.service_account_names = accounts
            existing.ttl, existing.max_ttl = ttl, max_ttl
            existing.disable_check_in_enforcement = enforcement_off

    def read_set(self, name: str) -> dict[str, Any]:
        return self._set(name, missing=404).read()

    def delete_set(self, name: str) -> None:
        """``DELETE library/:name``; refused while accounts of the set are checked out."""
        library_set = self.library.get(self._key(name))
        if library_set is None:
            return
        if library_set.check_outs:
            raise bad_request(
                f"library set {library_set.name!r} has accounts checked out "
                f"({', '.join(sorted(library_set.check_outs))}); check them in first"
            )
        del self.library[library_set.name]

    def _set(self, name: str, *, missing: int = 400) -> LibrarySet:
        library_set = self.library.get(self._key(name))
        if library_set is None:
            if missing == 404:
                raise not_found()
            raise bad_request(f"library set {name!r} does not exist")
        return library_set

    def status(self, name: str) -> dict[str, dict[str, Any]]:
        """``GET library/:name/status``: each account's availability and borrower."""
        library_set = self._set(name, missing=404)
        self._expire_leases()
        answer: dict[str, dict[str, Any]] = {}
        for account in library_set.service_account_names:
            out = library_set.check_outs.get(account)
            if out is None:
                answer[account] = {"available": True}
            else:
                answer[account] = {
                    "available": False,
                    "borrower_client_token": out.borrower_client_token,
                    "borrower_entity_id": out.borrower_entity_id,
                }
        return answer

    def _expire_leases(self) -> None:
        """Let the lease manager revoke what is due, so expired check-outs are back."""
        self.service.leases.leases_under(self.mount.path + "library/")

    # -- check-out and check-in -----------------------------------------------------------
    def check_out(
        self, name: str, body: Mapping[str, Any], token: Token
    ) -> tuple[dict[str, Any], Lease]:
        """``POST library/:name/check-out``: lend the first free account, under a lease.

        ``ttl`` defaults to the set's and is capped at it (0: unlimited, then
        the mount's lease ttls apply); 400 when every account is out.
        """
        library_set = self._set(name)
        requested = fields.duration(body, "ttl", 0)
        if requested < 0:
            raise bad_request("ttl: cannot be negative")
        default_ttl, mount_max = self.mount.lease_ttls()
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
        return {"service_account_name": free[0], "password": self._entry(free[0]).password}, lease

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
        lease = self.service.leases.create(
            f"{self.mount.path}library/{library_set.name}/check-out",
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
        self, name: str, body: Mapping[str, Any], token: Token, *, manage: bool = False
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
        named = fields.string_list(body, "service_account_names")
        enforce = not (manage or library_set.disable_check_in_enforcement)

        def may(out: CheckOut) -> bool:
            return not enforce or _is_borrower(out, token)

        if named:
            accounts: list[str] = []
            for account in named:
                entry = self._entry(account, "service_account_names")
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
        fresh = {a: self.generate_password() for a in back}
        for account in back:
            out = library_set.check_outs.pop(account)
            self._set_password(self._entry(account), password=fresh[account])
            self.service.leases.revoke(out.lease_id)  # no longer matches: nothing more to do
        return back

    def lease_ended(self, lease: Lease) -> None:
        """A check-out's lease was revoked or expired: the account comes back, re-passworded."""
        data = lease.data if isinstance(lease.data, dict) else {}
        library_set = self.library.get(str(data.get("set", "")))
        account = str(data.get("account", ""))
        if library_set is None:
            return
        out = library_set.check_outs.get(account)
        if out is None or out.lease_id != lease.lease_id:
            return  # checked in already (perhaps lent again under another lease)
        # A password that cannot be made leaves the account out and the lease irrevocable.
        password = self.generate_password()
        del library_set.check_outs[account]
        self._set_password(self._entry(account), password=password)

    # -- root rotation -------------------------------------------------------------------
    @property
    def root_rotation_running(self) -> bool:
        """Whether a root rotation started less than ``root_rotation_seconds`` ago."""
        return self.root_rotation_ends is not None and self.now < self.root_rotation_ends

    def rotate_root(self) -> list[str]:
        """``GET rotate-root``: a new ``bindpass`` only the service knows; warnings.

        While a rotation runs, nothing changes and a warning says so. Fails
        (400) when ``binddn`` names no directory entry, or more than one.
        """
        config = self._config()
        if self.root_rotation_running:
            return ["a root credential rotation is already in progress; try again later"]
        found = self._matches(config.binddn)
        if len(found) != 1:
            how = "no directory entry" if not found else f"{len(found)} directory entries"
            raise bad_request(f"binddn: {config.binddn!r} matches {how}; cannot rotate")
        password = self._set_password(found[0])
        config.bindpass = password
        self.root_rotation_ends = self.now + timedelta(seconds=self.root_rotation_seconds)
        self.root_rotations += 1
        return []


def _is_borrower(out: CheckOut, token: Token) -> bool:
    if out.borrower_entity_id and token.entity_id == out.borrower_entity_id:
        return True
    return out.borrower_client_token == borrower_token(token)


def _random(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(max(0, length)))


def _time(value: datetime | None) -> str | None:
    return format_rfc3339(value) if value is not None else None
