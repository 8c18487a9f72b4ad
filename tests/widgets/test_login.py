"""The login form, driven against a fresh sandbox without a kernel."""

from __future__ import annotations

import pytest

from tests._leaks import Leaks, all_widget_state
from toolkit.sandbox import Sandbox
from toolkit.sandbox.secrets.demo_logins import DEMO_LDAP_USERS, DEMO_USERPASS_USERS
from toolkit.secrets import SecretsClient
from widgets import LoginForm

pytestmark = pytest.mark.usefixtures("debug_logs")


@pytest.fixture
def fresh(sandbox: Sandbox) -> SecretsClient:
    client = SecretsClient.for_login(sandbox.address)
    yield client
    client.close()


def test_a_userpass_login_empties_the_password_and_logs_the_client_in(fresh, leaks: Leaks):
    form = LoginForm(fresh)
    form.username.value = "olivia"
    form.password.value = leaks.feed(DEMO_USERPASS_USERS["olivia"][0], "a demo password")
    form.login_button.click()
    assert form.password.value == ""
    assert form.login is not None and "operators" in form.login.policies
    assert "Logged in with userpass as userpass-olivia" in form.status_text
    assert fresh.tokens.lookup_self()["accessor"] == form.login.accessor
    leaks.feed(form.login.client_token, "the issued token")
    leaks.check("the login form after a login", form, all_widget_state())


def test_a_refused_login_still_empties_the_secret_and_says_why(fresh, leaks: Leaks):
    form = LoginForm(fresh, method="ldap")
    form.username.value = "lena.ops"
    form.password.value = leaks.new("a wrong password")
    form.login_button.click()
    assert form.password.value == "" and form.login is None
    assert "400: ldap operation failed" in form.status_text
    leaks.check("the login form after a refusal", form, all_widget_state())


def test_an_approle_login_from_the_form(sandbox, fresh, leaks: Leaks):
    with SecretsClient(sandbox.address, sandbox.token) as root:
        secret = root.http.json("POST", "/auth/approle/role/nightly-audit/secret-id")["data"]
    form = LoginForm(fresh, method="approle")
    form.role_id.value = "demo-role-nightly-audit"
    form.secret_id.value = leaks.feed(secret["secret_id"], "a secret id")
    form.login_button.click()
    assert form.secret_id.value == ""
    # The role's policies and its entity's group's (security-team).
    assert form.login is not None and form.login.policies == ["auditors", "default", "team-access"]
    leaks.check("the login form after an AppRole login", form, all_widget_state())


def test_only_the_chosen_methods_fields_show_and_secret_fields_wait_for_enter(fresh):
    form = LoginForm(fresh, method="approle")
    shown = {
        n
        for n in ("username", "role_id", "password", "secret_id", "jwt")
        if form._field(n).layout.display != "none"
    }
    assert shown == {"role_id", "secret_id"}
    form.method.value = "ldap"
    assert form.username.layout.display is None and form.secret_id.layout.display == "none"
    assert not any(f.continuous_update for f in (form.password, form.secret_id, form.jwt))


def test_a_secret_typed_for_another_method_is_emptied_too(fresh):
    form = LoginForm(fresh, method="userpass")
    form.password.value = DEMO_LDAP_USERS["lena.ops"][0]
    form.method.value = "ldap"
    form.username.value = "lena.ops"
    form.secret_id.value = "typed-in-the-wrong-place"
    form.login_button.click()
    assert form.secret_id.value == "" and form.password.value == ""
    # The groups' policies and the identity groups' of the user's entity.
    assert form.login is not None and form.login.policies == [
        "default",
        "on-call",
        "operators",
        "team-access",
    ]


def test_a_missing_password_is_said_before_anything_is_sent(fresh):
    form = LoginForm(fresh, method="userpass")
    form.username.value = "olivia"
    form.login_button.click()
    assert "password is required" in form.status_text and form.login is None
