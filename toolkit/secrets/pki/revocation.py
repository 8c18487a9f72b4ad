"""Revocation (spec 4.10): revoke, the CRL and its entries, CRL and URL configuration."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd
from cryptography import x509

from ..._errors import InputError
from ..._frames import build_frame
from ..._records import Record
from ..._time import from_epoch
from ..._x509 import format_serial
from .._base import unwrap
from ._area import PKIBase
from ._common import (
    CRL_ENTRIES,
    _body,
    _crl_record,
)


class RevocationCalls(PKIBase):
    """Revocation (spec 4.10)."""

    # -- revocation ------------------------------------------------------------------------
    def revoke(self, serial: str) -> Record:
        """Revoke a certificate by serial (colons or hyphens). ``POST /pki/revoke``.

        Returns ``revocation_time`` (a UTC datetime), ``revocation_time_rfc3339``
        and ``state``. Revoking again answers the first revocation's time.
        """
        if not serial or not serial.strip():
            raise InputError("serial: give the serial number of the certificate to revoke")
        data = unwrap(self._send("POST", self._path("revoke"), {"serial_number": serial.strip()}))
        if data.get("revocation_time"):
            data["revocation_time"] = from_epoch(data["revocation_time"])
        return self._record(data, "pki_revocation")

    def crl(self, issuer_ref: str = "default", *, delta: bool = False) -> Record:
        """The issuer's CRL, parsed. ``GET /pki/issuer/:ref/crl`` (``delta``: ``.../crl/delta``).

        Returns ``issuer``, ``crl_number``, ``delta_of`` (the complete CRL's
        number, for a delta CRL), ``this_update`` and ``next_update`` (UTC
        datetimes), ``revoked`` (the serials, colon form) and ``pem``. The
        signature is checked against the issuer's certificate.
        """
        template = "issuer/{issuer_ref}/crl" + ("/delta" if delta else "")
        pem = str(self._read(self._path(template, issuer_ref=issuer_ref)).get("crl") or "")
        return _crl_record(pem, self._issuer_certificate(issuer_ref))

    def crl_entries(self, issuer_ref: str = "default", *, delta: bool = False) -> pd.DataFrame:
        """The CRL's revoked certificates (:data:`CRL_ENTRIES`): serial and revocation time."""
        crl = x509.load_pem_x509_crl(self.crl(issuer_ref, delta=delta)["pem"].encode())
        rows = [
            {
                "serial_number": format_serial(r.serial_number),
                "revocation_time": r.revocation_date_utc,
            }
            for r in crl
        ]
        # One read, whole or raised: the CRL as the issuer signed it.
        cov = self._coverage("crl_entries")
        cov.note_read(len(rows))
        return cov.attach(build_frame(rows, CRL_ENTRIES))

    def rotate_crl(self) -> Record:
        """Rebuild every issuer's CRL now. ``GET /pki/crl/rotate``; ``success`` and ``warnings``."""
        return self._result(self._http.json("GET", self._path("crl/rotate")), "pki_crl_rotate")

    def rotate_delta_crl(self) -> Record:
        """Rebuild the delta CRLs now. ``GET /pki/crl/rotate-delta`` (a warned no-op unless enabled)."""
        payload = self._http.json("GET", self._path("crl/rotate-delta"))
        return self._result(payload, "pki_crl_rotate")

    def crl_config(self) -> Record:
        """``expiry``, ``disable``, ``auto_rebuild``, ``enable_delta``, ... ``GET /pki/config/crl``."""
        return self._record(self._read(self._path("config/crl")), "pki_crl_config")

    def update_crl_config(
        self,
        *,
        expiry: str | int | None = None,
        disable: bool | None = None,
        auto_rebuild: bool | None = None,
        auto_rebuild_grace_period: str | int | None = None,
        enable_delta: bool | None = None,
        delta_rebuild_interval: str | int | None = None,
        allow_expired_cert_revocation: bool | None = None,
    ) -> Record:
        """Change the CRL configuration (what is not given stays). ``POST /pki/config/crl``."""
        body = _body(
            expiry=expiry,
            disable=disable,
            auto_rebuild=auto_rebuild,
            auto_rebuild_grace_period=auto_rebuild_grace_period,
            enable_delta=enable_delta,
            delta_rebuild_interval=delta_rebuild_interval,
            allow_expired_cert_revocation=allow_expired_cert_revocation,
        )
        data = unwrap(self._send("POST", self._path("config/crl"), body))
        return self._record(data, "pki_crl_config")

    def sign_revocation_list(
        self,
        issuer_ref: str,
        revoked: Mapping[str, datetime] | None = None,
        *,
        crl_number: int = 0,
        next_update: str | int | None = None,
    ) -> Record:
        """A CRL of your own entries, signed by the issuer. ``POST /pki/issuer/:ref/sign-revocation-list``.

        ``revoked`` maps serial numbers to their (timezone-aware) revocation
        times. Nothing is stored on the server. Returns the parsed CRL as :meth:`crl` does.
        """
        entries = []
        for serial, when in (revoked or {}).items():
            if when.tzinfo is None:
                raise InputError(f"revoked[{serial!r}]: the time must be timezone-aware")
            entries.append({"serial_number": serial, "revocation_time": int(when.timestamp())})
        body = _body(crl_number=crl_number, next_update=next_update)
        body["revoked_certs"] = entries
        path = self._path("issuer/{issuer_ref}/sign-revocation-list", issuer_ref=issuer_ref)
        pem = str(unwrap(self._send("POST", path, body)).get("crl") or "")
        return _crl_record(pem, self._issuer_certificate(issuer_ref))

    def urls(self) -> Record:
        """Where issued certificates point (AIA, CRL, OCSP). ``GET /pki/config/urls``."""
        return self._record(self._read(self._path("config/urls")), "pki_urls")

    def update_urls(
        self,
        *,
        issuing_certificates: Sequence[str] | None = None,
        crl_distribution_points: Sequence[str] | None = None,
        delta_crl_distribution_points: Sequence[str] | None = None,
        ocsp_servers: Sequence[str] | None = None,
        enable_templating: bool | None = None,
    ) -> Record:
        """Set the URLs certificates issued from now on carry. ``POST /pki/config/urls``."""
        body: dict[str, Any] = {
            name: list(value)
            for name, value in (
                ("issuing_certificates", issuing_certificates),
                ("crl_distribution_points", crl_distribution_points),
                ("delta_crl_distribution_points", delta_crl_distribution_points),
                ("ocsp_servers", ocsp_servers),
            )
            if value is not None
        }
        if enable_templating is not None:
            body["enable_templating"] = enable_templating
        return self._record(unwrap(self._send("POST", self._path("config/urls"), body)), "pki_urls")
