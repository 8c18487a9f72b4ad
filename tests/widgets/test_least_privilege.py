"""LeastPrivilegeForm: read a log, pick principals, see the generated policy and its impact."""

from __future__ import annotations

import html
from pathlib import Path

from toolkit import least_privilege
from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from widgets import LeastPrivilegeForm


def test_picking_a_principal_shows_its_generated_policy_and_the_impact_of_applying_it(
    tmp_path: Path,
) -> None:
    with (
        Sandbox(audit_file=str(tmp_path / "audit.log")) as sb,
        SecretsClient(sb.address, sb.token) as client,
    ):
        log = least_privilege.sandbox_demo_traffic(client)
        form = LeastPrivilegeForm(client, log)
        form.read_button.click()
        assert form.review is not None and "request(s) decided" in form.status_text
        arthur = "auth/userpass/users/arthur"
        assert arthur in form.principals.options
        form.principals.value = (arthur,)
        form.generate_button.click()
        assert form.generated is not None
        shown = html.unescape(form.policy_text.value)
        assert 'path "sys/policies/acl/operators"' in shown and 'path "sys/policies/acl/"' in shown
        assert "database/creds" not in shown  # refused as logged: not granted anew
        assert "covers every one, widens nothing" in form.status_text
        assert form.policy.options == ("auditors", "team-access")
        form.policy.value = "auditors"
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
