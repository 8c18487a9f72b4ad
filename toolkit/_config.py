"""Configuration from explicit arguments or the environment, as each ecosystem does.

Platform: ``TFE_ADDRESS`` and ``TFE_TOKEN`` (as the official clients read them).
Secrets server: ``VAULT_ADDR``, ``VAULT_TOKEN``, ``VAULT_NAMESPACE``,
``VAULT_CACERT``, ``VAULT_SKIP_VERIFY``, each also spelled ``BAO_...``.
An explicit argument always wins; nothing falls back to the sandbox silently.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ._errors import ConfigurationError

__all__ = ["Settings", "platform_settings", "secrets_settings"]

_TRUE = {"1", "true", "yes", "on", "t", "y"}


@dataclass(frozen=True)
class Settings:
    """Where a client connects and with what. ``token`` is never shown by ``repr``."""

    address: str
    token: str
    namespace: str | None = None
    ca_file: str | None = None
    verify: bool = True

    def __repr__(self) -> str:
        return (
            f"Settings(address={self.address!r}, token=<hidden>, namespace={self.namespace!r}, "
            f"ca_file={self.ca_file!r}, verify={self.verify!r})"
        )


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def platform_settings(
    address: str | None = None,
    token: str | None = None,
    *,
    ca_file: str | None = None,
    verify: bool | None = None,
) -> Settings:
    """Settings for the platform client: arguments, else ``TFE_ADDRESS`` / ``TFE_TOKEN``."""
    address = address or _env("TFE_ADDRESS")
    token = token or _env("TFE_TOKEN")
    if not address:
        raise ConfigurationError(
            "no platform address: pass address=... or set TFE_ADDRESS "
            "(for the local sandbox, use toolkit.connect_platform(sandbox=True))"
        )
    if not token:
        raise ConfigurationError("no platform token: pass token=... or set TFE_TOKEN")
    return Settings(address, token, None, ca_file, True if verify is None else verify)


def secrets_settings(
    address: str | None = None,
    token: str | None = None,
    *,
    namespace: str | None = None,
    ca_file: str | None = None,
    verify: bool | None = None,
) -> Settings:
    """Settings for the secrets client: arguments, else ``VAULT_*`` / ``BAO_*`` variables."""
    address = address or _env("VAULT_ADDR", "BAO_ADDR")
    token = token or _env("VAULT_TOKEN", "BAO_TOKEN")
    namespace = namespace if namespace is not None else _env("VAULT_NAMESPACE", "BAO_NAMESPACE")
    ca_file = ca_file or _env("VAULT_CACERT", "BAO_CACERT")
    if verify is None:
        skip = (_env("VAULT_SKIP_VERIFY", "BAO_SKIP_VERIFY") or "").strip().lower()
        verify = skip not in _TRUE
    if not address:
        raise ConfigurationError(
            "no secrets server address: pass address=... or set VAULT_ADDR (or BAO_ADDR) "
            "(for the local sandbox, use toolkit.connect_secrets(sandbox=True))"
        )
    if not token:
        raise ConfigurationError(
            "no secrets server token: pass token=... or set VAULT_TOKEN (or BAO_TOKEN)"
        )
    return Settings(address, token, namespace, ca_file, verify)
