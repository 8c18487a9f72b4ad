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

from . import _errors
from ._config import hidden_token
from ._errors import *  # noqa: F403 (the error tree: every name of _errors.__all__)
from ._errors import ConfigurationError
from ._http import RetryPolicy as RetryPolicy
from ._masking import Sensitive
from ._records import Record as Record
from ._version import __version__ as __version__
from .extras import module_dir
from .platform import PlatformClient

if TYPE_CHECKING:
    from .secrets import SecretsClient
    from .secrets.leases import lease_summary as lease_summary

# What users call or catch: the clients and their connectors, the secret wrapper and
# the error tree (named once, in _errors.__all__). Other names stay reachable
# (``toolkit.RetryPolicy``, ``toolkit.Record``, ``toolkit.drift.diff``, ``toolkit.coverage``,
# the lease summary, ``scrolling``) without being offered by ``from toolkit import *``
# (tests/test_public_api.py holds it to that).
__all__ = [
    "PlatformClient",
    "SecretsClient",
    "Sensitive",
    "connect_platform",
    "connect_secrets",
]
__all__ += _errors.__all__  # the error tree, as _errors lists it


# Served on first use, to keep `import toolkit` light: name -> (module, attribute);
# an attribute of None is the module itself (``toolkit.plots``, ``toolkit.sandbox``).
_LAZY: dict[str, tuple[str, str | None]] = {
    "SecretsClient": (".secrets", "SecretsClient"),
    "lease_summary": (".secrets.leases", "lease_summary"),
    "scrolling": (".display", "scrolling"),
    "display": (".display", None),
    "plots": (".plots", None),
    "sandbox": (".sandbox", None),
    "diff": (".drift", "diff"),
    "drift": (".drift", None),
    "report": (".report", None),
    "findings": (".findings", None),
    "fleet": (".fleet", None),
    "plan": (".plan", None),
    "history": (".history", None),
    "sql_tables": (".sql_tables", None),
    "sql": (".sql_tables", "sql"),
    "auditlog": (".auditlog", None),
    "coverage": ("._coverage", "coverage"),
    "Coverage": ("._coverage", "Coverage"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        module_name, attribute = _LAZY[name]
        module = import_module(module_name, __name__)
        return module if attribute is None else getattr(module, attribute)
    raise AttributeError(f"module 'toolkit' has no attribute {name!r}")


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext toolkit``: toolkit errors in one line (message and hint)."""
    from ._ipython import register

    register(shell)


def _register_in_kernel() -> None:
    from ._ipython import register_in_kernel

    register_in_kernel()


_register_in_kernel()


def __dir__() -> list[str]:
    return module_dir(globals(), _LAZY)


def connect_platform(
    address: str | None = None,
    token: str | Sensitive | None = None,
    *,
    sandbox: bool = False,
    **options: Any,
) -> PlatformClient:
    """A platform client: against ``address`` / ``TFE_ADDRESS``, or the sandbox when asked.

    With ``sandbox=True`` it uses the sandbox the environment names
    (``TOOLKIT_SANDBOX_ADDRESS``) or starts one in this process, and prints
    which, so that a runbook never talks to the sandbox by accident.
    """
    token = hidden_token(token)  # no frame of a failed connection holds it plain
    if sandbox:
        address, token = _sandbox_target(address)
    return PlatformClient(address, token, **options)


def connect_secrets(
    address: str | None = None,
    token: str | Sensitive | None = None,
    *,
    sandbox: bool = False,
    **options: Any,
) -> SecretsClient:
    """A secrets client: against ``address`` / ``VAULT_ADDR``, or the sandbox when asked."""
    from .secrets import SecretsClient

    token = hidden_token(token)
    if sandbox:
        address, token = _sandbox_target(address)
    return SecretsClient(address, token, **options)


def _sandbox_target(address: str | None) -> tuple[str, Sensitive]:
    if address:
        raise ConfigurationError("pass either address=... or sandbox=True, not both")
    from .sandbox import ensure_sandbox

    running = ensure_sandbox()
    how = "started in this kernel" if running.started_here else "already running"
    print(f"Using the sandbox at {running.address} ({how}).")
    return running.address, Sensitive(running.token, "token")
