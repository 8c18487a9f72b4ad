"""The directory (AD) engine (spec 4.7, part 3 'Library service account'): state and rules, no HTTP.

One :class:`ADEngine` per mount holds the engine's configuration, its roles,
its :class:`~.library.Library` of sets with their check-outs, and a built-in directory of service
accounts: the sandbox's stand-in for the LDAP server the real engine binds to.
Roles and library sets may only name accounts that exist there (spec part 7),
and an account serves one role or one set, never two.

Passwords are generated from the configured password policy
(``service.password_policies``), or, with the deprecated ``length`` and
``formatter``, as ``?@09AZ`` followed by random letters and digits (or the
formatter's text around them). The service rotates a role's password when its
ttl has passed since the last rotation (on the next creds read), and an
account's password on every library check-in, as the real engine does.

The library (check-out, check-in, their leases) is in :mod:`.library`. The
state methods take typed arguments; ``http/directory.py`` reads them from the
request bodies.

Root rotation (``rotate-root``) takes :attr:`ADEngine.root_rotation_seconds`
on the sandbox clock; a second request while one runs answers with a warning.
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ...errors import SecretsError, bad_request, not_found
from .accounts import DirectoryEntry
from .library import LIBRARY_TTL, CheckOut, Library, LibrarySet, borrower_token

if TYPE_CHECKING:
    from ...host import EngineHost
    from ...mounts import Mount

__all__ = [
    "DEFAULT_LENGTH",
    "DEFAULT_URL",
    "LEGACY_PREFIX",
    "LIBRARY_TTL",
    "MIN_LENGTH",
    "CheckOut",
    "ConfigWrite",
    "ADEngine",
    "ADConfig",
    "DirectoryEntry",
    "Library",
    "LibrarySet",
    "ADRole",
    "borrower_token",
]

DEFAULT_LENGTH = 64
MIN_LENGTH = 14
LEGACY_PREFIX = "?@09AZ"
PLACEHOLDER = "{{PASSWORD}}"
DEFAULT_URL = "ldap://127.0.0.1"
REQUEST_TIMEOUT = 90
ROTATION_TOLERANCE = 5
# The fewest random characters a formatter must leave room for within ``length``.
MIN_GENERATED = 8
TLS_VERSIONS = ("tls10", "tls11", "tls12", "tls13")
_ALPHABET = string.ascii_letters + string.digits


@dataclass
class _Settings:
    """What a ``POST config`` writes as given; the stored config and the request share it."""

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
    password_policy: str = ""
    formatter: str = ""
    case_sensitive_names: bool = False
    request_timeout: int = REQUEST_TIMEOUT
    last_rotation_tolerance: int = ROTATION_TOLERANCE


@dataclass
class ADConfig(_Settings):
    """``<mount>config``: how the engine reaches the directory and makes passwords."""

    ttl: int = 0
    max_ttl: int = 0
    length: int = DEFAULT_LENGTH


@dataclass
class ConfigWrite(_Settings):
    """What a ``POST config`` asks, as the HTTP side read it (None: not given, the default)."""

    ttl: int | None = None
    max_ttl: int | None = None
    length: int | None = None


@dataclass
class ADRole:
    """``<mount>roles/:name``: one service account whose password the engine rotates."""

    name: str
    service_account_name: str
    ttl: int
    last_service_rotation: datetime | None = None
    current_password: str = field(default="", repr=False)
    last_password: str = field(default="", repr=False)


class ADEngine:
    """One mount's state of the directory (AD) engine (spec 4.7, part 3 'Library service account')."""

    # How long a root rotation runs on the sandbox clock (a second request meanwhile is warned).
    ROOT_ROTATION_SECONDS = 2.0

    def __init__(self, service: EngineHost, mount: Mount) -> None:
        self.service = service
        self.mount = mount
        self.config: ADConfig | None = None
        self.roles: dict[str, ADRole] = {}
        self.library = Library(self)
        self.entries: dict[str, DirectoryEntry] = {}  # by DN, lower case
        self.root_rotation_seconds = self.ROOT_ROTATION_SECONDS
        self.root_rotation_ends: datetime | None = None
        self.root_rotations = 0

    def __repr__(self) -> str:
        return (
            f"<ADEngine {self.mount.path} {len(self.entries)} accounts, "
            f"{len(self.roles)} roles, {len(self.library.sets)} sets>"
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
        entry = self.entry(name)
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

    def entry(self, name: str, field_name: str = "service_account_name") -> DirectoryEntry:
        found = self._matches(name)
        if not found:
            raise bad_request(f"{field_name}: {name!r} does not exist in the directory")
        if len(found) > 1:
            raise bad_request(f"{field_name}: {name!r} matches {len(found)} directory entries")
        return found[0]

    # -- passwords ---------------------------------------------------------------------
    def generate_password(self) -> str:
        """A new password by the configuration: its password policy, else length/formatter."""
        config = self.require_config()
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

    def set_password(
        self, entry: DirectoryEntry, when: datetime | None = None, password: str | None = None
    ) -> str:
        """Give ``entry`` a new password (``password``, else a generated one)."""
        entry.password = password if password is not None else self.generate_password()
        entry.password_last_set = when or self.now
        return entry.password

    # -- config ------------------------------------------------------------------------
    def write_config(self, request: ConfigWrite) -> None:
        """``POST config``: replace the configuration (every field checked first)."""
        default_ttl, mount_max = self.mount.lease_ttls()
        policy, formatter = request.password_policy, request.formatter
        if policy and (request.length is not None or formatter):
            raise bad_request(
                "password_policy is exclusive with length and formatter: give one or the other"
            )
        if policy and policy not in self.service.password_policies.names():
            raise bad_request(f"password_policy: {policy!r} does not exist")
        length = DEFAULT_LENGTH if request.length is None else request.length
        if length < MIN_LENGTH:
            raise bad_request(f"length: must be at least {MIN_LENGTH}, got {length}")
        if formatter:
            if formatter.count(PLACEHOLDER) != 1:
                raise bad_request(f"formatter: must contain {PLACEHOLDER} exactly once")
            room = length - (len(formatter) - len(PLACEHOLDER))
            if room < MIN_GENERATED:
                raise bad_request(
                    f"formatter: leaves {room} of length {length} for the generated password; "
                    f"at least {MIN_GENERATED} are needed"
                )
        max_ttl = mount_max if request.max_ttl is None else request.max_ttl
        ttl = min(default_ttl, max_ttl) if request.ttl is None else request.ttl
        if max_ttl < 0 or ttl < 0:
            raise bad_request("ttl and max_ttl cannot be negative")
        if ttl > max_ttl:
            raise bad_request(f"ttl: {ttl} is longer than max_ttl {max_ttl}")
        tls_min, tls_max = request.tls_min_version, request.tls_max_version
        for name, value in (("tls_min_version", tls_min), ("tls_max_version", tls_max)):
            if value not in TLS_VERSIONS:
                raise bad_request(
                    f"{name}: must be one of {', '.join(TLS_VERSIONS)}, not {value!r}"
                )
        if TLS_VERSIONS.index(tls_min) > TLS_VERSIONS.index(tls_max):
            raise bad_request("tls_min_version: must not be above tls_max_version")
        certificate = request.certificate
        if certificate and "-----BEGIN CERTIFICATE-----" not in certificate:
            raise bad_request("certificate: expected an x509 PEM certificate")
        for url in request.url.split(","):
            if not url.strip().lower().startswith(("ldap://", "ldaps://")):
                raise bad_request(f"url: {url.strip()!r} is not an ldap:// or ldaps:// address")
        if not request.binddn or not request.bindpass:
            raise bad_request("missing binddn" if not request.binddn else "missing bindpass")
        resolved = {"ttl": ttl, "max_ttl": max_ttl, "length": length}
        self.config = ADConfig(**(asdict(request) | resolved))

    def read_config(self) -> ADConfig:
        """``GET config``; 404 when the engine has none."""
        if self.config is None:
            raise not_found()
        return self.config

    def delete_config(self) -> None:
        """``DELETE config``."""
        self.config = None

    def require_config(self) -> ADConfig:
        if self.config is None:
            raise bad_request(
                f"the engine at {self.mount.path} is not configured: write {self.mount.path}config"
            )
        return self.config

    def key(self, name: str) -> str:
        """A role or set name as stored: lower case unless ``case_sensitive_names``."""
        if self.config is not None and self.config.case_sensitive_names:
            return name
        return name.lower()

    # -- roles -------------------------------------------------------------------------
    def role_names(self) -> list[str]:
        return sorted(self.roles)

    def write_role(
        self, name: str, *, service_account_name: str = "", ttl: int | None = None
    ) -> None:
        """``POST roles/:name``: the account must exist and serve no other role or set.

        An update keeps what is not given (an empty account name, a None ttl).
        """
        config = self.require_config()
        key = self.key(name)
        existing = self.roles.get(key)
        account = service_account_name or (existing.service_account_name if existing else "")
        if not account:
            raise bad_request("missing service_account_name")
        entry = self.entry(account)
        if ttl is None:
            ttl = existing.ttl if existing else config.ttl
        if ttl < 0:
            raise bad_request("ttl: cannot be negative")
        if ttl > config.max_ttl:
            raise bad_request(f"ttl: {ttl} is longer than the config's max_ttl {config.max_ttl}")
        self.account_free(entry.name, role=key)
        if existing is not None and existing.service_account_name == entry.name:
            existing.ttl = ttl
            return
        self.roles[key] = ADRole(key, entry.name, ttl)

    def read_role(self, name: str) -> tuple[ADRole, datetime | None]:
        """``GET roles/:name``: the role, and when its account's password was last set."""
        role = self._role(name)
        return role, self.entry(role.service_account_name).password_last_set

    def delete_role(self, name: str) -> None:
        self.roles.pop(self.key(name), None)

    def creds(self, name: str) -> ADRole:
        """``GET creds/:name``: the passwords, rotated first when the ttl has passed.

        Also rotated when the service never set the password, or when the
        directory shows a change later than the service's own rotation by more
        than ``last_rotation_tolerance`` (someone else set it).
        """
        config = self.require_config()
        role = self._role(name)
        entry = self.entry(role.service_account_name)
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
            password = self.set_password(entry, now)
            role.last_password = role.current_password
            role.current_password = password
            role.last_service_rotation = now
        return role

    def _role(self, name: str) -> ADRole:
        role = self.roles.get(self.key(name))
        if role is None:
            raise not_found()
        return role

    def account_free(self, account: str, *, role: str = "", library_set: str = "") -> None:
        """400 when ``account`` already serves another role or library set."""
        for other in self.roles.values():
            if other.service_account_name == account and other.name != role:
                raise bad_request(
                    f"service account {account!r} is already managed by role {other.name!r}"
                )
        for other_set in self.library.sets.values():
            if account in other_set.service_account_names and other_set.name != library_set:
                raise bad_request(
                    f"service_account_names: {account!r} is already in library set "
                    f"{other_set.name!r}; an account can be in one set only"
                )

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
        config = self.require_config()
        if self.root_rotation_running:
            return ["a root credential rotation is already in progress; try again later"]
        found = self._matches(config.binddn)
        if len(found) != 1:
            how = "no directory entry" if not found else f"{len(found)} directory entries"
            raise bad_request(f"binddn: {config.binddn!r} matches {how}; cannot rotate")
        password = self.set_password(found[0])
        config.bindpass = password
        self.root_rotation_ends = self.now + timedelta(seconds=self.root_rotation_seconds)
        self.root_rotations += 1
        return []


def _random(length: int) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(max(0, length)))
