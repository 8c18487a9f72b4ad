"""PolicySetParameterForm: create and update parameters; secrets leave no trace."""

from __future__ import annotations

import pytest

from toolkit import PlatformClient
from toolkit.sandbox import Sandbox
from widgets import PolicySetParameterForm
from widgets._common import output_text

SECRET = "s3cr3t-webhook-value-7731"


@pytest.fixture
def policy_set(acme: dict[str, str]) -> str:
    return acme["security-baseline"]


@pytest.fixture
def form(client: PlatformClient, policy_set: str) -> PolicySetParameterForm:
    return PolicySetParameterForm(client, policy_set)


def _stored(sandbox: Sandbox, policy_set: str, key: str) -> object:
    """The value the sandbox holds for ``key`` (what the API never returns once sensitive)."""
    platform = sandbox.platform
    with platform.lock:  # the stores, read as a request reads them
        caller = platform.org_store.authenticate(sandbox.token)
        params = platform.parameter_store.list_parameters(caller, policy_set)
    (param,) = [p for p in params if p.key == key]
    return param.value


def _leaks(form: PolicySetParameterForm) -> list[str]:
    places = {
        "repr": repr(form),
        "status": form.status.value,
        "table": output_text(form.table),
        "fields": repr([form.value_text.value, form.value_secret.value, form.key.value]),
        "widget": repr(form.widget),
        "record": repr(form.record),
    }
    return [where for where, text in places.items() if SECRET in text]


def test_the_list_shows_the_parameters_with_sensitive_values_hidden(
    form: PolicySetParameterForm,
) -> None:
    shown = output_text(form.table)
    assert "allowed_regions" in shown and "us-east-1,eu-west-1" in shown
    assert "slack_webhook" in shown and "hooks.example.invalid" not in shown


def test_the_sensitive_checkbox_makes_the_value_field_a_password_field(
    form: PolicySetParameterForm,
) -> None:
    assert form.value_row.children == (form.value_text,)
    form.sensitive.value = True
    assert form.value_row.children == (form.value_secret,)
    assert type(form.value_field).__name__ == "Password"


def test_creating_a_plain_parameter_stores_it_and_refreshes_the_list(
    form: PolicySetParameterForm, client: PlatformClient, policy_set: str
) -> None:
    form.key.value = "owner_email"
    form.value_field.value = "ops@example.com"
    form.save_button.click()

    listed = client.policy_set_parameters.parameters_frame(policy_set)
    row = listed[listed["key"] == "owner_email"]
    assert list(row["value"]) == ["ops@example.com"]
    assert "owner_email" in output_text(form.table)
    assert form.parameter.value == row.index[0]
    assert "Created owner_email" in form.status_text


def test_a_sensitive_value_is_sent_then_gone_from_every_widget_and_output(
    form: PolicySetParameterForm, sandbox: Sandbox, policy_set: str
) -> None:
    form.key.value = "pagerduty_key"
    form.sensitive.value = True
    form.value_field.value = SECRET
    form.save_button.click()

    assert _stored(sandbox, policy_set, "pagerduty_key") == SECRET
    assert form.value_secret.value == ""
    assert _leaks(form) == []
    assert "Created pagerduty_key" in form.status_text


def test_the_password_field_is_emptied_even_when_the_server_refuses(
    client: PlatformClient,
) -> None:
    form = PolicySetParameterForm(client, "polset-doesnotexist")
    form.key.value = "k"
    form.sensitive.value = True
    form.value_field.value = SECRET
    form.save_button.click()

    assert form.value_secret.value == ""
    assert form.record is None
    assert "404" in form.status_text
    assert _leaks(form) == []


def test_picking_a_parameter_fills_the_form_and_saving_updates_it(
    form: PolicySetParameterForm, client: PlatformClient, policy_set: str, acme: dict[str, str]
) -> None:
    listed = client.policy_set_parameters.parameters_frame(policy_set)
    (param_id,) = listed[listed["key"] == "max_instance_size"].index
    form.parameter.value = param_id
    assert (form.key.value, form.value_text.value) == ("max_instance_size", "m5.xlarge")

    form.value_field.value = "m5.2xlarge"
    form.save_button.click()

    after = client.policy_set_parameters.parameters_frame(policy_set)
    assert after.loc[param_id, "value"] == "m5.2xlarge"
    assert len(after) == len(listed)
    assert "Updated max_instance_size" in form.status_text


def test_updating_a_sensitive_parameter_with_an_empty_value_keeps_its_value(
    form: PolicySetParameterForm, sandbox: Sandbox, client: PlatformClient, policy_set: str
) -> None:
    listed = client.policy_set_parameters.parameters_frame(policy_set)
    (param_id,) = listed[listed["key"] == "slack_webhook"].index
    form.parameter.value = param_id
    assert form.sensitive.value is True and form.value_secret.value == ""

    form.key.value = "slack_webhook_url"
    form.save_button.click()

    assert _stored(sandbox, policy_set, "slack_webhook_url") == "https://hooks.example.invalid/demo"


def test_a_refused_save_shows_the_reason(form: PolicySetParameterForm) -> None:
    form.key.value = ""
    form.value_field.value = "x"
    form.save_button.click()
    assert form.record is None
    assert "key" in form.status_text
