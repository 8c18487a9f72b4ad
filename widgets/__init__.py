"""ipywidgets forms for the operations operators do by hand.

Each form is a small class in its own module; it takes a client, calls it, and
shows what it returns. The rules live in the client, not here.

    from widgets import TeamAccessForm, AgentCleanupForm, PolicySetParameterForm

ipywidgets is imported when a form is first used, not by this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolkit.extras import module_dir, require

require("notebook", "The forms (widgets)", "ipywidgets")

if TYPE_CHECKING:  # for type checkers only; tests/widgets/test_imports.py holds it to _MODULES
    from .agent_cleanup import AgentCleanupForm as AgentCleanupForm
    from .certificate_request import CertificateRequestForm as CertificateRequestForm
    from .key_distribution import KeyDistributionForm as KeyDistributionForm
    from .lease_revoke import LeaseRevokeForm as LeaseRevokeForm
    from .least_privilege import LeastPrivilegeForm as LeastPrivilegeForm
    from .library_checkout import LibraryCheckoutForm as LibraryCheckoutForm
    from .login import LoginForm as LoginForm
    from .policy_set_parameter import PolicySetParameterForm as PolicySetParameterForm
    from .rekey_ceremony import RekeyCeremonyForm as RekeyCeremonyForm
    from .team_access import TeamAccessForm as TeamAccessForm
    from .who_can import WhoCanForm as WhoCanForm

# The one table: each form's module. A form is ``<Module in CamelCase>Form`` in it (one
# suffix for every form), so its name, ``__all__`` and the lazy look-up come from here.
_FORM_MODULES = (
    "agent_cleanup",
    "certificate_request",
    "key_distribution",
    "lease_revoke",
    "least_privilege",
    "library_checkout",
    "login",
    "policy_set_parameter",
    "rekey_ceremony",
    "team_access",
    "who_can",
)


def _form_name(module: str) -> str:
    return "".join(part.capitalize() for part in module.split("_")) + "Form"


_MODULES = {_form_name(module): module for module in _FORM_MODULES}
__all__ = sorted(_MODULES)


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        from importlib import import_module

        return getattr(import_module(f".{_MODULES[name]}", __name__), name)
    raise AttributeError(f"module 'widgets' has no attribute {name!r}")


def __dir__() -> list[str]:
    return module_dir(globals(), _MODULES)
