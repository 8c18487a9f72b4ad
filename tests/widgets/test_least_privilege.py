"""LeastPrivilegeForm: read a log, pick principals, see the generated policy and its impact."""

from __future__ import annotations

import html
from pathlib import Path

from toolkit import least_privilege
from toolkit.secrets import SecretsClient
from widgets import LeastPrivilegeForm


def test_picking_a_principal_shows_its_generated_policy_and_the_impact_of_applying_it(
    secrets_client: SecretsClient, tmp_path: Path
) -> None:
    log = least_privilege.sandbox_demo_log(secrets_client, tmp_path)
    form = LeastPrivilegeForm(secrets_client, log)
    form.read_button.click()
    assert form.review is not None and "request(s) decided" in form.status_text
    reader = next(
        p.principal for p in form.review.principals.values()
        if p.kind == "token" and p.name == "token-demo-db-reader"
    )  # fmt: skip
    assert reader in form.principals.options
    form.principals.value = (reader,)
    form.generate_button.click()
    assert form.generated is not None
    shown = html.unescape(form.policy_text.value)
    assert 'path "database/creds/readonly"' in shown and 'path "database/roles/"' in shown
    assert "covers every one, widens nothing" in form.status_text
    assert form.policy.options == ("db-readers",)
    form.impact_button.click()
    assert form.impact_frame is not None and form.impact_frame.empty, form.status_text
    assert "denies nothing used in the last 30 days" in form.status_text


def test_generating_before_reading_is_refused_with_what_to_do(
    secrets_client: SecretsClient,
) -> None:
    form = LeastPrivilegeForm(secrets_client)
    form.generate()
    assert "read the log first" in form.status_text
    form.read_button.click()
    assert "an audit log is required" in form.status_text
