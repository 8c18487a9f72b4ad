"""The certificate engine (spec 4.10, part 2 "Certificate engine role", multi-issuer model).

:class:`PKIEngine` is one mount's engine: the state of :class:`~.state.PKIState`
with each concern's calls, each in its module:

- :class:`~.issuers.IssuerAdmin`: issuers, keys, the default issuer, roles;
- :class:`~.authority.Authority`: roots, intermediates, sign-intermediate,
  sign-self-issued, imports;
- :class:`~.issuance.Issuance`: issue, sign, sign-verbatim, the kept certificates;
- :class:`~.revocation.Revocation`: revoke, CRLs, ``config/crl``, ``config/urls``;
- :class:`~.tidy.Tidy`: tidy and its status.

Certificates and CRLs are real X.509 made with ``cryptography`` (see
:mod:`.x509`), timed on the sandbox clock. Every method takes typed
arguments (:mod:`.requests`); the HTTP side reads the wire into them.
"""

from __future__ import annotations

from .authority import Authority
from .issuance import Issuance
from .revocation import Revocation
from .state import IssuedCert, Issuer, StoredKey
from .tidy import Tidy

__all__ = ["PKIEngine", "IssuedCert", "Issuer", "StoredKey"]


class PKIEngine(Authority, Issuance, Revocation, Tidy):
    """One mount's state of the certificate engine (spec 4.10)."""
