"""The certificate engine's calls, one class made of its parts."""

from __future__ import annotations

from datetime import timedelta

import pandas as pd

from ..._frames import build_frame
from ._common import (
    ISSUED_CERTIFICATES,
)
from .certificate import IssuedCertificate
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
        return certificate_findings(
            self.issuers_frame(),
            self.roles_frame(),
            self.certificates_frame(),
            mount=self.mount,
            now=self._http.server_now(),
            expiring_within=expiring_within,
        )

    # -- the session's certificates -----------------------------------------------------
    @property
    def issued(self) -> list[IssuedCertificate]:
        """The certificates this client issued or signed in the session, oldest first."""
        return list(self._issued)

    def session_certificates(self) -> pd.DataFrame:
        """The session's certificates (:data:`ISSUED_CERTIFICATES`): subject, SANs, serial, issuer, not after."""
        return build_frame([c.record() for c in self._issued], ISSUED_CERTIFICATES)
