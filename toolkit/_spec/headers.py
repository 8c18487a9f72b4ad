"""The secrets API's headers (spec 001, "Authentication" and "Namespaces").

The token arrives in ``X-Service-Token`` (the spec's name) or ``X-Vault-Token`` (what
OpenBao and Vault read); the namespace in ``X-Vault-Namespace`` or
``X-Service-Namespace``. The client sends the token in both and the namespace in the
first; the sandbox reads them in this order.
"""

from __future__ import annotations

__all__ = ["NAMESPACE_HEADER", "NAMESPACE_HEADERS", "TOKEN_HEADERS"]

TOKEN_HEADERS = ("X-Service-Token", "X-Vault-Token")
NAMESPACE_HEADERS = ("X-Vault-Namespace", "X-Service-Namespace")
# The one the client sends.
NAMESPACE_HEADER = NAMESPACE_HEADERS[0]
