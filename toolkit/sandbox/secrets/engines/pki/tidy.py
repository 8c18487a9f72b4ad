"""Tidying a mount (spec 4.10): dropping certificates long expired, and the status of the last run.

``tidy_cert_store`` removes kept certificates that expired more than
``safety_buffer`` ago; ``tidy_revoked_certs`` removes revoked ones past the
same buffer (and so takes them off the CRLs, which are rebuilt);
``tidy_expired_issuers`` removes issuers expired more than
``issuer_safety_buffer`` ago. The real server tidies in the background and
answers 202 at once; the sandbox's stores are small, so a tidy has finished
by the time it answers, and ``tidy-cancel`` finds none running, as the real
server says when it is asked after one ended.
"""

from __future__ import annotations

from datetime import timedelta

from .requests import TidyRequest
from .state import PKIState, TidyRun

__all__ = ["Tidy"]

STARTED = (
    "Tidy operation successfully started. Any information from the operation will be printed "
    "to OpenBao's server logs."
)
NOTHING_ASKED = (
    "Manual tidy requested but no tidy operations were set. Enable at least one tidy operation "
    "to be run (tidy_cert_store / tidy_revoked_certs / tidy_invalid_certs / "
    "tidy_revoked_cert_issuer_associations / tidy_expired_issuers / tidy_move_legacy_ca_bundle "
    "/ tidy_acme)."
)
NONE_RUNNING = "Tidy operation cannot be cancelled as none is currently running."


class Tidy(PKIState):
    """``tidy``, ``tidy-status`` and ``tidy-cancel``."""

    def tidy(self, request: TidyRequest) -> list[str]:
        """``POST tidy``: run what ``request`` asks, to the end; the warnings the answer carries."""
        if not request.anything:
            return [NOTHING_ASKED]
        started = self.now()
        deleted_certs = deleted_revoked = 0
        issuer_certs = {i.certificate for i in self.issuers.values()}
        for serial, kept in list(self.certs.items()):
            if kept.certificate in issuer_certs:
                continue  # an issuer's own certificate goes with the issuer only
            expired_for = started - kept.cert.not_valid_after_utc
            if expired_for <= timedelta(seconds=request.safety_buffer):
                continue
            if kept.revocation_time and request.tidy_revoked_certs:
                del self.certs[serial]
                deleted_revoked += 1
            elif not kept.revocation_time and request.tidy_cert_store:
                del self.certs[serial]
                deleted_certs += 1
        if request.tidy_expired_issuers:
            buffer = timedelta(seconds=request.issuer_safety_buffer)
            for issuer in list(self.issuers.values()):
                if started - issuer.cert.not_valid_after_utc > buffer:
                    del self.issuers[issuer.id]
                    if issuer.id == self.default_issuer:
                        self.default_issuer = ""
        if deleted_revoked:
            self._drop_built_crls()
        self.last_tidy = TidyRun(request, started, self.now(), deleted_certs, deleted_revoked)
        return [STARTED]

    def _drop_built_crls(self) -> None:
        """After tidy took revoked certificates off: the CRLs are built again when next read."""
        self.crls.clear()
        self.delta_crls.clear()

    def tidy_status(self) -> TidyRun | None:
        """``GET tidy-status``: the last run, or None before any."""
        return self.last_tidy

    def tidy_cancel(self) -> list[str]:
        """``POST tidy-cancel``: no tidy is ever running here (each ends before its answer)."""
        return [NONE_RUNNING]
