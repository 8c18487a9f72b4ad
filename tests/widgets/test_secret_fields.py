"""Every form with a secret field, driven with known secrets against a fresh sandbox.

A typed secret must be gone from its password field right after the form reads
it; no secret (typed, or handed back by the server) may show in the form's
``repr``, its children's, the saved state of every live widget (Output
contents included), DEBUG logs or stdout/stderr, except in the one transient
place a form reveals it on request, and there only until it is hidden.
"""

from __future__ import annotations

import contextlib
import html
import re
import secrets
from pathlib import Path

import pytest

import widgets
from tests._leaks import Leaks, all_widget_state
from toolkit import PlatformClient
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from widgets import (
    CertificateRequestForm,
    KeyDistributionForm,
    LibraryCheckoutForm,
    PolicySetParameterForm,
    RekeyCeremonyForm,
)
from widgets._common import output_text

pytestmark = pytest.mark.usefixtures("debug_logs")


def grep_form(leaks: Leaks, where: str, form: object) -> None:
    """The form (its repr and widget tree) and every live widget's saved state."""
    leaks.check(where, form, all_widget_state())


def enter_shares(form: RekeyCeremonyForm, leaks: Leaks, shares: list[str]) -> None:
    """Type each share and submit it: the field is empty at once and nothing is left."""
    for typed in shares:
        form.share.value = typed
        form.submit_button.click()
        assert form.share.value == "", "the share field keeps what was typed"
        grep_form(leaks, f"the rekey form in phase {form.ceremony.phase}", form)


@pytest.mark.parametrize("verify", [False, True], ids=["no verification", "verification"])
def test_rekey_share_fields_are_emptied_and_no_share_is_left(
    sandbox: Sandbox, secrets_client: SecretsClient, leaks: Leaks, tmp_path: Path, verify: bool
) -> None:
    current = leaks.feed_unseal_shares(sandbox, tmp_path)
    form = RekeyCeremonyForm(secrets_client)
    form.shares.value, form.threshold.value, form.verify.value = 3, 2, verify
    form.start_button.click()
    # A made-up share spoils the first round at the threshold; the real ones go through.
    t = int(secrets_client.seal.status()["t"])
    made_up = leaks.feed(secrets.token_hex(32), "a made-up share")
    malformed = leaks.new("a malformed share")  # refused before anything is sent
    enter_shares(form, leaks, [malformed, made_up, *current[: t - 1], *current[:t]])
    assert form.ceremony.phase == ("verifying" if verify else "complete"), form.status_text
    new = [leaks.feed(s, "a new share") for s in form.ceremony.new_shares]
    grep_form(leaks, "the rekey form before the hand-out", form)
    for _ in new:
        form.reveal_button.click()
        assert any(s in form.share_view.value for s in new), "the reveal shows the share"
        form.recorded_button.click()
        grep_form(leaks, "the rekey form after a share was recorded", form)
    if verify:
        wrong = leaks.feed(secrets.token_hex(32), "a made-up new share")
        enter_shares(form, leaks, [wrong, new[0], new[0], new[1]])
        assert form.ceremony.phase == "complete", form.status_text


def test_a_sensitive_parameter_field_is_emptied_and_the_value_shows_nowhere(
    sandbox: Sandbox, leaks: Leaks
) -> None:
    with PlatformClient(sandbox.address, sandbox.token) as client:
        polset = str(client.organizations.policy_sets_frame("acme").index[0])
        form = PolicySetParameterForm(client, polset)
        for attempt in ("created", "refused as a duplicate"):
            form.parameter.value = ""
            form.key.value = "LEAK_PROBE"
            form.sensitive.value = True
            form.value_secret.value = leaks.new(f"sensitive value {attempt}")
            form.save_button.click()
            assert form.value_secret.value == "" and form.value_text.value == ""
            grep_form(leaks, f"the parameter editor, value {attempt}", form)
        assert "LEAK_PROBE" in set(form.parameters["key"]) if form.parameters is not None else False
        assert form.status_text.startswith("✘"), "the duplicate is refused"
        form.parameter.value = str(form.parameters.index[form.parameters["key"] == "LEAK_PROBE"][0])
        form.value_secret.value = leaks.new("updated sensitive value")
        form.save_button.click()
        assert form.value_secret.value == "" and form.status_text.startswith("✔")
        grep_form(leaks, "the parameter editor after an update", form)


