"""Demo keys and KMS providers of the key management engine, written against the sandbox clock.

Seven keys of the four kinds: symmetric data keys rotated on a schedule,
signing and wrapping RSA keys, one key ready for deletion and one retired key
kept without deletion. Three KMS providers (AWS, Azure, GCP), each holding
one or two keys; two keys sit in the engine only. Every time is a whole number
of days before the clock's start, so the data are the same on every run
(only the RSA key material, made on first read, differs).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from ...backends import demo_at
from .state import KeyManagementEngine

if TYPE_CHECKING:
    from ...host import EngineHost

__all__ = ["DEMO_KEYS", "DEMO_PROVIDERS", "load_demo"]

# name -> (provider, key_collection)
DEMO_PROVIDERS: dict[str, tuple[str, str]] = {
    "aws-payments": ("awskms", "us-east-1"),
    "azure-signing": ("azurekeyvault", "kv-acme-signing"),
    "gcp-analytics": ("gcpckms", "projects/acme-analytics/locations/europe-west1/keyRings/vault"),
}


@dataclass(frozen=True)
class DemoKey:
    name: str
    type: str
    created: int  # days before the clock's start
    rotated: tuple[int, ...] = ()  # days before the start of each rotation
    # (provider, days before the start, purposes, protection)
    distributed: tuple[str, int, tuple[str, ...], str] | None = None
    min_enabled_version: int = 0
    deletion_allowed: bool = False


# name, type, days before the start it was created, days before each rotation,
# min_enabled_version, deletion_allowed
_KEYS: tuple[tuple[str, str, int, tuple[int, ...], int, bool], ...] = (
    ("payments-dek", "aes256-gcm96", 360, (270, 180, 90), 3, False),
    ("card-tokenization", "aes256-gcm96", 200, (20,), 0, False),
    ("release-signing", "rsa-3072", 400, (35,), 2, False),
    ("analytics-wrap", "rsa-2048", 150, (100, 50), 0, False),
    ("analytics-pii", "aes256-gcm96", 120, (), 0, False),
    ("backup-archive", "aes256-gcm96", 500, (300,), 0, True),
    ("legacy-reporting", "rsa-2048", 700, (400,), 0, False),
)

# key name -> (provider, days before the start, purposes, protection)
_DISTRIBUTED: dict[str, tuple[str, int, tuple[str, ...], str]] = {
    "payments-dek": ("aws-payments", 350, ("encrypt", "decrypt"), "hsm"),
    "card-tokenization": ("aws-payments", 199, ("encrypt", "decrypt"), "hsm"),
    "release-signing": ("azure-signing", 390, ("sign", "verify"), "hsm"),
    "analytics-wrap": ("gcp-analytics", 140, ("wrap", "unwrap"), "software"),
    "analytics-pii": ("gcp-analytics", 119, ("encrypt", "decrypt", "wrap", "unwrap"), "hsm"),
}

DEMO_KEYS: tuple[DemoKey, ...] = tuple(
    DemoKey(name, kind, created, rotated, _DISTRIBUTED.get(name), minimum, deletable)
    for name, kind, created, rotated, minimum, deletable in _KEYS
)


@demo_at("keymgmt", KeyManagementEngine)
def load_demo(service: EngineHost, engine: KeyManagementEngine) -> None:
    """The demo keys and providers, on the engine mounted at ``keymgmt/``."""
    start = service.clock.start

    for name, (provider, collection) in DEMO_PROVIDERS.items():
        engine.write_provider(name, provider=provider, key_collection=collection)
    for key in DEMO_KEYS:
        events: list[tuple[int, str]] = [(key.created, "create")]
        events += [(days, "rotate") for days in key.rotated]
        if key.distributed:
            events.append((key.distributed[1], "distribute"))
        for days, what in sorted(events, key=lambda e: -e[0]):
            at = start - timedelta(days=days)
            if what == "create":
                engine.write_key(key.name, type=key.type, at=at)
            elif what == "rotate":
                engine.rotate(key.name, at=at)
            elif key.distributed:
                provider, _, purposes, protection = key.distributed
                engine.distribute(
                    provider, key.name, purpose=list(purposes), protection=protection, at=at
                )
        engine.write_key(
            key.name,
            deletion_allowed=key.deletion_allowed,
            min_enabled_version=key.min_enabled_version,
        )
