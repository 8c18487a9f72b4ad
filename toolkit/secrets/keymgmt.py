"""Calls of the key management engine (spec 4.6), against any mount (default ``keymgmt``).

One method per endpoint: keys (create, read, update, rotate, delete, list,
the providers holding one), KMS providers (write, read, delete, list) and the
distribution of a key to a provider (distribute, read, list, remove). The
views read many records concurrently and give frames:

- :meth:`KeyManagement.keys_frame`: one row per key;
- :meth:`KeyManagement.key_versions_frame`: one row per key version;
- :meth:`KeyManagement.providers_frame`: one row per KMS provider;
- :meth:`KeyManagement.distributions_frame`: one row per key sent to a provider;
- :meth:`KeyManagement.keys_by_provider`: the matrix of keys and providers.

The ``credentials`` given to a provider are sent once and never come back:
the server does not answer them, and the client neither keeps nor shows them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import pandas as pd

from .._coverage import Coverage, carry, is_gap
from .._errors import InputError, NotFound, PermissionDenied
from .._frames import Schema, build_frame
from .._masking import Sensitive, hidden
from .._records import Record, integer, text
from .._spec.keymgmt import PROTECTIONS, PURPOSES
from .._time import from_epoch, parse_time
from ._base import EngineArea, Names, fields_of, listed_keys
from .key_rotation import ROTATION, key_findings, rotation_audit

__all__ = [
    "DISTRIBUTIONS",
    "KEYS",
    "KEY_VERSIONS",
    "KEY_TYPES",
    "KMS_PROVIDERS",
    "KeyManagement",
    "PROTECTIONS",
    "PURPOSES",
    "ROTATION",
    "key_findings",
    "purposes_of",
    "rotation_audit",
]

# The values a form offers; the server decides what a provider and key type take.
KEY_TYPES = ("aes256-gcm96", "rsa-2048", "rsa-3072", "rsa-4096")

KEYS = Schema.of(
    """name type latest_version:int min_enabled_version:int enabled_versions:int
    deletion_allowed:bool created:datetime last_rotated:datetime provider""",
    index="name",
)
KEY_VERSIONS = Schema.of("key version:int type creation_time:datetime enabled:bool public_key")
KMS_PROVIDERS = Schema.of("name provider key_collection key_count:int keys:object", index="name")
DISTRIBUTIONS = Schema.of(
    """key kms provider key_collection name_in_provider purpose protection versions:int
    latest_version:int distributed_at:datetime""",
    index="key",
)

# A list of names (the class defines methods named like the types).


def purposes_of(purpose: str | Iterable[str]) -> list[str]:
    """Purposes from a list or a comma-separated string, blanks and repeats dropped."""
    items = purpose.split(",") if isinstance(purpose, str) else list(purpose)
    return list(dict.fromkeys(p.strip() for p in items if p and p.strip()))


def _required(**values: str) -> None:
    for what, value in values.items():
        if not value or not str(value).strip():
            raise InputError(f"a {what.replace('_', ' ')} is required")


def _names(value: Any, field: str) -> str | list[str]:
    """Purposes as a server gives them: comma-separated text, or a list of names."""
    return value if isinstance(value, str) else listed_keys(value, field)


def _versions(raw: Any) -> dict[int, dict[str, Any]]:
    """``keys`` of a key read: version number -> ``creation_time`` (datetime), ``public_key``."""
    versions: dict[int, dict[str, Any]] = {}
    for number, entry in fields_of(raw, "keys").items():
        entry = entry if isinstance(entry, Mapping) else {}
        versions[integer(number, "keys")] = {
            "creation_time": parse_time(entry.get("creation_time")),
            "public_key": entry.get("public_key") or None,
        }
    return dict(sorted(versions.items()))


def _distributed_at(name_in_provider: str) -> datetime | None:
    """The unix timestamp the server appends to a key's name in a provider, as a datetime."""
    _, _, suffix = name_in_provider.rpartition("-")
    return from_epoch(suffix) if suffix.isdigit() else None


