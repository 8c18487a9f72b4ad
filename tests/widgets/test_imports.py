"""ipywidgets is loaded when a form is built, never by importing the packages."""

from __future__ import annotations

import subprocess
import sys

CHECK = (
    "import sys, toolkit, widgets, widgets.team_access, widgets.agent_cleanup, "
    "widgets.policy_set_parameter, widgets.rekey_ceremony, widgets.lease_revoke, widgets.login; "
    "print('ipywidgets' in sys.modules)"
)


def test_importing_the_toolkit_and_the_form_modules_does_not_load_ipywidgets() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_the_forms_are_exported_by_the_widgets_package() -> None:
    import widgets
    from widgets.agent_cleanup import AgentCleanupForm
    from widgets.policy_set_parameter import PolicySetParameterEditor
    from widgets.team_access import TeamAccessEditor

    assert widgets.AgentCleanupForm is AgentCleanupForm
    assert widgets.PolicySetParameterEditor is PolicySetParameterEditor
    assert widgets.TeamAccessEditor is TeamAccessEditor


def test_the_secrets_forms_are_exported_by_the_widgets_package() -> None:
    import widgets
    from widgets.lease_revoke import LeaseRevokeForm
    from widgets.rekey_ceremony import RekeyCeremonyWidget

    assert widgets.LeaseRevokeForm is LeaseRevokeForm
    assert widgets.RekeyCeremonyWidget is RekeyCeremonyWidget
