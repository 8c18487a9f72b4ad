"""LibraryCheckoutForm: pick a set, check out, reveal and hide the password, check in, errors."""

from __future__ import annotations

import html
import subprocess
import sys

import pytest

from tests.secrets._ad import corp_ad
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from widgets import LibraryCheckoutForm
from widgets._common import output_text

DBA = [f"dba-admin-0{i}@corp.example" for i in (1, 2, 3)]


@pytest.fixture
def form(secrets_client: SecretsClient) -> LibraryCheckoutForm:
    form = LibraryCheckoutForm(secrets_client)
    form.set_name.value = "dba-oncall"
    return form


def test_the_form_lists_the_sets_and_shows_the_chosen_sets_accounts(
    form: LibraryCheckoutForm,
) -> None:
    assert list(form.set_name.options) == ["break-glass", "dba-oncall", "release-engineers"]
    shown = output_text(form.table)
    assert all(account in shown for account in DBA)
    assert "release-01@corp.example" not in shown
    form.set_name.value = "release-engineers"
    assert "release-01@corp.example" in output_text(form.table)


def test_a_check_out_shows_the_account_and_lease_but_not_the_password(
    form: LibraryCheckoutForm, sandbox: Sandbox
) -> None:
    form.ttl.value = "30m"
    form.check_out_button.click()
    lent = form.checkout
    assert lent is not None and lent["service_account_name"] == DBA[1]
    password = lent["password"].reveal()
    assert DBA[1] in form.status_text and "1800 s" in form.status_text
    assert lent["lease_id"] in form.lease.value
    assert lent["lease_id"] in output_text(form.table)
    for text in (form.status.value, form.lease.value, output_text(form.table), repr(form)):
        assert password not in text and html.escape(password) not in text
    assert output_text(form.password_output) == ""


def test_reveal_shows_the_password_until_hidden_or_the_next_step(
    form: LibraryCheckoutForm,
) -> None:
    assert form.reveal_button.disabled
    form.reveal()
    assert "no checked-out password" in form.status_text
    form.check_out_button.click()
    assert form.checkout is not None
    password = form.checkout["password"].reveal()
    form.reveal_button.click()
    assert html.escape(password) in output_text(form.password_output)
    form.hide_button.click()
    assert output_text(form.password_output) == "" and form.hide_button.disabled
    form.reveal_button.click()
    form.check_in_button.click()
    assert output_text(form.password_output) == ""


def test_check_in_brings_the_account_back_and_changes_its_password(
    form: LibraryCheckoutForm, secrets_client: SecretsClient
) -> None:
    form.check_out_button.click()
    assert form.checkout is not None
    account, before = form.checkout["service_account_name"], form.checkout["password"]
    form.check_in_button.click()
    assert f"Checked in {account}" in form.status_text
    assert form.checkout is None and form.lease.value == "" and form.reveal_button.disabled
    assert secrets_client.ad.status("dba-oncall")[account]["available"] is True
    again = secrets_client.ad.check_out("dba-oncall")
    assert again["service_account_name"] == account and again["password"] != before
    form.check_in_button.click()
    assert "Nothing to check in" not in form.status_text  # the caller's one account came back


def test_check_in_with_nothing_out_says_so(form: LibraryCheckoutForm) -> None:
    form.set_name.value = "break-glass"
    form.check_in_button.click()
    assert "Nothing to check in" in form.status_text


def test_refusals_are_shown_with_the_servers_reason(form: LibraryCheckoutForm) -> None:
    form.ttl.value = "soon"
    form.check_out_button.click()
    assert "ttl" in form.status_text and form.checkout is None
    form.ttl.value = ""
    form.set_name.value = "break-glass"
    form.check_out_button.click()
    form.checkout = None
    form.check_out_button.click()
    assert "400" in form.status_text and "no service accounts" in form.status_text


def test_the_form_works_against_another_mount(
    sandbox: Sandbox, secrets_client: SecretsClient
) -> None:
    corp_ad(sandbox, secrets_client)
    form = LibraryCheckoutForm(secrets_client, mount="corp-ad")
    assert list(form.set_name.options) == ["team"]
    form.check_out_button.click()
    assert form.checkout is not None and form.checkout["lease_id"].startswith("corp-ad/")


@pytest.mark.slow
def test_the_module_loads_ipywidgets_only_when_a_form_is_built() -> None:
    check = "import sys, widgets.library_checkout; print('ipywidgets' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
