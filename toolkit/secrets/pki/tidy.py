"""Tidy (spec 4.10): start it, and read its status."""

from __future__ import annotations

from ..._records import Record
from ._area import PKIBase
from ._common import (
    _body,
)


class TidyCalls(PKIBase):
    """Tidy (spec 4.10)."""

    # -- tidy ------------------------------------------------------------------------------
    def tidy(
        self,
        *,
        tidy_cert_store: bool = False,
        tidy_revoked_certs: bool = False,
        tidy_expired_issuers: bool = False,
        safety_buffer: str | int | None = None,
    ) -> Record:
        """Start a tidy of the mount. ``POST /pki/tidy`` (answered 202); ``warnings`` say what it did.

        Follow it with :meth:`tidy_status`.
        """
        body = _body(
            tidy_cert_store=tidy_cert_store,
            tidy_revoked_certs=tidy_revoked_certs,
            tidy_expired_issuers=tidy_expired_issuers,
            safety_buffer=safety_buffer,
        )
        return self._result(self._send("POST", self._path("tidy"), body), "pki_tidy")

    def tidy_status(self) -> Record:
        """The last tidy: ``state``, the counts deleted, when. ``GET /pki/tidy-status``."""
        return self._record(self._read(self._path("tidy-status")), "pki_tidy_status")

    def tidy_cancel(self) -> Record:
        """Stop a running tidy. ``POST /pki/tidy-cancel``; ``warnings`` say when none runs."""
        return self._result(self._send("POST", self._path("tidy-cancel")), "pki_tidy")
