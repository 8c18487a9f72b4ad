"""ipywidgets forms for the operations operators do by hand.

Each form is a small class in its own module; it takes a client, calls it, and
shows what it returns. The rules live in the client, not here.

    from widgets import TeamAccessEditor, AgentCleanupForm, PolicySetParameterEditor

ipywidgets is imported when a form is first used, not by this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolkit.extras import module_dir, require

require("notebook", "The forms (widgets)", "ipywidgets")

if TYPE_CHECKING:
    from .access_question import WhoCanForm
    from .agent_cleanup import AgentCleanupForm
    from .certificate_request import CertificateRequestForm
    from .key_distribution import KeyDistributionForm
    from .lease_revoke import LeaseRevokeForm
    from .library_checkout import LibraryCheckoutForm
    from .login import LoginForm
    from .policy_set_parameter import PolicySetParameterEditor
    from .rekey_ceremony import RekeyCeremonyWidget
    from .team_access import TeamAccessEditor

__all__ = [
    "AgentCleanupForm",
    "CertificateRequestForm",
    "KeyDistributionForm",
    "LeaseRevokeForm",
    "LibraryCheckoutForm",
    "LoginForm",
    "PolicySetParameterEditor",
    "RekeyCeremonyWidget",
    "TeamAccessEditor",
    "WhoCanForm",
]

_MODULES = {
    "AgentCleanupForm": "agent_cleanup",
    "CertificateRequestForm": "certificate_request",
    "KeyDistributionForm": "key_distribution",
    "LeaseRevokeForm": "lease_revoke",
    "LibraryCheckoutForm": "library_checkout",
    "LoginForm": "login",
    "PolicySetParameterEditor": "policy_set_parameter",
    "RekeyCeremonyWidget": "rekey_ceremony",
    "TeamAccessEditor": "team_access",
    "WhoCanForm": "access_question",
}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        from importlib import import_module

        return getattr(import_module(f".{_MODULES[name]}", __name__), name)
    raise AttributeError(f"module 'widgets' has no attribute {name!r}")


def __dir__() -> list[str]:
    return module_dir(globals(), _MODULES)
