"""Issuers and keys (spec 4.10): generate, import, read, update, the default, delete."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..._frames import build_frame
from ..._records import Record
from ..._x509 import path_length
from .._base import hide, unwrap, warnings_of
from ._area import PKIBase
from ._common import (
    PKI_ISSUERS,
    _body,
    _load_certificate,
)


class IssuerCalls(PKIBase):
    """Issuers and keys (spec 4.10)."""

    # -- issuers ----------------------------------------------------------------------
    def list_issuers(self) -> list[str]:
        """Issuer ids. ``LIST /pki/issuers``."""
        return self._list(self._path("issuers"))

    def read_issuer(self, ref: str = "default") -> Record:
        """An issuer by id, name or ``default``. ``GET /pki/issuer/:ref``."""
        return self._record(self._read(self._path("issuer/{ref}", ref=ref)), "pki_issuer")

    def update_issuer(self, ref: str, **fields: Any) -> Record:
        """Change ``issuer_name``, ``leaf_not_after_behavior``, ``usage``. ``POST /pki/issuer/:ref``."""
        return self._record(
            unwrap(self._send("POST", self._path("issuer/{ref}", ref=ref), fields)), "pki_issuer"
        )

    def default_issuer(self) -> Record:
        """``default`` (an issuer id) and ``default_follows_latest_issuer``. ``GET /pki/config/issuers``."""
        return self._record(self._read(self._path("config/issuers")), "pki_issuers_config")

    def set_default_issuer(self, ref: str, *, follows_latest: bool | None = None) -> Record:
        """Make the issuer ``ref`` (id or name) the default. ``POST /pki/config/issuers``."""
        body = _body(default=ref, default_follows_latest_issuer=follows_latest)
        return self._record(
            unwrap(self._send("POST", self._path("config/issuers"), body)), "pki_issuers_config"
        )

    def issuers_frame(self) -> pd.DataFrame:
        """Every issuer of the mount with what its certificate says (:data:`PKI_ISSUERS`).

        ``LIST /pki/issuers``, ``GET /pki/config/issuers`` (which is the default), then
        ``GET /pki/issuer/:ref`` each, concurrently; ``attrs["coverage"]`` notes an
        issuer (or the default) whose read was refused."""
        cov = self._coverage("issuers_frame")
        config = cov.read_or_gap(self._path("config/issuers").lstrip("/"), self.default_issuer)
        default = config.get("default", "") if config is not None else ""
        rows = []
        for issuer_id, data in self._read_each_named(
            cov, self.list_issuers(), self.read_issuer, "issuer"
        ):
            cert = _load_certificate(data["certificate"])
            rows.append(
                {
                    **data,
                    "issuer_id": issuer_id,
                    "is_default": issuer_id == default,
                    "subject": cert.subject.rfc4514_string(),
                    "issuer": cert.issuer.rfc4514_string(),
                    "self_signed": cert.issuer == cert.subject,
                    "max_path_length": path_length(cert),
                    "not_before": cert.not_valid_before_utc,
                    "not_after": cert.not_valid_after_utc,
                }
            )
        return cov.attach(build_frame(rows, PKI_ISSUERS))

    def generate_root(
        self, common_name: str, *, type: str = "internal", legacy_path: bool = False, **params: Any
    ) -> Record:
        """A new root issuer. ``POST /pki/issuers/generate/root/:type`` (``legacy_path``: ``root/generate/:type``).

        ``type`` is ``internal`` (the key stays), ``exported`` (the key is
        answered once, as ``Sensitive``) or ``existing`` (``key_ref``). Other
        parameters as the server takes them (``issuer_name``, ``key_type``,
        ``ttl``, ``not_after``, ``max_path_length``, ...).
        """
        template = "root/generate/{type}" if legacy_path else "issuers/generate/root/{type}"
        data = unwrap(
            self._send(
                "POST", self._path(template, type=type), _body(common_name=common_name, **params)
            )
        )
        return Record(hide(data, "private_key", label="private key"), kind="pki_issuer")

    def generate_intermediate(
        self, common_name: str, *, type: str = "internal", legacy_path: bool = False, **params: Any
    ) -> Record:
        """A new key and a CSR for an intermediate CA. ``POST /pki/issuers/generate/intermediate/:type``.

        ``legacy_path``: ``intermediate/generate/:type``. Returns ``csr``, ``key_id``.
        """
        template = (
            "intermediate/generate/{type}"
            if legacy_path
            else "issuers/generate/intermediate/{type}"
        )
        data = unwrap(
            self._send(
                "POST", self._path(template, type=type), _body(common_name=common_name, **params)
            )
        )
        return Record(hide(data, "private_key", label="private key"), kind="pki_csr")

    def set_signed(self, certificate: str) -> Record:
        """Import the signed intermediate (and its chain). ``POST /pki/intermediate/set-signed``.

        Returns ``imported_issuers``, ``existing_issuers`` and the ``mapping`` of issuer to key.
        """
        return self._record(
            unwrap(
                self._send(
                    "POST", self._path("intermediate/set-signed"), {"certificate": certificate}
                )
            ),
            "pki_import",
        )

    def import_bundle(self, pem_bundle: str) -> Record:
        """Import CA certificates (and keys) as issuers. ``POST /pki/issuers/import/bundle``."""
        return self._record(
            unwrap(
                self._send("POST", self._path("issuers/import/bundle"), {"pem_bundle": pem_bundle})
            ),
            "pki_import",
        )

    def list_keys(self) -> list[str]:
        """Key ids. ``LIST /pki/keys``."""
        return self._list(self._path("keys"))

    def read_key(self, ref: str) -> Record:
        """A key's id, name and type (never its material). ``GET /pki/key/:ref``."""
        return self._record(self._read(self._path("key/{ref}", ref=ref)), "pki_key")

    def generate_key(
        self,
        *,
        exported: bool = False,
        key_type: str | None = None,
        key_bits: int | None = None,
        key_name: str | None = None,
    ) -> Record:
        """A key with no issuer. ``POST /pki/keys/generate/internal`` (``exported``: ``.../exported``).

        Returns ``key_id``, ``key_name``, ``key_type``; an exported key's
        ``private_key`` is :class:`Sensitive`, answered this once.
        """
        kind = "exported" if exported else "internal"
        body = _body(key_type=key_type, key_bits=key_bits, key_name=key_name)
        data = unwrap(self._send("POST", self._path("keys/generate/{kind}", kind=kind), body))
        return Record(hide(data, "private_key", label="private key"), kind="pki_key")

    def delete_key(self, ref: str) -> None:
        """Delete a key no issuer uses (an unknown key is no error). ``DELETE /pki/key/:ref``."""
        self._send("DELETE", self._path("key/{ref}", ref=ref))

    def delete_issuer(self, ref: str) -> list[str]:
        """Delete an issuer; its certificates and key stay. ``DELETE /pki/issuer/:ref``.

        Returns the server's warnings (for example that it was the default issuer).
        """
        return warnings_of(self._send("DELETE", self._path("issuer/{ref}", ref=ref)))
