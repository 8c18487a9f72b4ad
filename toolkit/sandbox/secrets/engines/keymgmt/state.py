"""The key management engine (spec 4.6, part 2 'Managed key', 'KMS provider', part 3 'Key distribution'): state and rules, no HTTP.

Keys hold real key material made with the ``cryptography`` package: 32 random
bytes for ``aes256-gcm96``, an RSA private key for ``rsa-2048/3072/4096``.
The material is never answered; asymmetric keys show their public key in PEM.
RSA material is made when first needed (a read of the key's public keys), so
creating, rotating and distributing keys and loading the demo data stay
fast (a 4096-bit key takes about a second to make); AES material at once.

A key goes to one KMS provider at most, a provider holds many keys (spec part 8).
Distributing copies every version to the provider under a provider-side id,
and a rotation of a distributed key sends the new version too. Refusals
(spec part 7) are 400s naming the reason, checked before anything changes.

The sandbox talks to no cloud: a provider's ``credentials`` are checked to be
a map of strings and then dropped, so they are neither answered nor stored.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ....._spec.keymgmt import PROTECTIONS, PURPOSES, SYMMETRIC_PURPOSES
from ...errors import InvalidRequest, PathNotFound

if TYPE_CHECKING:
    from ...host import EngineHost
    from ...mounts import Mount

__all__ = [
    "DEFAULT_KEY_TYPE",
    "DEFAULT_PROTECTION",
    "KEY_TYPES",
    "PROTECTIONS",
    "PROVIDERS",
    "PURPOSES",
    "Distribution",
    "KeyManagementEngine",
    "KeyVersion",
    "KmsProvider",
    "ManagedKey",
    "ProviderKind",
]

_T = TypeVar("_T")

# Key type -> RSA modulus size in bits (None: the symmetric AES-256 key).
KEY_TYPES: dict[str, int | None] = {
    "aes256-gcm96": None,
    "rsa-2048": 2048,
    "rsa-3072": 3072,
    "rsa-4096": 4096,
}
DEFAULT_KEY_TYPE = "rsa-2048"
_SYMMETRIC_PURPOSES = SYMMETRIC_PURPOSES
DEFAULT_PROTECTION = "hsm"


@dataclass(frozen=True)
class ProviderKind:
    """What one external KMS accepts: key types and purposes."""

    key_types: frozenset[str]
    purposes: frozenset[str]
    description: str


PROVIDERS: dict[str, ProviderKind] = {
    "awskms": ProviderKind(
        frozenset(KEY_TYPES), frozenset({"encrypt", "decrypt"}), "AWS KMS region"
    ),
    "azurekeyvault": ProviderKind(
        frozenset(t for t, bits in KEY_TYPES.items() if bits),
        frozenset(PURPOSES),
        "Azure Key Vault",
    ),
    "gcpckms": ProviderKind(frozenset(KEY_TYPES), frozenset(PURPOSES), "GCP Cloud KMS key ring"),
}


@dataclass
class KeyVersion:
    """One version of a key: when it was made and its material (never answered)."""

    creation_time: datetime
    material: bytes | None = None  # AES key bytes, or the RSA private key (PKCS#8 DER)
    public_key: str = ""  # PEM, asymmetric keys only


@dataclass
class ManagedKey:
    name: str
    type: str
    versions: dict[int, KeyVersion] = field(default_factory=dict)
    deletion_allowed: bool = False
    min_enabled_version: int = 0

    @property
    def latest_version(self) -> int:
        return max(self.versions, default=0)


@dataclass
class Distribution:
    """A key in a KMS provider (spec part 2 'Key in a KMS provider')."""

    key: str
    name: str  # the key's name in the provider: key name plus a unix timestamp
    purpose: list[str]
    protection: str
    versions: dict[int, str] = field(default_factory=dict)  # version -> provider-side id


@dataclass
class KmsProvider:
    name: str
    provider: str
    key_collection: str
    keys: dict[str, Distribution] = field(default_factory=dict)


def _named(table: dict[str, _T], name: str, what: str) -> _T:
    found = table.get(name)
    if found is None:
        raise PathNotFound(f"{what} not found: {name}")
    return found


class KeyManagementEngine:
    """One mount's state of the key management engine (spec 4.6, part 2 'Managed key', 'KMS provider', part 3 'Key distribution')."""

    def __init__(self, service: EngineHost, mount: Mount) -> None:
        self.service = service
        self.mount = mount
        self.keys: dict[str, ManagedKey] = {}
        self.providers: dict[str, KmsProvider] = {}

    # -- keys -----------------------------------------------------------------------
    def key(self, name: str) -> ManagedKey:
        """The key ``name``; 404 ``key not found`` when there is none."""
        return _named(self.keys, name, "key")

    def write_key(
        self,
        name: str,
        *,
        type: str | None = None,
        deletion_allowed: bool | None = None,
        min_enabled_version: int | None = None,
        at: datetime | None = None,
    ) -> bool:
        """Create ``name`` (of ``type``, default ``rsa-2048``) or update it; True when created.

        The type is fixed at creation: naming another one later is 400.
        ``min_enabled_version`` lies between 0 and the latest version.
        """
        if type is not None and type not in KEY_TYPES:
            raise InvalidRequest(
                f"type: unsupported key type {type!r}; expected one of {', '.join(KEY_TYPES)}"
            )
        if min_enabled_version is not None and min_enabled_version < 0:
            raise InvalidRequest(
                f"min_enabled_version: must not be negative, got {min_enabled_version}"
            )
        existing = self.keys.get(name)
        if existing is None:
            key = ManagedKey(name, type or DEFAULT_KEY_TYPE)
            latest = 1
        else:
            key, latest = existing, existing.latest_version
            if type is not None and type != key.type:
                raise InvalidRequest(
                    f"type: the type of key {name!r} is fixed at creation ({key.type}), "
                    f"it cannot become {type}",
                )
        if min_enabled_version is not None and min_enabled_version > latest:
            raise InvalidRequest(
                f"min_enabled_version: {min_enabled_version} is above the latest version "
                f"of key {name!r} ({latest})",
            )
        if existing is None:
            self._add_version(key, at)
            self.keys[name] = key
        if deletion_allowed is not None:
            key.deletion_allowed = deletion_allowed
        if min_enabled_version is not None:
            key.min_enabled_version = min_enabled_version
        return existing is None

    def rotate(self, name: str, *, at: datetime | None = None) -> int:
        """Add a version to ``name`` (sent to its provider too, if distributed); the new number."""
        key = self.key(name)
        version = self._add_version(key, at)
        held = self._holder(name)
        if held is not None:
            provider, dist = held
            dist.versions[version] = self._provider_id(provider, dist, version)
        return version

    def delete_key(self, name: str) -> None:
        """Delete ``name``: only once it is in no provider and ``deletion_allowed`` is true."""
        key = self.key(name)
        held = self._holder(name)
        if held is not None:
            raise InvalidRequest(
                f"key {name!r} is still distributed to KMS provider {held[0].name!r}; "
                "remove it from the provider first",
            )
        if not key.deletion_allowed:
            raise InvalidRequest(
                f"deletion of key {name!r} is not allowed: set deletion_allowed to true first",
            )
        del self.keys[name]

    def read_key(self, name: str) -> ManagedKey:
        """The key ``GET key/:name`` shows, each version's public key made (RSA keys make
        their material when first shown or used)."""
        key = self.key(name)
        for number in key.versions:
            self._material(key, number)
        return key

    def key_names(self) -> list[str]:
        return sorted(self.keys)

    def key_providers(self, name: str) -> list[str]:
        """The providers holding ``name`` (at most one)."""
        self.key(name)
        held = self._holder(name)
        return [held[0].name] if held else []

    # -- KMS providers ----------------------------------------------------------------
    def provider(self, name: str) -> KmsProvider:
        """The KMS provider ``name``; 404 ``kms provider not found`` when there is none."""
        return _named(self.providers, name, "kms provider")

    def write_provider(
        self,
        name: str,
        *,
        provider: str | None,
        key_collection: str | None,
        credentials: dict[str, str] | None = None,
    ) -> bool:
        """Create or update the KMS provider ``name``; True when created.

        ``provider`` and ``key_collection`` are required at creation and fixed
        afterwards (400 naming the field when changed). ``credentials`` are
        accepted and not kept: the sandbox reaches no external KMS.
        """
        if provider and provider not in PROVIDERS:
            raise InvalidRequest(
                f"provider: unsupported KMS provider {provider!r}; "
                f"expected one of {', '.join(PROVIDERS)}",
            )
        existing = self.providers.get(name)
        if existing is None:
            if not provider:
                raise InvalidRequest("missing provider")
            if not key_collection:
                raise InvalidRequest("missing key_collection")
            self.providers[name] = KmsProvider(name, provider, key_collection)
            return True
        for field_name, given, current in (
            ("provider", provider, existing.provider),
            ("key_collection", key_collection, existing.key_collection),
        ):
            if given and given != current:
                raise InvalidRequest(
                    f"{field_name}: fixed after creation; KMS provider {name!r} keeps "
                    f"{current!r}, it cannot become {given!r}",
                )
        return False

    def delete_provider(self, name: str) -> None:
        """Delete the KMS provider ``name``: refused while it still holds keys."""
        found = self.provider(name)
        if found.keys:
            raise InvalidRequest(
                f"KMS provider {name!r} still holds keys ({', '.join(sorted(found.keys))}); "
                "remove them from the provider first",
            )
        del self.providers[name]

    def provider_names(self) -> list[str]:
        return sorted(self.providers)

    # -- distribution -----------------------------------------------------------------
    def distribute(
        self,
        provider_name: str,
        key_name: str,
        *,
        purpose: list[str],
        protection: str = DEFAULT_PROTECTION,
        at: datetime | None = None,
    ) -> bool:
        """Send ``key_name`` with every version to the provider; True when newly distributed.

        ``purpose`` (at least one) and ``protection`` are fixed once the key is
        there: the same request again changes nothing, different values are 400.
        A key already at another provider is refused (one provider per key).
        """
        provider = self.provider(provider_name)
        key = self.key(key_name)
        kind = PROVIDERS[provider.provider]
        purposes = list(dict.fromkeys(purpose))
        if not purposes:
            raise InvalidRequest("purpose: at least one purpose is required")
        unknown = [p for p in purposes if p not in PURPOSES]
        if unknown:
            raise InvalidRequest(
                f"purpose: unsupported {', '.join(map(repr, unknown))}; "
                f"expected some of {', '.join(PURPOSES)}",
            )
        if protection not in PROTECTIONS:
            raise InvalidRequest(
                f"protection: unsupported {protection!r}; expected one of {', '.join(PROTECTIONS)}",
            )
        present = provider.keys.get(key_name)
        if present is not None:
            if sorted(present.purpose) != sorted(purposes):
                raise InvalidRequest(
                    f"purpose: fixed once key {key_name!r} is distributed to {provider_name!r} "
                    f"({', '.join(present.purpose)})",
                )
            if present.protection != protection:
                raise InvalidRequest(
                    f"protection: fixed once key {key_name!r} is distributed to "
                    f"{provider_name!r} ({present.protection})",
                )
            return False
        held = self._holder(key_name)
        if held is not None:
            raise InvalidRequest(
                f"key {key_name!r} is already distributed to KMS provider {held[0].name!r}; "
                "a key can be distributed to one provider only",
            )
        if key.type not in kind.key_types:
            raise InvalidRequest(
                f"key {key_name!r} is {key.type}, which {provider.provider} does not take; "
                f"it takes {', '.join(sorted(kind.key_types))}",
            )
        refused = [p for p in purposes if p not in kind.purposes] or (
            [p for p in purposes if p not in _SYMMETRIC_PURPOSES]
            if KEY_TYPES[key.type] is None
            else []
        )
        if refused:
            allowed = kind.purposes & (
                _SYMMETRIC_PURPOSES if KEY_TYPES[key.type] is None else frozenset(PURPOSES)
            )
            raise InvalidRequest(
                f"purpose: {', '.join(refused)} not supported for key type {key.type} in "
                f"{provider.provider}; supported: {', '.join(p for p in PURPOSES if p in allowed)}",
            )
        when = at or self.service.clock.now()
        dist = Distribution(key_name, f"{key_name}-{int(when.timestamp())}", purposes, protection)
        for number in sorted(key.versions):
            dist.versions[number] = self._provider_id(provider, dist, number)
        provider.keys[key_name] = dist
        return True

    def distribution(self, provider_name: str, key_name: str) -> Distribution:
        """The key ``key_name`` in the provider; 404 when it is not there."""
        found = self.provider(provider_name).keys.get(key_name)
        if found is None:
            raise PathNotFound(
                f"key {key_name!r} is not distributed to KMS provider {provider_name!r}"
            )
        return found

    def provider_keys(self, provider_name: str) -> list[str]:
        return sorted(self.provider(provider_name).keys)

    def remove(self, provider_name: str, key_name: str) -> None:
        """Take the key out of the provider only; it stays in the engine."""
        self.distribution(provider_name, key_name)
        del self.providers[provider_name].keys[key_name]

    # -- internals ----------------------------------------------------------------------
    def _holder(self, key_name: str) -> tuple[KmsProvider, Distribution] | None:
        for provider in self.providers.values():
            if key_name in provider.keys:
                return provider, provider.keys[key_name]
        return None

    def _add_version(self, key: ManagedKey, at: datetime | None) -> int:
        number = key.latest_version + 1
        version = KeyVersion(at or self.service.clock.now())
        if KEY_TYPES[key.type] is None:
            version.material = os.urandom(32)
        key.versions[number] = version
        return number

    @staticmethod
    def _material(key: ManagedKey, number: int) -> None:
        """Make an RSA version's private key (and its PEM public key) if not made yet."""
        version = key.versions[number]
        bits = KEY_TYPES[key.type]
        if version.material is not None or bits is None:
            return
        private = rsa.generate_private_key(public_exponent=65537, key_size=bits)
        version.material = private.private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        version.public_key = (
            private.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode()
        )

    def _provider_id(self, provider: KmsProvider, dist: Distribution, number: int) -> str:
        """The provider-side id of a version, in that provider's form, stable for its inputs."""
        seed = f"{self.mount.path}|{provider.name}|{dist.name}|{number}"
        digest = hashlib.sha256(seed.encode()).hexdigest()
        if provider.provider == "awskms":
            return str(uuid.UUID(digest[:32]))
        if provider.provider == "gcpckms":
            return f"{provider.key_collection}/cryptoKeys/{dist.name}/cryptoKeyVersions/{number}"
        return digest[:32]
