"""Issuers, keys and roles of one mount (spec 4.10, multi-issuer model; part 2 roles).

One mount holds several CA issuers, each with its key; one of them is the
default (``config/issuers``). An issuer is found by its id, its name or the
literal ``default``. Keys are made with an issuer or alone
(``keys/generate/:type``), and a key an issuer uses cannot be deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from cryptography import x509

from ...errors import InvalidRequest
from . import x509 as certs
from .requests import KeyRequest
from .roles import Role, build_role, key_bits
from .state import USAGES, Issuer, PKIState, StoredKey

__all__ = ["LEAF_BEHAVIORS", "IssuerAdmin"]

LEAF_BEHAVIORS = ("err", "truncate", "permit")


class IssuerAdmin(PKIState):
    """Issuers (read, update, delete, the default), keys (generate, read, delete) and roles."""

    # -- issuers ------------------------------------------------------------------------
    def list_issuers(self) -> list[Issuer]:
        """Every issuer, in the order they were added (``LIST issuers``)."""
        return list(self.issuers.values())

    def update_issuer(
        self,
        ref: str,
        *,
        name: str | None = None,
        leaf_not_after_behavior: str | None = None,
        usage: list[str] | None = None,
    ) -> Issuer:
        """``POST issuer/:ref``: ``issuer_name``, ``leaf_not_after_behavior``, ``usage`` (None: unchanged)."""
        issuer = self.resolve(ref)
        name = issuer.name if name is None else name
        others = [i.name for i in self.issuers.values() if i.id != issuer.id]
        self._check_name(name, "issuer", others)
        behavior = leaf_not_after_behavior or issuer.leaf_not_after_behavior
        if behavior not in LEAF_BEHAVIORS:
            raise InvalidRequest(
                f"leaf_not_after_behavior: must be err, truncate or permit, got {behavior!r}"
            )
        usage = issuer.usage if usage is None else usage
        bad = [u for u in usage if u not in USAGES]
        if bad:
            raise InvalidRequest(f"usage: unknown issuer usage {bad[0]!r}")
        issuer.name, issuer.leaf_not_after_behavior = name, behavior
        issuer.usage = sorted(set(usage) | {"read-only"})  # read-only is always implied
        return issuer

    def set_config_issuers(self, default: str, follows_latest: bool | None = None) -> None:
        """``POST config/issuers``: the default issuer (by id or name) and whether it follows the latest."""
        if not default or default == "default":
            raise InvalidRequest(
                "Invalid issuer specification; must be non-empty and can't be 'default'."
            )
        issuer = self.resolve(default)
        if follows_latest is not None:
            self.default_follows_latest_issuer = follows_latest
        self.default_issuer = issuer.id

    def _add_issuer(self, cert: x509.Certificate, key_id: str, name: str = "") -> Issuer:
        issuer = Issuer(str(uuid.uuid4()), name, key_id, certs.cert_pem(cert))
        self.issuers[issuer.id] = issuer
        if key_id and (not self.default_issuer or self.default_follows_latest_issuer):
            self.default_issuer = issuer.id
        self._on_issuer_added(issuer)
        return issuer

    def delete_issuer(self, ref: str) -> list[str]:
        """``DELETE issuer/:ref``: the issuer goes (its certificates and key stay); warnings.

        An unknown reference changes nothing and is no error, as on the real
        server. Deleting the default leaves the mount with none, and says so.
        """
        issuer = self.find_issuer(ref)
        if issuer is None:
            return []
        del self.issuers[issuer.id]
        self.crls.pop(issuer.id, None)
        self.delta_crls.pop(issuer.id, None)
        warnings: list[str] = []
        if issuer.id == self.default_issuer:
            self.default_issuer = ""
            warnings.append(
                f"Deleted issuer {issuer.id} (via issuer_ref {ref}); this was configured as the "
                "default issuer. Operations without an explicit issuer will not work until a new "
                "default is configured."
            )
            using = [r for r in self.roles.values() if r.issuer_ref == "default"]
            if using:
                warnings.append(f"{len(using)} roles reference default")
        for named in {issuer.id, issuer.name} - {""}:
            using = [r for r in self.roles.values() if r.issuer_ref == named]
            if using:
                warnings.append(f"{len(using)} roles reference {named}")
        return warnings

    # -- keys -------------------------------------------------------------------------
    def resolve_key(self, ref: str) -> StoredKey:
        found = self.find_key(ref)
        if found is None:
            raise InvalidRequest(f"unable to find PKI key for reference: {ref}")
        return found

    def find_key(self, ref: str) -> StoredKey | None:
        if ref == "default" and self.default_issuer:
            ref = self.issuers[self.default_issuer].key_id
        return next((k for k in self.keys.values() if ref and ref in (k.id, k.name)), None)

    def default_key_id(self) -> str:
        """The id of the default issuer's key ("" when there is no default issuer)."""
        return self.issuers[self.default_issuer].key_id if self.default_issuer else ""

    def _key_for(self, request: KeyRequest) -> tuple[StoredKey | None, str, int, str]:
        """For ``internal``/``exported``: the type, bits and name of a new key; ``existing``: the key."""
        if request.kind == "existing":
            if not request.key_ref:
                raise InvalidRequest("missing argument key_ref for existing type")
            return self.resolve_key(request.key_ref), "", 0, ""
        if request.kind not in ("internal", "exported"):
            raise InvalidRequest(
                f"type: must be internal, exported or existing, got {request.kind!r}"
            )
        key_type = request.key_type or "rsa"
        if key_type == "any":
            raise InvalidRequest('key_type: "any" cannot be used to generate a key')
        bits = key_bits(key_type, request.key_bits or 0)
        self._check_name(request.key_name, "key", [k.name for k in self.keys.values()])
        return None, key_type, bits, request.key_name

    def _store_key(self, key: certs.PrivateKey, key_type: str, bits: int, name: str) -> StoredKey:
        stored = StoredKey(str(uuid.uuid4()), name, key_type, bits, certs.key_pem(key))
        self.keys[stored.id] = stored
        return stored

    def generate_key(self, request: KeyRequest) -> tuple[StoredKey, str]:
        """``POST keys/generate/internal|exported``: a key alone, and (``exported`` only,
        handed out this once) its private key as PEM; "" for ``internal``."""
        if request.kind not in ("internal", "exported"):
            raise InvalidRequest(f"type: must be internal or exported, got {request.kind!r}")
        _, key_type, bits, name = self._key_for(request)
        key = certs.generate_key(key_type, bits)
        stored = self._store_key(key, key_type, bits, name)
        exported = certs.private_key_output(key, "pem", "der") if request.kind == "exported" else ""
        return stored, exported

    def delete_key(self, ref: str) -> None:
        """``DELETE key/:ref``: refused while an issuer uses the key; an unknown key is no error."""
        key = self.find_key(ref)
        if key is None:
            return
        user = next((i for i in self.issuers.values() if i.key_id == key.id), None)
        if user is not None:
            # The real server's wording, two spaces included.
            raise InvalidRequest(f"Failed to Delete Key.  Key in Use by Issuer: {user.id}")
        del self.keys[key.id]

    # -- roles --------------------------------------------------------------------------
    def write_role(self, name: str, values: Mapping[str, Any]) -> tuple[Role, list[str]]:
        """``POST roles/:name``: the whole role (defaults for what is not given), and warnings.

        ``values`` are typed (seconds, booleans, lists), as the HTTP side read them.
        """
        role, warnings = build_role(values)
        if self.find_issuer(role.issuer_ref) is None:
            if role.issuer_ref == "default":
                warnings.append(
                    "Issuing Certificate was set to default, but no default issuing certificate "
                    "(configurable at /config/issuers) is currently set"
                )
            else:
                warnings.append(
                    f"Issuing Certificate was set to {role.issuer_ref} but no issuing "
                    "certificate currently has that name"
                )
        self.roles[name] = role
        return role, warnings

    def role(self, name: str) -> Role | None:
        return self.roles.get(name)

    def delete_role(self, name: str) -> None:
        self.roles.pop(name, None)
