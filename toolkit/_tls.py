"""TLS options of a client connection: trusted CAs, a client certificate, and the
name the server's certificate is checked against.

One place builds the :class:`ssl.SSLContext` that the HTTP layer hands to its
connections, whatever library makes them: the context itself carries every
option, including ``VAULT_TLS_SERVER_NAME`` (a context subclass that sends that
name in SNI and checks the certificate against it, for a server reached by an
address its certificate does not name).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

from ._errors import ConfigurationError

__all__ = ["ClientTLS"]


class _NamedServerContext(ssl.SSLContext):
    """A client context that always speaks to (and checks) one server name."""

    server_name: str = ""

    def wrap_socket(self, *args: Any, **kwargs: Any) -> ssl.SSLSocket:  # type: ignore[override]
        kwargs["server_hostname"] = self.server_name
        return super().wrap_socket(*args, **kwargs)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:  # type: ignore[override]
        kwargs["server_hostname"] = self.server_name
        return super().wrap_bio(*args, **kwargs)


@dataclass(frozen=True)
class ClientTLS:
    """How a client connection checks the server and shows itself: ``verify`` the
    server's certificate against ``ca_file`` (else the system's CAs) and the name
    ``server_name`` (else the address's host); present ``client_cert`` (and
    ``client_key``) when the server asks for a certificate."""

    verify: bool = True
    ca_file: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    server_name: str | None = None

    def context(self) -> ssl.SSLContext | bool:
        """What aiohttp takes as ``ssl=``: False for no verification and no client
        certificate, else a client context with these options; a clear
        ConfigurationError for a file that cannot be read (the message names the
        file, never its content)."""
        if not self.verify and not (self.client_cert or self.client_key):
            return False
        return self._context()

    def _context(self) -> ssl.SSLContext:
        context: ssl.SSLContext
        if self.server_name:
            context = _NamedServerContext(ssl.PROTOCOL_TLS_CLIENT)
            context.server_name = self.server_name
        else:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.verify:
            context.verify_mode = ssl.CERT_REQUIRED
            context.check_hostname = True
            try:
                if self.ca_file:
                    context.load_verify_locations(cafile=self.ca_file)
                else:
                    context.load_default_certs(ssl.Purpose.SERVER_AUTH)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigurationError(f"cannot load CA file {self.ca_file!r}: {exc}") from None
        else:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.client_cert or self.client_key:
            if not self.client_cert:
                raise ConfigurationError(
                    "a client key was given without a client certificate (VAULT_CLIENT_CERT)"
                )
            try:
                context.load_cert_chain(self.client_cert, self.client_key)
            except (OSError, ssl.SSLError) as exc:
                # ssl's message says what is wrong with the files, never what they hold.
                raise ConfigurationError(
                    f"cannot load client certificate {self.client_cert!r} "
                    f"/ key {self.client_key!r}: {exc}"
                ) from None
        return context
