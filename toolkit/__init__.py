"""Operator's toolkit for a workspace automation platform and a secrets-management server.

    import toolkit
    platform = toolkit.PlatformClient()          # TFE_ADDRESS / TFE_TOKEN
    secrets = toolkit.SecretsClient()            # VAULT_ADDR / VAULT_TOKEN (or BAO_*)
    platform = toolkit.connect_platform(sandbox=True)   # the local sandbox, said out loud

Lists and audits return pandas DataFrames; writes return the written record;
errors are :class:`ToolkitError` subclasses; secrets come back as
:class:`Sensitive` and never print.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._errors import (
    APIError,
    BadRequest,
    ConfigurationError,
    Conflict,
    ConnectError,
    DecodeError,
    InputError,
    MethodNotAllowed,
    NotFound,
    PermissionDenied,
    PreconditionFailed,
    RateLimited,
    ServerError,
    TimeoutError,
    TLSError,
    ToolkitError,
    TransportError,
    Unauthorized,
    Unprocessable,
)
from ._http import RetryPolicy
from ._masking import Sensitive
from ._records import Record
from .platform import PlatformClient

if TYPE_CHECKING:
    from .secrets import SecretsClient

__all__ = [
    "APIError",
    "BadRequest",
    "ConfigurationError",
    "Conflict",
    "ConnectError",
    "DecodeError",
    "InputError",
    "MethodNotAllowed",
    "NotFound",
    "PermissionDenied",
    "PlatformClient",
    "PreconditionFailed",
    "RateLimited",
    "Record",
    "RetryPolicy",
    "SecretsClient",
    "Sensitive",
    "ServerError",
    "TLSError",
    "TimeoutError",
    "ToolkitError",
    "TransportError",
    "Unauthorized",
    "Unprocessable",
    "connect_platform",
    "connect_secrets",
    "diff",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The secrets client is imported on first use, to keep `import toolkit` light.
    if name == "SecretsClient":
        from .secrets import SecretsClient

        return SecretsClient
    if name == "diff":
        from .drift import diff

        return diff
    if name in ("report", "drift", "plan"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'toolkit' has no attribute {name!r}")


def connect_platform(
    address: str | None = None, token: str | None = None, *, sandbox: bool = False, **options: Any
) -> PlatformClient:
    """A platform client: against ``address`` / ``TFE_ADDRESS``, or the sandbox when asked.

    With ``sandbox=True`` it uses the sandbox the environment names
    (``TOOLKIT_SANDBOX_ADDRESS``) or starts one in this process, and prints
    which, so that a runbook never talks to the sandbox by accident.
    """
    if sandbox:
        address, token = _sandbox_target(address)
    return PlatformClient(address, token, **options)


def connect_secrets(
    address: str | None = None, token: str | None = None, *, sandbox: bool = False, **options: Any
) -> SecretsClient:
    """A secrets client: against ``address`` / ``VAULT_ADDR``, or the sandbox when asked."""
    from .secrets import SecretsClient

    if sandbox:
        address, token = _sandbox_target(address)
    return SecretsClient(address, token, **options)


def _sandbox_target(address: str | None) -> tuple[str, str]:
    if address:
        raise ConfigurationError("pass either address=... or sandbox=True, not both")
    from .sandbox import ensure_sandbox

    running = ensure_sandbox()
    how = "started in this kernel" if running.started_here else "already running"
    print(f"Using the sandbox at {running.address} ({how}).")
    return running.address, running.token