def test_a_checked_out_password_shows_only_while_revealed(
    secrets_client: SecretsClient, leaks: Leaks
) -> None:
    form = LibraryCheckoutForm(secrets_client)
    for name in list(form.set_name.options):
        form.set_name.value = name
        lent = form.check_out()
        assert lent is not None, form.status_text
        password = leaks.feed(lent["password"], f"password checked out of {name}")
        grep_form(leaks, "the library form after a check-out", form)
        form.reveal_button.click()
        assert html.escape(password) in output_text(form.password_output), "Reveal shows it"
        form.hide_button.click()
        grep_form(leaks, "the library form after Hide", form)
        form.reveal_button.click()
        form.check_in_button.click()
        grep_form(leaks, "the library form after a check-in", form)


def test_a_private_key_shows_only_as_the_download_link_until_forgotten(
    secrets_client: SecretsClient, leaks: Leaks
) -> None:
    form = CertificateRequestForm(secrets_client)
    form.role.value = "web-server"
    form.common_name.value = "leak.example.com"
    form.request_button.click()
    assert form.issued is not None and form.issued.private_key is not None, form.status_text
    leaks.feed_private_key(form.issued.private_key_pem(), "the issued private key")
    grep_form(leaks, "the certificate form after a request", form)
    form.download_button.click()
    assert form.key_link.value, "Download key makes the link"
    form.forget_button.click()
    assert form.key_link.value == ""
    grep_form(leaks, "the certificate form after Forget link", form)
    form.download_button.click()
    form.request_button.click()  # a new request forgets the old link first
    grep_form(leaks, "the certificate form after a second request", form)
    form.clear_key_link()


def test_kms_provider_credentials_show_nowhere_in_the_distribution_form(
    secrets_client: SecretsClient, leaks: Leaks
) -> None:
    secrets_client.keymgmt.write_provider(
        "leak-probe",
        "awskms",
        "leak-collection",
        {"access_key": leaks.new("KMS access key"), "secret_key": leaks.new("KMS secret key")},
    )
    secrets_client.keymgmt.create_key("leak-probe-key")
    form = KeyDistributionForm(secrets_client)
    form.key.value, form.provider.value = "leak-probe-key", "leak-probe"
    form.distribute_button.click()
    assert form.result is not None, form.status_text
    grep_form(leaks, "the key distribution form", form)
    form.remove_button.click()
    form.confirm.value = "leak-probe-key"
    form.delete_button.click()
    assert form.confirm.value == ""
    grep_form(leaks, "the key distribution form after a delete", form)


def test_the_who_can_form_names_tokens_by_accessor_and_shows_no_token(
    secrets_client: SecretsClient, leaks: Leaks
) -> None:
    secrets_client.policies.write(
        "acl", "leak-readers", 'path "secret/*" { capabilities = ["read"] }'
    )
    token = secrets_client.tokens.create(["leak-readers"], "1h")["client_token"]
    leaks.feed(token.reveal(), "a token the answer names by accessor")
    form = widgets.WhoCanForm(secrets_client, "read", "secret/app")
    form.ask_button.click()
    assert form.principal.options, "the answer names principals"
    form.principal.value = form.principal.options[-1]
    form.explain_button.click()
    grep_form(leaks, "the who-can form after an answer and an explanation", form)


# -- password fields sync once; revealed secrets do not stay ----------------------------------