class KeyManagement(EngineArea):
    """The key management engine (spec 4.6); ``client.keymgmt.at(path)`` for another mount."""

    # -- keys ------------------------------------------------------------------------
    def list_keys(self) -> Names:
        """Key names. ``LIST /keymgmt/key``."""
        return self._list(self._path("key"))

    def create_key(self, name: str, type: str = "rsa-2048") -> Record:
        """Create a key of ``type`` (fixed from then on). ``POST /keymgmt/key/:name``.

        Types: ``aes256-gcm96``, ``rsa-2048``, ``rsa-3072``, ``rsa-4096``. Returns
        the key as :meth:`read_key` does. Posting an existing name with another
        type is refused by the server (400).
        """
        _required(key_name=name, key_type=type)
        self._send("POST", self._path("key/{name}", name=name), {"type": type})
        return self.read_key(name)

    def read_key(self, name: str) -> Record:
        """A key. ``GET /keymgmt/key/:name``.

        Fields ``name``, ``type``, ``deletion_allowed``, ``min_enabled_version``,
        ``latest_version``, and ``versions``: version number -> ``creation_time``
        (aware datetime) and ``public_key`` (PEM; None for a symmetric key).
        """
        _required(key_name=name)
        data = self._read(self._path("key/{name}", name=name))
        return Record(
            {
                "name": text(data.get("name"), "name") or name,
                "type": data.get("type"),
                "deletion_allowed": bool(data.get("deletion_allowed")),
                "min_enabled_version": integer(
                    data.get("min_enabled_version"), "min_enabled_version"
                ),
                "latest_version": integer(data.get("latest_version"), "latest_version"),
                "versions": _versions(data.get("keys")),
            },
            kind="managed-key",
        )

    def update_key(
        self,
        name: str,
        *,
        min_enabled_version: int | None = None,
        deletion_allowed: bool | None = None,
    ) -> Record:
        """Change a key's ``min_enabled_version`` and/or ``deletion_allowed``.

        ``PUT /keymgmt/key/:name``. Versions below ``min_enabled_version`` are
        disabled for cryptographic operations in the provider (0 enables all);
        the server refuses a value above the latest version. Returns the key.
        """
        _required(key_name=name)
        body: dict[str, Any] = {}
        if min_enabled_version is not None:
            if min_enabled_version < 0:
                raise InputError(
                    f"min_enabled_version must not be negative, not {min_enabled_version}"
                )
            body["min_enabled_version"] = min_enabled_version
        if deletion_allowed is not None:
            body["deletion_allowed"] = deletion_allowed
        if not body:
            raise InputError("nothing to update: give min_enabled_version or deletion_allowed")
        self._send(
            "POST",
            self._path("key/{name}", name=name),
            body,
            check="read the key (keymgmt.read_key)",
        )
        return self.read_key(name)

    def rotate_key(self, name: str) -> Record:
        """Add a new version (sent to the key's provider too). ``POST /keymgmt/key/:name/rotate``.

        Returns the key after the rotation.
        """
        _required(key_name=name)
        self._send(
            "POST",
            self._path("key/{name}/rotate", name=name),
            check=f"read the key's latest_version (keymgmt.read_key({name!r}))",
        )
        return self.read_key(name)

    def delete_key(self, name: str) -> None:
        """Delete a key. ``DELETE /keymgmt/key/:name``.

        The server refuses (400, naming the reason) while the key is in a
        provider or while ``deletion_allowed`` is false.
        """
        _required(key_name=name)
        self._send("DELETE", self._path("key/{name}", name=name))

    def list_key_providers(self, name: str) -> Names:
        """The KMS providers holding the key (one at most). ``LIST /keymgmt/key/:name/kms``."""
        _required(key_name=name)
        return self._list(self._path("key/{name}/kms", name=name))

    # -- KMS providers -------------------------------------------------------------------
    def list_providers(self) -> Names:
        """KMS provider names. ``LIST /keymgmt/kms``."""
        return self._list(self._path("kms"))

    def write_provider(
        self,
        name: str,
        provider: str,
        key_collection: str,
        credentials: Mapping[str, str | Sensitive] | None = None,
    ) -> Record:
        """Create or update a KMS provider. ``PUT /keymgmt/kms/:name``.

        ``provider`` (for example ``awskms``, ``azurekeyvault``, ``gcpckms``) and
        ``key_collection`` are fixed after creation. ``credentials`` (values
        plain or :class:`~toolkit.Sensitive`) are sent and never returned;
        without them the provider reads its environment. Returns the provider
        as :meth:`read_provider` does (without credentials).
        """
        _required(provider_name=name, provider=provider, key_collection=key_collection)
        body: dict[str, Any] = {"provider": provider, "key_collection": key_collection}
        if credentials:
            body["credentials"] = {str(k): hidden(v, "credential") for k, v in credentials.items()}
        self._send("POST", self._path("kms/{name}", name=name), body)
        return self.read_provider(name)

    def read_provider(self, name: str) -> Record:
        """A KMS provider: ``name``, ``provider``, ``key_collection``. ``GET /keymgmt/kms/:name``."""
        _required(provider_name=name)
        data = self._read(self._path("kms/{name}", name=name))
        return Record(
            {
                "name": name,
                "provider": data.get("provider"),
                "key_collection": data.get("key_collection"),
            },
            kind="kms-provider",
        )

    def delete_provider(self, name: str) -> None:
        """Delete a KMS provider. ``DELETE /keymgmt/kms/:name``; refused while it holds keys."""
        _required(provider_name=name)
        self._send("DELETE", self._path("kms/{name}", name=name))

    # -- distribution --------------------------------------------------------------------
    def distribute(
        self,
        provider: str,
        key: str,
        purpose: str | Sequence[str],
        protection: str = "hsm",
    ) -> Record:
        """Send a key to a KMS provider. ``PUT /keymgmt/kms/:name/key/:key_name``.

        ``purpose``: at least one (a list, or a comma-separated string);
        ``protection``: ``hsm`` by default. Both are fixed once the key is
        there. A key goes to one provider only: the server refuses a second.
        Returns the key in the provider as :meth:`read_distribution` does.
        """
        _required(provider_name=provider, key_name=key)
        purposes = purposes_of(purpose)
        if not purposes:
            raise InputError("at least one purpose is required (for example encrypt, decrypt)")
        body = {"purpose": purposes, "protection": protection or "hsm"}
        self._send(
            "POST",
            self._path("kms/{provider}/key/{key}", provider=provider, key=key),
            body,
            check="read the distribution (keymgmt.read_distribution)",
        )
        return self.read_distribution(provider, key)

    def read_distribution(self, provider: str, key: str) -> Record:
        """A key in a KMS provider. ``GET /keymgmt/kms/:name/key/:key_name``.

        Fields ``key``, ``kms`` (the provider's name), ``name`` (the key's name
        in the provider: key name plus a unix timestamp), ``purpose`` (list),
        ``protection``, ``versions`` (version number -> provider-side id) and
        ``distributed_at`` (the time in the name).
        """
        _required(provider_name=provider, key_name=key)
        data = self._read(self._path("kms/{provider}/key/{key}", provider=provider, key=key))
        name = str(data.get("name") or "")
        return Record(
            {
                "key": key,
                "kms": provider,
                "name": name,
                "purpose": purposes_of(_names(data.get("purpose"), "purpose")),
                "protection": data.get("protection"),
                "versions": {
                    integer(v, "versions"): str(i)
                    for v, i in sorted(fields_of(data.get("versions"), "versions").items())
                },
                "distributed_at": _distributed_at(name),
            },
            kind="distributed-key",
        )

    def list_provider_keys(self, provider: str) -> Names:
        """Keys in a KMS provider. ``LIST /keymgmt/kms/:name/key``."""
        _required(provider_name=provider)
        return self._list(self._path("kms/{provider}/key", provider=provider))

    def remove_from_provider(self, provider: str, key: str) -> None:
        """Take a key out of a provider; it stays in the engine.

        ``DELETE /keymgmt/kms/:name/key/:key_name``.
        """
        _required(provider_name=provider, key_name=key)
        self._send("DELETE", self._path("kms/{provider}/key/{key}", provider=provider, key=key))

    # -- views ---------------------------------------------------------------------------
    def _all_keys(self, cov: Coverage, names: Iterable[str] | None = None) -> list[Record]:
        """Every key (or ``names``) read; a key refused is a gap in ``cov``."""
        todo = self.list_keys() if names is None else list(dict.fromkeys(names))

        def read(name: str) -> Record:
            try:
                return self.read_key(name)
            except NotFound as exc:
                if names is None or type(exc) is not NotFound:
                    raise
                # A key asked by name that does not exist is an error, not no rows.
                missing = NotFound(
                    exc.status,
                    [f"no key {name!r} in the key management engine at {self.mount}/"],
                    method=exc.method,
                    url=exc.url,
                )
                missing.hint = "check the name: `list_keys()` lists the keys"
                raise missing from None

        if names is None:
            return self._read_each(cov, todo, self.read_key, "key")

        def one(name: str) -> Record | None:
            try:  # asked by name: a missing key is raised, a refused one is a gap
                return read(name)
            except PermissionDenied as exc:
                if not is_gap(exc):
                    raise
                cov.note_error(self._path("key/{name}", name=name).lstrip("/"), exc)
                return None

        keys = [k for k in self._http.map(one, todo) if k is not None]
        cov.note_read(len(keys))
        return keys

    def _all_distributions(self, cov: Coverage) -> tuple[list[Record], list[Record]]:
        """Every provider, and every key in every provider; what is refused is a gap."""

        providers = self._read_each(cov, self.list_providers(), self.read_provider, "kms")
        pairs: list[tuple[str, str]] = []
        for p in providers:
            name = str(p["name"])
            held = cov.read_or_gap(
                self._path("kms/{name}/key", name=name).lstrip("/"),
                partial(self.list_provider_keys, name),
            )
            pairs.extend((p["name"], k) for k in held or [])

        def distribution(pk: tuple[str, str]) -> Record | None:
            return cov.read_or_gap(
                self._path("kms/{provider}/key/{key}", provider=pk[0], key=pk[1]).lstrip("/"),
                lambda: self.read_distribution(*pk),
            )

        found = [d for d in self._http.map(distribution, pairs) if d is not None]
        cov.note_read(len(found))
        return providers, found

    def keys_frame(self) -> pd.DataFrame:
        """One row per key (index ``name``): type, versions, settings, and its provider.

        Columns ``type``, ``latest_version``, ``min_enabled_version``,
        ``enabled_versions``, ``deletion_allowed``, ``created`` (version 1),
        ``last_rotated`` (the latest version's creation), ``provider`` (the KMS
        provider holding the key, NA when none).
        """
        cov = self._coverage("keys_frame")
        keys = self._all_keys(cov)
        holders = {d["key"]: d["kms"] for d in self._all_distributions(cov)[1]}
        rows = []
        for key in keys:
            versions = key["versions"]
            times = [v["creation_time"] for v in versions.values() if v["creation_time"]]
            minimum = key["min_enabled_version"]
            rows.append(
                {
                    **key,
                    "enabled_versions": sum(1 for n in versions if n >= minimum),
                    "created": min(times) if times else None,
                    "last_rotated": versions[max(versions)]["creation_time"] if versions else None,
                    "provider": holders.get(key["name"]),
                }
            )
        return cov.attach(build_frame(rows, KEYS))

    def key_versions_frame(self, names: Iterable[str] | None = None) -> pd.DataFrame:
        """One row per version of each key (all keys, or ``names``), indexed by key and version.

        Columns ``type``, ``creation_time``, ``enabled`` (at or above
        ``min_enabled_version``), ``public_key`` (PEM; NA for symmetric keys).
        """
        cov = self._coverage("key_versions_frame")
        keys = self._all_keys(cov, names)
        rows = [
            {
                "key": key["name"],
                "version": number,
                "type": key["type"],
                "creation_time": version["creation_time"],
                "enabled": number >= key["min_enabled_version"],
                "public_key": version["public_key"],
            }
            for key in keys
            for number, version in key["versions"].items()
        ]
        return cov.attach(build_frame(rows, KEY_VERSIONS).set_index(["key", "version"]))

    def providers_frame(self) -> pd.DataFrame:
        """One row per KMS provider (index ``name``): ``provider``, ``key_collection``, its keys."""
        cov = self._coverage("providers_frame")
        providers, distributions = self._all_distributions(cov)
        held: dict[str, list[str]] = {p["name"]: [] for p in providers}
        for dist in distributions:
            held[dist["kms"]].append(dist["key"])
        rows = [
            {**p, "keys": sorted(held[p["name"]]), "key_count": len(held[p["name"]])}
            for p in providers
        ]
        return cov.attach(build_frame(rows, KMS_PROVIDERS))

    def distributions_frame(self) -> pd.DataFrame:
        """One row per key in a provider (index ``key``).

        Columns ``kms`` (provider name), ``provider`` (its type), ``key_collection``,
        ``name_in_provider``, ``purpose`` (comma-separated), ``protection``,
        ``versions`` (how many are in the provider), ``latest_version`` (the
        highest there), ``distributed_at``.
        """
        cov = self._coverage("distributions_frame")
        providers, distributions = self._all_distributions(cov)
        by_name = {p["name"]: p for p in providers}
        rows = [
            {
                "key": d["key"],
                "kms": d["kms"],
                "provider": by_name[d["kms"]]["provider"],
                "key_collection": by_name[d["kms"]]["key_collection"],
                "name_in_provider": d["name"],
                "purpose": ", ".join(d["purpose"]),
                "protection": d["protection"],
                "versions": len(d["versions"]),
                "latest_version": max(d["versions"], default=None),
                "distributed_at": d["distributed_at"],
            }
            for d in distributions
        ]
        return cov.attach(build_frame(rows, DISTRIBUTIONS).sort_index())

    def keys_by_provider(self) -> pd.DataFrame:
        """The matrix of keys (rows, every key) and KMS providers (columns, every provider).

        A cell says what a provider holds of a key: its versions and purposes,
        for example ``v1-v4: encrypt, decrypt (hsm)``; NA where the provider
        does not hold the key. Columns are the provider names in order, dtype
        ``string``; index ``key``, columns named ``kms``.
        """
        names = self.list_keys()
        cov = self._coverage("keys_by_provider")
        cov.note_read(len(names))
        providers, distributions = self._all_distributions(cov)
        columns = sorted(p["name"] for p in providers)
        cells = {(d["key"], d["kms"]): _cell(d) for d in distributions}
        frame = pd.DataFrame(
            {
                kms: pd.Series([cells.get((k, kms)) for k in names], index=names, dtype="string")
                for kms in columns
            },
            index=pd.Index(names, dtype="string", name="key"),
            columns=pd.Index(columns, dtype="string", name="kms"),
        )
        return cov.attach(frame)

    def rotation_audit(
        self, period: timedelta | int = timedelta(days=90), *, now: datetime | None = None
    ) -> pd.DataFrame:
        """Every version of every key with its age, and whether the key is overdue a rotation.

        Reads each key (``LIST /<mount>/key``, then ``GET /<mount>/key/:name``).
        Index (``key``, ``version``); columns ``creation_time``, ``age`` (a
        timedelta), ``state`` (``enabled``, or ``disabled`` below the key's
        ``min_enabled_version``), ``latest`` (the newest version), ``overdue``
        (on the newest version only: it is older than ``period``, a timedelta or
        days). Ages are measured by the server's clock unless ``now`` is given.
        """
        versions = self.key_versions_frame()
        audit = rotation_audit(versions, period, now or self._http.server_now())
        return carry(audit, versions, view="keymgmt.rotation_audit")

    def findings(
        self, period: timedelta | int = timedelta(days=90), *, now: datetime | None = None
    ) -> pd.DataFrame:
        """Keys not rotated within ``period``: :func:`key_findings` of :meth:`rotation_audit`."""
        audit = self.rotation_audit(period, now=now)
        return carry(key_findings(audit, self.mount), audit, view="keymgmt.findings")


def _cell(distribution: Mapping[str, Any]) -> str:
    versions = sorted(distribution["versions"])
    if not versions:
        span = "no versions"
    else:
        span = f"v{versions[0]}-v{versions[-1]}" if len(versions) > 1 else f"v{versions[0]}"
    return f"{span}: {', '.join(distribution['purpose'])} ({distribution['protection']})"
