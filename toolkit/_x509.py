"""What both sides read off an X.509 certificate (the PKI client's views, the sandbox's engine)."""

from __future__ import annotations

from cryptography import x509

__all__ = ["format_serial", "path_length", "serial_storage_key"]


def path_length(cert: x509.Certificate) -> int | None:
    """The certificate's basic-constraints path length; None when unlimited or not stated."""
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.path_length
    except x509.ExtensionNotFound:
        return None


def format_serial(serial: int) -> str:
    """``1f:0a:...``: a serial number as both APIs write it, its big-endian bytes in
    colon-separated lowercase hex."""
    raw = serial.to_bytes(max(1, (serial.bit_length() + 7) // 8), "big")
    return ":".join(f"{b:02x}" for b in raw)


def serial_storage_key(serial: str) -> str:
    """A listed serial (``1d:46:fe``) as the server stores it and pages ``LIST certs``
    by it (``1d-46-fe``): ``after=`` is compared with this form, not the listed one."""
    return serial.replace(":", "-")