def _build_every_form(sandbox: Sandbox, clients: contextlib.ExitStack) -> dict[str, object]:
    """One of each form in ``widgets.__all__``, on the demo sandbox; ``clients`` closes
    the clients they use (an open client's loop thread outlives the test)."""
    import widgets

    platform = clients.enter_context(PlatformClient(sandbox.address, sandbox.token))
    vault = clients.enter_context(SecretsClient(sandbox.address, sandbox.token))
    login = clients.enter_context(SecretsClient.for_login(sandbox.address))
    polset = str(platform.organizations.policy_sets_frame("acme").index[0])
    builders = {
        "AgentCleanupForm": lambda: widgets.AgentCleanupForm(platform, "acme"),
        "CertificateRequestForm": lambda: CertificateRequestForm(vault),
        "KeyDistributionForm": lambda: KeyDistributionForm(vault),
        "LeaseRevokeForm": lambda: widgets.LeaseRevokeForm(vault),
        "LeastPrivilegeForm": lambda: widgets.LeastPrivilegeForm(vault),
        "LoginForm": lambda: widgets.LoginForm(login),
        "LibraryCheckoutForm": lambda: LibraryCheckoutForm(vault),
        "PolicySetParameterForm": lambda: PolicySetParameterForm(platform, polset),
        "RekeyCeremonyForm": lambda: RekeyCeremonyForm(vault),
        "TeamAccessForm": lambda: widgets.TeamAccessForm(platform, "acme"),
        "WhoCanForm": lambda: widgets.WhoCanForm(vault),
    }
    assert set(builders) == set(widgets.__all__), "a form in widgets.__all__ is not built here"
    return {name: build() for name, build in builders.items()}


def _descendants(widget: object) -> list[object]:
    found = [widget]
    for child in getattr(widget, "children", ()):
        found.extend(_descendants(child))
    return found


def test_every_password_field_of_every_form_syncs_only_when_typing_is_done(
    sandbox: Sandbox,
) -> None:
    import ipywidgets

    passwords: dict[str, list[object]] = {}
    with contextlib.ExitStack() as clients:
        forms = _build_every_form(sandbox, clients)
    for name, form in forms.items():
        # The displayed tree, and fields a form swaps in later (held as attributes).
        roots = [form.widget, *vars(form).values()]  # type: ignore[attr-defined]
        for widget in {id(w): w for r in roots for w in _descendants(r)}.values():
            if isinstance(widget, ipywidgets.Password):
                passwords.setdefault(name, []).append(widget)
    assert set(passwords) >= {"RekeyCeremonyForm", "PolicySetParameterForm"}
    syncing = [
        f"{name}: {field.description}"  # type: ignore[attr-defined]
        for name, fields in passwords.items()
        for field in fields
        if field.continuous_update  # type: ignore[attr-defined]
    ]
    assert not syncing, f"password fields that sync every keystroke: {syncing}"


