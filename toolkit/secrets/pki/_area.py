"""The base of the certificate engine's calls: the mount, and the session's certificates."""

from __future__ import annotations

from typing import Any, Self

from cryptography import x509

from ..._http import HTTPLayer
from ..._records import Record
from .._base import EngineArea, unwrap, warnings_of
from ._common import _load_certificate
from .certificate import IssuedCertificate


class PKIBase(EngineArea):
    """The certificate engine's mount and the session's certificates, which every part's calls share."""

    def __init__(
        self,
        http: HTTPLayer,
        mount: str,
        issued: list[IssuedCertificate] | None = None,
    ) -> None:
        super().__init__(http, mount)
        # The session's certificates, shared by every mount reached through .at().
        self._issued: list[IssuedCertificate] = issued if issued is not None else []

    def at(self, mount: str) -> Self:
        """The same calls against the engine mounted at ``mount`` (same session list)."""
        return type(self)(self._http, mount, self._issued)

    def _issuer_certificate(self, ref: str) -> x509.Certificate:
        """``GET /pki/issuer/:ref/json``: the issuer's certificate, to check what it signed."""
        return _load_certificate(
            str(self._read(self._path("issuer/{ref}/json", ref=ref))["certificate"])
        )

    def _result(self, payload: Any, kind: str) -> Record:
        record = Record(unwrap(payload), kind=kind)
        record.warnings = warnings_of(payload)  # type: ignore[attr-defined]
        return record
