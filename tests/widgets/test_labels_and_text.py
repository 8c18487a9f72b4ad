"""Every form shows its labels whole, and leaves a plain-text summary for a reader with no kernel."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as w
import pytest

from toolkit import PlatformClient
from toolkit.secrets import SecretsClient
from widgets import (
    AgentCleanupForm,
    CertificateRequestForm,
    KeyDistributionForm,
    LeaseRevokeForm,
    LeastPrivilegeForm,
    LibraryCheckoutForm,
    LoginForm,
    PolicySetParameterForm,
    RekeyCeremonyForm,
    TeamAccessForm,
    WhoCanForm,
)
from widgets._common import Form, _controls

PLATFORM_FORMS: dict[str, Callable[[PlatformClient, dict[str, str]], Form]] = {
    "agent clean-up": lambda c, ids: AgentCleanupForm(c, "acme"),
    "team access": lambda c, ids: TeamAccessForm(c, "acme"),
    "policy-set parameters": lambda c, ids: PolicySetParameterForm(c, next(iter(_sets(c)))),
}
SECRETS_FORMS: dict[str, Callable[[SecretsClient], Form]] = {
    "certificate request": lambda c: CertificateRequestForm(c, mount="pki"),
    "key distribution": lambda c: KeyDistributionForm(c, "keymgmt"),
    "lease revoke": lambda c: LeaseRevokeForm(c),
    "least privilege": lambda c: LeastPrivilegeForm(c),
    "library check-out": lambda c: LibraryCheckoutForm(c),
    "login": lambda c: LoginForm(c),
    "rekey ceremony": lambda c: RekeyCeremonyForm(c),
    "who can": lambda c: WhoCanForm(c),
}


def _sets(client: PlatformClient) -> list[str]:
    return list(client.organizations.policy_sets_frame("acme").index)


def _labelled(form: Form) -> list[Any]:
    return [c for c in _controls(form.widget) if getattr(c, "description", "")]


def _check_labels_take_their_room(form: Form) -> None:
    labelled = _labelled(form)
    assert labelled
    for control in labelled:
        style = getattr(control, "style", None)
        if style is not None and hasattr(style, "description_width"):
            # Fixed widths a form chose on purpose are kept; none is left at the default.
            assert style.description_width, control.description
        if isinstance(control, w.Checkbox | w.Button):
            assert control.layout.width, control.description
        if isinstance(control, w.Button):
            assert control.layout.min_width == "fit-content", control.description


def _check_text_summary(form: Form) -> None:
    text = form._repr_mimebundle_()["text/plain"]
    assert "VBox(" not in text and "children=" not in text
    assert text.startswith(form.title)
    for control in _labelled(form):
        assert control.description in text
    assert f"last outcome: {form.status_text.rstrip('.') or 'nothing done yet'}." in text


@pytest.mark.parametrize("name", sorted(PLATFORM_FORMS))
def test_a_platform_form_shows_its_labels_whole_and_summarises_itself_as_text(
    name: str, client: PlatformClient, acme: dict[str, str]
) -> None:
    form = PLATFORM_FORMS[name](client, acme)
    _check_labels_take_their_room(form)
    _check_text_summary(form)


@pytest.mark.parametrize("name", sorted(SECRETS_FORMS))
def test_a_secrets_form_shows_its_labels_whole_and_summarises_itself_as_text(
    name: str, secrets_client: SecretsClient
) -> None:
    form = SECRETS_FORMS[name](secrets_client)
    _check_labels_take_their_room(form)
    _check_text_summary(form)


def test_the_text_summary_carries_the_last_outcome(client: PlatformClient) -> None:
    form = AgentCleanupForm(client, "acme")
    form.preview_button.click()
    text = form._repr_mimebundle_()["text/plain"]
    assert "last outcome: nothing done yet" not in text
    assert form.status_text and f"last outcome: {form.status_text.rstrip('.')}." in text
