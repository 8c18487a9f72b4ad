"""The certificate engine's calls, one class made of its parts."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path

import pandas as pd

from ..._coverage import Coverage, carry
from ..._frames import build_frame
from ..checkpoint import DEFAULT_MAX_ROWS
from ._common import (
    ISSUED_CERTIFICATES,
)
from .certificate import IssuedCertificate
from .estate import PAGE, CertificateEstate, certificate_estate
from .findings import certificate_findings
from .issuance import IssuanceCalls
from .issuers import IssuerCalls
from .revocation import RevocationCalls
from .roles import RoleCalls
from .tidy import TidyCalls


class PKI(RoleCalls, IssuerCalls, IssuanceCalls, RevocationCalls, TidyCalls):
    """The certificate engine (spec 4.10); ``client.pki.at(path)`` for another mount."""

    def findings(self, *, expiring_within: timedelta = timedelta(days=30)) -> pd.DataFrame:
        """What needs an operator's eye on this mount, as a findings frame
        (:func:`certificate_findings`): roles that issue straight from a root, issuers
        and certificates that expire within ``expiring_within`` (by the server's clock),
        and expired certificates still stored. Reads the issuers, the roles and every
        stored certificate (:meth:`certificates_frame`)."""
        issuers, roles, certificates = (
            self.issuers_frame(),
            self.roles_frame(),
            self.certificates_frame(),
        )
        found = certificate_findings(
            issuers,
            roles,
            certificates,
            mount=self.mount,
            now=self._http.server_now(),
            expiring_within=expiring_within,
        )
        return carry(found, issuers, roles, certificates, view="pki.findings")

    # -- the estate, at scale (estate.py) ---------------------------------------------------
    def certificate_estate(
        self,
        mounts: Iterable[str] | None = None,
        *,
        page: int = PAGE,
        checkpoint_dir: str | Path | None = None,
        max_rows: int = DEFAULT_MAX_ROWS,
    ) -> CertificateEstate:
        """Every certificate of every PKI mount (or of ``mounts``), listed a page at a time
        and parsed, with issuers, roles and CRL sizes: :func:`~.estate.certificate_estate`.

        Its views: ``.frame()``, ``.calendar()``, ``.crl_sizes``, ``.tidy()``,
        ``.roles_from_root()``, ``.outliving_issuer()``. ``checkpoint_dir`` makes an
        interrupted run resume.
        """
        return certificate_estate(
            self._http, mounts, page=page, checkpoint_dir=checkpoint_dir, max_rows=max_rows
        )

    # -- the session's certificates -----------------------------------------------------
    @property
    def issued(self) -> list[IssuedCertificate]:
        """The certificates this client issued or signed in the session, oldest first."""
        return list(self._issued)

    def session_certificates(self) -> pd.DataFrame:
        """The session's certificates (:data:`ISSUED_CERTIFICATES`): subject, SANs, serial, issuer, not after."""
        # The session's own list: nothing is read from the server, so it is whole.
        cov = Coverage("pki.session_certificates", asked=["this session"])
        cov.note_read(len(self._issued))
        return cov.attach(build_frame([c.record() for c in self._issued], ISSUED_CERTIFICATES))
