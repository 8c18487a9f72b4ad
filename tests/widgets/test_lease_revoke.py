"""LeaseRevokeForm: preview per mount, typed confirmation for prefixes, results and errors."""

from __future__ import annotations

import pytest

from toolkit.sandbox import Sandbox
from toolkit.secrets import SecretsClient
from widgets import LeaseRevokeForm
from widgets._common import output_text

PREFIX = "database/creds/reporting"


@pytest.fixture
def form(secrets_client: SecretsClient) -> LeaseRevokeForm:
    return LeaseRevokeForm(secrets_client)


def under(sandbox: Sandbox, prefix: str) -> int:
    return len(sandbox.secrets.leases.leases_under(prefix))


def test_a_selection_is_previewed_per_mount_then_revoked_with_a_result_per_lease(
    form: LeaseRevokeForm, secrets_client: SecretsClient, sandbox: Sandbox
) -> None:
    frame = secrets_client.leases.leases_by_mount(prefix=PREFIX)
    chosen = list(frame.index[:3])
    form.select([*chosen, "database/creds/reporting/no-such-lease"])
    assert form.mode.value == "selection" and len(form.selected_ids) == 4
    assert form.revoke_button.disabled

    preview = form.preview()
    assert preview is not None and sorted(preview.index) == sorted(chosen)
    assert "database/" in output_text(form.preview_table)
    assert "3 of the selected leases would be revoked; 1 unknown" in form.status_text
    assert not form.revoke_button.disabled

    form.revoke_button.click()
    assert form.result is not None
    assert sorted(form.result.index) == sorted(form.selected_ids)
    assert set(form.result["action"]) == {"revoked"}
    assert chosen[0] in output_text(form.result_table)
    assert under(sandbox, PREFIX) == len(frame) - 3
    assert "Revoked 4 lease(s); 0 failed" in form.status_text


def test_a_prefix_is_revoked_only_once_the_operator_types_it(
    form: LeaseRevokeForm, sandbox: Sandbox
) -> None:
    count = under(sandbox, PREFIX)
    form.mode.value = "prefix"
    form.prefix.value = PREFIX
    form.preview_button.click()
    assert f"{count} lease(s) under {PREFIX} would be revoked" in form.status_text

    form.revoke_button.click()
    assert "Type the prefix" in form.status_text and under(sandbox, PREFIX) == count
    form.confirm.value = "database/creds/report"
    form.revoke_button.click()
    assert under(sandbox, PREFIX) == count and form.confirm.value == ""

    form.confirm.value = PREFIX
    form.revoke_button.click()
    assert under(sandbox, PREFIX) == 0
    assert form.result is not None
    assert form.result.loc["database/", "previewed"] == count
    assert form.result.loc["database/", "left"] == 0
    assert form.revoke_button.disabled  # the next revocation needs a new preview


def test_revoke_acts_only_on_what_was_previewed(form: LeaseRevokeForm, sandbox: Sandbox) -> None:
    form.mode.value = "prefix"
    form.prefix.value = PREFIX
    form.preview()
    form.prefix.value = "database/creds/readonly"
    assert form.revoke_button.disabled
    form.confirm.value = "database/creds/readonly"
    form.revoke()
    assert "Preview first" in form.status_text
    assert under(sandbox, "database/creds/readonly") > 0


def test_an_engine_failure_is_shown_and_a_forced_revocation_clears_the_prefix(
    form: LeaseRevokeForm, sandbox: Sandbox, secrets_client: SecretsClient
) -> None:
    prefix = "database/creds/app"
    form.mode.value = "prefix"
    form.prefix.value = prefix
    form.preview()
    form.confirm.value = prefix
    form.revoke_button.click()
    assert form.status_text.startswith("✘ 400") and "failed to revoke" in form.status_text
    assert under(sandbox, prefix) > 0

    form.mode.value = "force"
    form.preview_button.click()
    assert "force-revoked" in form.status_text
    form.confirm.value = prefix
    form.revoke_button.click()
    assert under(sandbox, prefix) == 0
    assert form.result is not None and int(form.result["left"].sum()) == 0


def test_an_empty_prefix_or_selection_is_refused_at_preview(form: LeaseRevokeForm) -> None:
    form.preview_button.click()
    assert "selection is empty" in form.status_text
    form.mode.value = "prefix"
    form.preview_button.click()
    assert "a prefix is required" in form.status_text
    assert form.revoke_button.disabled


def test_a_caller_without_sudo_sees_the_servers_refusal(sandbox: Sandbox) -> None:
    with SecretsClient(sandbox.address, "demo-auditor-token") as auditor:
        form = LeaseRevokeForm(auditor, prefix=PREFIX)
        form.preview_button.click()
        assert "403" in form.status_text or "permission denied" in form.status_text
    assert repr(form) == "<LeaseRevokeForm mode='prefix'>"
