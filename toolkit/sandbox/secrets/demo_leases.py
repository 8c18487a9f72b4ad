"""Demo leases and registered plugins: deterministic, written against the sandbox clock.

3,000 leases across the database, directory library, message-broker and
certificate mounts, with ttls from minutes to days, about one in six already
renewed, certificate leases not renewable, and a handful of irrevocable leases
whose engine cannot be reached. Ids come from a seeded generator, so they are
the same on every run; times are relative to the clock's start (to the minute).
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .leases import Lease
    from .models import SecretsService

__all__ = ["DEMO_LEASE_COUNT", "load_demo_leases"]

DEMO_LEASE_COUNT = 3000

_HOUR = 3600
_DAY = 24 * _HOUR

# (path prefix, share of the leases, ttl range in seconds, max_ttl, renewable)
_ROLES: tuple[tuple[str, int, tuple[int, int], int, bool], ...] = (
    ("database/creds/readonly", 900, (15 * 60, 8 * _HOUR), 3 * _DAY, True),
    ("database/creds/app", 700, (_HOUR, _DAY), 7 * _DAY, True),
    ("database/creds/reporting", 250, (5 * 60, 2 * _HOUR), _DAY, True),
    ("ad/library/accounting-team/check-out", 120, (_HOUR, _DAY), _DAY, True),
    ("ad/library/helpdesk/check-out", 80, (30 * 60, 12 * _HOUR), _DAY, True),
    ("broker/creds/producer", 350, (10 * 60, 6 * _HOUR), 2 * _DAY, True),
    ("broker/creds/consumer", 300, (10 * 60, 6 * _HOUR), 2 * _DAY, True),
    ("pki/issue/web-server", 300, (_DAY, 30 * _DAY), 30 * _DAY, False),
)

# Leases whose revocation failed on the engine: (path prefix, error the engine gave).
_IRREVOCABLE = (
    ("database/creds/app", "dial tcp 10.20.4.12:5432: connect: connection refused"),
    ("database/creds/app", "dial tcp 10.20.4.12:5432: connect: connection refused"),
    ("database/creds/readonly", 'pq: role "v-token-readonly-x8Qm" cannot be dropped'),
    ("broker/creds/consumer", "unexpected status 503 from the management API"),
    ("broker/creds/producer", "unexpected status 503 from the management API"),
    ("ad/library/helpdesk/check-out", "LDAP Result Code 49: invalid credentials"),
)

# (type, name, version, sha256, command, args, env)
_PLUGINS: tuple[tuple[str, str, str, str, str, list[str], list[str]], ...] = (
    (
        "secret",
        "venafi-pki-backend",
        "v0.14.0",
        "9f2c1e6d0b7a48c3e5f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7",
        "venafi-pki-backend",
        ["-log-level=info"],
        [],
    ),
    (
        "database",
        "snowflake-database-plugin",
        "v0.10.0",
        "3b8e0a5f9c2d4e6f7a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a7b",
        "snowflake-database-plugin",
        [],
        ["SNOWFLAKE_LOG_LEVEL=warn"],
    ),
)

_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class _Unreachable:
    """The revocation callback of a lease whose backend cannot be reached (picklable)."""

    reason: str

    def __call__(self, lease: Lease) -> None:
        raise RuntimeError(self.reason)


def _unreachable(reason: str) -> Callable[[Lease], None]:
    return _Unreachable(reason)


_GRID = 120  # seconds


def load_demo_leases(service: SecretsService) -> None:
    """Fill ``service.leases`` and ``service.plugins`` with the demo set."""
    rng = random.Random(20260601)
    leases = service.leases
    # Anchored to the clock's start, and every expiry on a two-minute grid from it, so
    # that ttls shown in whole minutes (and their medians) do not depend on how many
    # seconds a runbook took to reach them.
    now = service.clock.start.replace(microsecond=0)

    def suffix() -> str:
        return "".join(rng.choices(_ALPHABET, k=24))

    for prefix, share, (low, high), max_ttl, renewable in _ROLES:
        for _ in range(share):
            ttl = rng.randint(low, high)
            renewed = renewable and rng.random() < 0.17
            if renewed:
                since_renewal = rng.randint(60, max(61, ttl * 4 // 5))
                # Issued earlier, yet not so early that max_ttl has already run out.
                before = min(rng.randint(ttl // 2, ttl), max_ttl - since_renewal - 600)
                last = now - timedelta(seconds=since_renewal)
                issued = last - timedelta(seconds=before)
            else:
                issued = now - timedelta(seconds=rng.randint(0, ttl * 9 // 10))
                last = None
            expire = (last or issued) + timedelta(seconds=ttl)
            ttl += int(-(expire - now).total_seconds()) % _GRID
            leases.create(
                prefix,
                ttl=ttl,
                max_ttl=max_ttl,
                renewable=renewable,
                suffix=suffix(),
                issue_time=issued,
                last_renewal_time=last,
            )
    for prefix, reason in _IRREVOCABLE:
        ttl = rng.randint(_HOUR, 4 * _HOUR)
        leases.create(
            prefix,
            ttl=ttl,
            max_ttl=_DAY,
            suffix=suffix(),
            issue_time=now - timedelta(seconds=ttl + rng.randint(_HOUR, 3 * _DAY)),
            on_revoke=_unreachable(reason),
        )
    # Expire the leases above now, so they are irrevocable from the first request on.
    leases.count_irrevocable()

    for plugin_type, name, version, sha256, command, args, env in _PLUGINS:
        service.plugins.register(
            plugin_type,
            name,
            sha256=sha256,
            command=command,
            args=list(args),
            env=list(env),
            version=version,
            # As if the binaries were in the plugin directory: the demo's connections run.
            installed=True,
        )
