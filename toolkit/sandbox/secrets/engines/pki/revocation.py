"""Revocation and CRLs (spec 4.10): revoke by serial, ``config/crl``, the CRLs, ``config/urls``.

Each issuer with a key has a complete CRL and a delta CRL, real X.509 signed
by it (:func:`~.x509.build_crl`), numbered from one counter for the mount.
The rebuild rules are the real server's:

- ``auto_rebuild`` off: every revocation rebuilds the CRLs at once;
- ``auto_rebuild`` on: a revocation waits for ``crl/rotate``, or for the CRL
  to come within ``auto_rebuild_grace_period`` of its next update; with
  ``enable_delta`` the delta CRL takes the waiting revocations every
  ``delta_rebuild_interval`` (or on ``crl/rotate-delta``).

The real server runs those timers in the background; the sandbox applies
them when a CRL is read, on its own clock, which a reader cannot tell apart.
``disable`` builds CRLs that list nothing.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from cryptography import x509

from ...errors import InvalidRequest, SecretsError
from . import x509 as certs
from .issuance import normal_serial
from .requests import CRLConfig, RevokedEntry, URLConfig, short_duration
from .state import IssuedCert, Issuer, PKIState, StoredCRL, rfc3339

__all__ = ["URL_FIELDS", "Revocation"]

URL_FIELDS = (
    "issuing_certificates",
    "crl_distribution_points",
    "delta_crl_distribution_points",
    "ocsp_servers",
)


class Revocation(PKIState):
    """Revoking certificates, the CRLs and their configuration, and ``config/urls``."""

    # -- revoking ----------------------------------------------------------------------
    def revoke(
        self, serial: str | None = None, certificate: x509.Certificate | None = None
    ) -> IssuedCert:
        """``POST revoke``: by ``serial`` (colons or hyphens) or by the ``certificate`` itself.

        Revoking again answers the first revocation's time. An issuer's own
        certificate cannot be revoked; a certificate this mount did not keep
        (``no_store``) can be, given whole, if one of its issuers signed it.
        """
        if serial and certificate is not None:
            raise InvalidRequest(
                "Must provide either the certificate or the serial to revoke; not both."
            )
        if not serial and certificate is None:
            raise InvalidRequest("The serial number or certificate to revoke must be provided.")
        kept = self._to_revoke(serial, certificate)
        for issuer in self.issuers.values():
            if issuer.certificate == kept.certificate and certs.is_self_signed(issuer.cert):
                raise InvalidRequest(
                    f"adding issuer (id: {issuer.id}) to its own CRL is not allowed"
                )
        if not kept.revocation_time:
            now = self.now()
            if now > kept.cert.not_valid_after_utc and not (
                self.crl_config.allow_expired_cert_revocation
            ):
                raise InvalidRequest(
                    f"certificate with serial {kept.serial} has expired; set "
                    "allow_expired_cert_revocation on config/crl to revoke it",
                )
            kept.revocation_time = int(now.timestamp())
            kept.revocation_time_rfc3339 = rfc3339(now)
            self._on_revoked()
        return kept

    def _to_revoke(self, serial: str | None, certificate: x509.Certificate | None) -> IssuedCert:
        if certificate is None:
            found = self.certs.get(normal_serial(serial or ""))
            if found is None:
                raise InvalidRequest(f"certificate with serial {serial} not found.")
            return found
        pem = certs.cert_pem(certificate)
        key = certs.format_serial(certificate.serial_number)
        found = self.certs.get(key)
        if found is not None:
            if found.certificate != pem:
                raise InvalidRequest(
                    "certificate: does not match the certificate stored under its serial"
                )
            return found
        signer = next(
            (i for i in self.issuers.values() if certs.issued_by(certificate, i.cert)), None
        )
        if signer is None:
            raise InvalidRequest("certificate: not issued by any issuer of this mount")
        self.certs[key] = IssuedCert(key, pem, signer.id)
        return self.certs[key]

    def revoked_serials(self) -> list[str]:
        """``LIST certs/revoked``: the revoked certificates' serials, colon form."""
        return [c.serial for c in self.certs.values() if c.revocation_time]

    def _on_issuer_added(self, issuer: Issuer) -> None:
        if issuer.key_id in self.keys:
            self._build(issuer)

    def _on_revoked(self) -> None:
        self.unpublished_revocations += 1
        if not self.crl_config.auto_rebuild:
            self.rotate()

    # -- configuration ----------------------------------------------------------------------
    def set_crl_config(self, config: CRLConfig) -> CRLConfig:
        """``POST config/crl``: the whole configuration (the HTTP side merges a partial write)."""
        if config.expiry <= 0:
            raise InvalidRequest("expiry: must be a positive duration")
        if config.enable_delta and not config.auto_rebuild:
            raise InvalidRequest(
                "Delta CRLs cannot be enabled when auto rebuilding is disabled as the complete "
                "CRL is always regenerated!",
            )
        if config.auto_rebuild and config.auto_rebuild_grace_period >= config.expiry:
            raise InvalidRequest(
                f"CRL auto-rebuilding grace period ({short_duration(config.auto_rebuild_grace_period)}) "
                f"must be strictly shorter than CRL expiry ({short_duration(config.expiry)}) value "
                "when auto-rebuilding of CRLs is enabled",
            )
        if config.enable_delta and config.delta_rebuild_interval >= config.expiry:
            raise InvalidRequest(
                f"CRL delta rebuild window ({short_duration(config.delta_rebuild_interval)}) "
                f"must be strictly shorter than CRL expiry ({short_duration(config.expiry)})",
            )
        self.crl_config = config
        return config

    def set_urls(self, urls: URLConfig) -> URLConfig:
        """``POST config/urls``: every location must be a URL (templates only with ``enable_templating``)."""
        for name in URL_FIELDS:
            for value in getattr(urls, name):
                if not _is_url(value, templated=urls.enable_templating):
                    raise InvalidRequest(
                        "invalid URL found in Authority Information Access (AIA) parameter "
                        f"{name}: {value}",
                    )
        self.urls = urls
        return urls

    # -- the CRLs -------------------------------------------------------------------------
    def crl_pem(self, ref: str | None = None, *, delta: bool = False) -> str:
        """The issuer's current CRL (or delta CRL) as PEM; ``""`` when there is no such issuer.

        ``ref`` None: the default issuer. Pending rebuilds are applied first.
        """
        issuer = self.find_issuer(ref or "default") if ref is not None else self._default()
        if issuer is None or issuer.key_id not in self.keys:
            return ""
        self._catch_up()
        store = self.delta_crls if delta else self.crls
        if issuer.id not in store:
            self._build(issuer)
        return store[issuer.id].pem

    def _default(self) -> Issuer | None:
        return self.issuers.get(self.default_issuer)

    def rotate(self) -> list[str]:
        """``GET crl/rotate``: rebuild every issuer's complete and delta CRL now."""
        for issuer in self.issuers.values():
            if issuer.key_id in self.keys:
                self._build(issuer)
        self.unpublished_revocations = 0
        return []

    def rotate_delta(self) -> list[str]:
        """``GET crl/rotate-delta``: rebuild the delta CRLs now; a no-op (warned) unless enabled."""
        if not self.crl_config.enable_delta:
            return ["requested rebuild of delta CRL when delta CRL is not enabled; this is a no-op"]
        for issuer in self.issuers.values():
            if issuer.key_id in self.keys:
                self._build(issuer, delta_only=True)
        return []

    def _catch_up(self) -> None:
        """Apply the auto-rebuild timers that have come due by the sandbox's clock."""
        config = self.crl_config
        if not config.auto_rebuild:
            return
        now = int(self.now().timestamp())
        due = [
            c for c in self.crls.values() if now >= c.next_update - config.auto_rebuild_grace_period
        ]
        if due:
            self.rotate()
            return
        if config.enable_delta and self.unpublished_revocations:
            deltas = list(self.delta_crls.values())
            if deltas and now >= min(d.this_update for d in deltas) + config.delta_rebuild_interval:
                self.rotate_delta()

    def _revoked_by(self, issuer: Issuer) -> list[IssuedCert]:
        if self.crl_config.disable:
            return []
        return [c for c in self.certs.values() if c.revocation_time and c.issuer_id == issuer.id]

    def _build(self, issuer: Issuer, *, delta_only: bool = False) -> None:
        key = certs.load_key(self.keys[issuer.key_id].pem)
        now = self.now().replace(microsecond=0)
        next_update = now + timedelta(seconds=self.crl_config.expiry)
        revoked = self._revoked_by(issuer)
        complete = self.crls.get(issuer.id)
        if not delta_only or complete is None:
            self.crl_number += 1
            pem = certs.build_crl(
                issuer.cert,
                key,
                [(c.cert.serial_number, _when(c)) for c in revoked],
                number=self.crl_number,
                this_update=now,
                next_update=next_update,
            )
            complete = StoredCRL(
                pem,
                self.crl_number,
                int(now.timestamp()),
                int(next_update.timestamp()),
                [c.serial for c in revoked],
            )
            self.crls[issuer.id] = complete
        listed = set(complete.serials)
        self.crl_number += 1
        pem = certs.build_crl(
            issuer.cert,
            key,
            [(c.cert.serial_number, _when(c)) for c in revoked if c.serial not in listed],
            number=self.crl_number,
            this_update=now,
            next_update=next_update,
            delta_of=complete.number,
        )
        self.delta_crls[issuer.id] = StoredCRL(
            pem, self.crl_number, int(now.timestamp()), int(next_update.timestamp())
        )

    def sign_revocation_list(
        self,
        ref: str,
        *,
        crl_number: int = 0,
        delta_crl_base_number: int = -1,
        next_update: int = 72 * 3600,
        revoked: list[RevokedEntry] | None = None,
    ) -> str:
        """``POST issuer/:ref/sign-revocation-list``: a CRL (PEM) of the caller's entries,
        signed by the issuer.

        Nothing is stored: the mount's own CRLs are not changed.
        """
        try:
            issuer = self.resolve(ref)
        except SecretsError as exc:
            raise InvalidRequest(f"failed to resolve issuer issuer_ref: {exc}") from None
        stored = self.keys.get(issuer.key_id)
        if stored is None or "crl-signing" not in issuer.usage:
            raise InvalidRequest(f"issuer {issuer.id} cannot sign revocation lists")
        now = self.now().replace(microsecond=0)
        pem = certs.build_crl(
            issuer.cert,
            certs.load_key(stored.pem),
            [(e.serial, e.revoked_at) for e in revoked or []],
            number=crl_number,
            this_update=now,
            next_update=now + timedelta(seconds=next_update),
            delta_of=delta_crl_base_number if delta_crl_base_number >= 0 else None,
        )
        return pem


def _when(kept: IssuedCert) -> datetime:
    return datetime.fromtimestamp(kept.revocation_time, UTC)


def _is_url(value: str, *, templated: bool) -> bool:
    if templated and "{{" in value:
        value = value.replace("{{issuer_id}}", "x").replace("{{cluster_path}}", "http://x")
        value = value.replace("{{cluster_aia_path}}", "http://x")
    parts = urlsplit(value)
    return bool(parts.scheme) and bool(parts.netloc) and " " not in value
