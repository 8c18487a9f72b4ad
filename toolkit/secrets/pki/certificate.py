"""What issue and sign return: :class:`IssuedCertificate`."""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

from ..._errors import InputError
from ..._masking import Sensitive
from ..._x509 import format_serial
from ._common import (
    _load_certificate,
    _pem,
    certificate_names,
)


class IssuedCertificate:
    """A certificate the engine issued or signed, parsed; its private key kept hidden.

    ``certificate``, ``issuing_ca`` and ``ca_chain`` are PEM whatever format
    was asked; ``private_key`` is :class:`Sensitive` (``None`` for a signed
    CSR), and so is ``bundle`` for the ``pem_bundle`` format, which holds the key.
    """

    def __init__(
        self,
        data: Mapping[str, Any],
        *,
        mount: str,
        role: str = "",
        operation: str = "issue",
        format: str = "pem",
        warnings: Sequence[str] = (),
        lease: Mapping[str, Any] | None = None,
    ) -> None:
        self.cert = _load_certificate(str(data.get("certificate") or ""))
        self.certificate = _pem(self.cert)
        issuing = data.get("issuing_ca") or ""
        self.issuing_ca = _pem(_load_certificate(str(issuing))) if issuing else ""
        # The chain above the certificate (sign-intermediate answers it with the certificate first).
        chain = [_pem(_load_certificate(str(c))) for c in data.get("ca_chain") or []]
        self.ca_chain = [c for c in chain if c != self.certificate]
        self.serial_number = str(
            data.get("serial_number") or format_serial(self.cert.serial_number)
        )
        key = data.get("private_key")
        self.private_key: Sensitive | None = (
            key if isinstance(key, Sensitive) else Sensitive(key, "private key") if key else None
        )
        self.private_key_type = str(data.get("private_key_type") or "")
        self.bundle: Sensitive | None = None
        if format == "pem_bundle" and self.private_key is not None:
            self.bundle = Sensitive(str(data.get("certificate")), "certificate bundle")
        self.format = format
        self.mount = mount
        self.role = role
        self.operation = operation
        self.warnings = list(warnings)
        self.lease_id = str((lease or {}).get("lease_id") or "")

    # -- what the certificate says ---------------------------------------------------------
    @property
    def subject(self) -> str:
        return self.cert.subject.rfc4514_string()

    @property
    def common_name(self) -> str:
        values = self.cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
        return str(values[0].value) if values else ""

    @property
    def sans(self) -> list[str]:
        return certificate_names(self.cert)

    @property
    def issuer(self) -> str:
        return self.cert.issuer.rfc4514_string()

    @property
    def not_before(self) -> datetime:
        return self.cert.not_valid_before_utc

    @property
    def not_after(self) -> datetime:
        return self.cert.not_valid_after_utc

    def verify_chain(self) -> bool:
        """Check that the certificate was signed by its issuing CA, and each CA by the next.

        Signatures are checked with ``cryptography`` along ``ca_chain`` as the
        server answered it; a self-signed root at its end is checked against
        itself. Raises :class:`InputError` naming the link that fails; True otherwise.
        """
        above = self.ca_chain or ([self.issuing_ca] if self.issuing_ca else [])
        certificates = [self.cert, *(_load_certificate(pem) for pem in above)]
        if len(certificates) < 2:
            raise InputError("no issuing CA to verify the certificate against")
        last = certificates[-1]
        pairs = list(zip(certificates, certificates[1:], strict=False))
        if last.issuer == last.subject:
            pairs.append((last, last))
        for child, parent in pairs:
            try:
                child.verify_directly_issued_by(parent)
            except (ValueError, TypeError, InvalidSignature) as exc:
                raise InputError(
                    f"{child.subject.rfc4514_string()} is not signed by "
                    f"{parent.subject.rfc4514_string()}: {exc or type(exc).__name__}"
                ) from None
        return True

    # -- the private key, only when asked for -------------------------------------------
    def private_key_pem(self) -> str:
        """The private key as PEM text (base64 DER answers are turned into PEM).

        Hand it on, never display it.
        """
        if self.private_key is None:
            raise InputError(
                "this certificate came with no private key (a signed CSR keeps its own)"
            )
        text = self.private_key.reveal()
        if "-----BEGIN" in text:
            return text.strip() + "\n"
        key = serialization.load_der_private_key(base64.b64decode(text), password=None)
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()

    def save_key(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the private key as PEM to ``path``, readable by its owner only (0600).

        Refuses an existing file unless ``overwrite``. Returns the path.
        """
        target = Path(path)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if overwrite else os.O_EXCL)
        pem = self.private_key_pem()
        try:
            handle = os.open(target, flags, 0o600)
        except FileExistsError:
            raise InputError(f"{target} exists; pass overwrite=True to replace it") from None
        with os.fdopen(handle, "w") as out:
            os.fchmod(out.fileno(), 0o600)
            out.write(pem)
        return target

    def save_certificate(self, path: str | os.PathLike[str], *, chain: bool = True) -> Path:
        """Write the certificate (and its CA chain unless ``chain`` is False) as PEM."""
        target = Path(path)
        parts = [self.certificate, *(self.ca_chain if chain else [])]
        target.write_text("\n".join(parts) + "\n")
        return target

    def record(self) -> dict[str, Any]:
        """One row of :data:`ISSUED_CERTIFICATES`."""
        return {
            "serial_number": self.serial_number,
            "subject": self.subject,
            "sans": ", ".join(self.sans),
            "issuer": self.issuer,
            "not_before": self.not_before,
            "not_after": self.not_after,
            "mount": self.mount,
            "role": self.role,
            "operation": self.operation,
        }

    def __repr__(self) -> str:
        key = ", private_key=<hidden private key>" if self.private_key is not None else ""
        return (
            f"IssuedCertificate(subject={self.subject!r}, sans={self.sans!r}, "
            f"issuer={self.issuer!r}, not_after={self.not_after.isoformat()!r}{key})"
        )

    def _repr_html_(self) -> str:
        rows = {
            "subject": self.subject,
            "sans": ", ".join(self.sans),
            "issuer": self.issuer,
            "not after": self.not_after.isoformat(),
            "private key": "<hidden private key>" if self.private_key is not None else "none",
        }
        body = "".join(
            f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v in rows.items()
        )
        return f"<table><caption>issued certificate</caption>{body}</table>"