def _wait_until(condition: object, seconds: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def test_a_revealed_password_is_cleared_when_its_time_runs_out(
    secrets_client: SecretsClient, leaks: Leaks
) -> None:
    form = LibraryCheckoutForm(secrets_client, reveal_seconds=0.3)
    lent = form.check_out()
    assert lent is not None, form.status_text
    password = leaks.feed(lent["password"], "the checked-out password")
    form.reveal_button.click()
    assert html.escape(password) in output_text(form.password_output)
    assert _wait_until(lambda: not form.password_output.outputs), "still shown after its time"
    assert form.hide_button.disabled
    grep_form(leaks, "the library form after the reveal timed out", form)
    form.check_in()


def test_a_revealed_share_is_cleared_when_its_time_runs_out_and_the_turn_stays(
    sandbox: Sandbox, secrets_client: SecretsClient, leaks: Leaks, tmp_path: Path
) -> None:
    current = leaks.feed_unseal_shares(sandbox, tmp_path)
    form = RekeyCeremonyForm(secrets_client, reveal_seconds=0.3)
    form.shares.value, form.threshold.value, form.verify.value = 2, 2, False
    form.start_button.click()
    t = int(secrets_client.seal.status()["t"])
    enter_shares(form, leaks, current[:t])
    assert form.ceremony.phase == "complete", form.status_text
    new = [leaks.feed(s, "a new share") for s in form.ceremony.new_shares]
    form.reveal_button.click()
    assert new[0] in form.share_view.value
    assert _wait_until(lambda: form.share_view.value == ""), "the share is still shown"
    grep_form(leaks, "the rekey form after the reveal timed out", form)
    # The key holder did not confirm: the same share is offered again.
    assert not form.reveal_button.disabled and "keyholder 1" in form.reveal_button.description
    form.reveal_button.click()
    assert new[0] in form.share_view.value
    form.recorded_button.click()


def test_revealed_secrets_are_cleared_when_the_kernel_shuts_down(
    secrets_client: SecretsClient, leaks: Leaks
) -> None:
    from widgets._common import clear_revealed_secrets

    form = LibraryCheckoutForm(secrets_client)  # the default timeout: a minute
    lent = form.check_out()
    assert lent is not None, form.status_text
    leaks.feed(lent["password"], "the checked-out password")
    form.reveal_button.click()
    assert form.password_output.outputs and form.reveal_timeout.armed
    clear_revealed_secrets()  # what the kernel's exit runs
    assert not form.password_output.outputs and not form.reveal_timeout.armed
    grep_form(leaks, "the library form after the kernel's exit handler", form)
    form.check_in()


@pytest.mark.slow
def test_the_exit_handler_is_registered_so_a_process_exit_clears_what_is_revealed() -> None:
    import subprocess
    import sys

    script = (
        "from widgets._common import RevealTimeout\n"
        "RevealTimeout(lambda: print('cleared at exit', flush=True), 3600).start()\n"
        "print('exiting', flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["exiting", "cleared", "at", "exit"]


# Every form module that touches a secret, and the test above that drives it.
def test_login_secrets_are_emptied_and_neither_they_nor_the_token_show(
    sandbox: Sandbox, leaks: Leaks
) -> None:
    from toolkit.sandbox.secrets.demo_logins import DEMO_USERPASS_USERS
    from widgets import LoginForm

    with SecretsClient(sandbox.address, sandbox.token) as root:
        issued = root.http.json("POST", "/auth/approle/role/nightly-audit/secret-id")["data"]
    with SecretsClient.for_login(sandbox.address) as client:
        form = LoginForm(client, method="jwt")
        form.jwt.value = leaks.new("a JWT")  # refused: the sandbox has no JWT method
        form.login_button.click()
        assert form.jwt.value == "" and form.login is None
        grep_form(leaks, "the login form after a refused JWT", form)
        form.method.value = "approle"
        form.role_id.value = "demo-role-nightly-audit"
        form.secret_id.value = leaks.feed(issued["secret_id"], "a secret id")
        form.login_button.click()
        assert form.secret_id.value == "" and form.login is not None
        leaks.feed(form.login.client_token, "a login token")
        form.method.value = "userpass"
        form.username.value = "olivia"
        form.password.value = leaks.feed(DEMO_USERPASS_USERS["olivia"][0], "a demo password")
        form.login_button.click()
        assert form.password.value == "" and form.login is not None
        leaks.feed(form.login.client_token, "a login token")
        grep_form(leaks, "the login form after two logins", form)


COVERED = {
    "login": test_login_secrets_are_emptied_and_neither_they_nor_the_token_show,
    "rekey_ceremony": test_rekey_share_fields_are_emptied_and_no_share_is_left,
    "policy_set_parameter": test_a_sensitive_parameter_field_is_emptied_and_the_value_shows_nowhere,
    "library_checkout": test_a_checked_out_password_shows_only_while_revealed,
    "certificate_request": test_a_private_key_shows_only_as_the_download_link_until_forgotten,
    "key_distribution": test_kms_provider_credentials_show_nowhere_in_the_distribution_form,
    "who_can": test_the_who_can_form_names_tokens_by_accessor_and_shows_no_token,
}


def test_every_form_with_a_secret_field_is_driven_here() -> None:
    """A new password field, reveal or secret in ``widgets/`` must get a test above."""
    marks = re.compile(r"Password\(|Sensitive|reveal|private_key|password|credentials|token")
    folder = Path(__file__).resolve().parents[2] / "widgets"
    touching = {
        path.stem
        for path in folder.glob("*.py")
        if not path.stem.startswith("_") and marks.search(path.read_text())
    }
    assert touching, "the scan finds the forms"
    assert touching <= set(COVERED), (
        f"forms with a secret and no leak test: {touching - set(COVERED)}"
    )
