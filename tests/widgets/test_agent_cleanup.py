"""AgentCleanupForm: preview, confirm, remove, read the result table."""

from __future__ import annotations

from datetime import timedelta

import pytest

from toolkit import PlatformClient
from toolkit.sandbox import Sandbox
from widgets import AgentCleanupForm
from widgets._common import output_text

# Exited, errored, and unknown for hours; runner-06 is unknown but silent for only 25
# minutes, under the default threshold of an hour, so it stays by default.
GONE = {"runner-04", "runner-05", "runner-07"}


@pytest.fixture
def form(client: PlatformClient) -> AgentCleanupForm:
    return AgentCleanupForm(client, "acme")


def _names(client: PlatformClient) -> set[str]:
    return set(client.agent_pools.all_agents("acme")["name"])


def _clean_up(form: AgentCleanupForm, *statuses: str) -> None:
    """What the operator does: choose statuses (or keep the default), preview, confirm, remove."""
    if statuses:
        form.statuses.value = statuses
    form.preview_button.click()
    form.confirm.value = True
    form.remove_button.click()


def test_removing_is_disabled_until_a_preview_and_a_confirmation(form: AgentCleanupForm) -> None:
    assert form.confirm.disabled and form.remove_button.disabled
    form.preview_button.click()
    assert not form.confirm.disabled
    assert form.remove_button.disabled
    form.confirm.value = True
    assert not form.remove_button.disabled


def test_the_preview_shows_the_dry_run_and_removes_nothing(
    form: AgentCleanupForm, client: PlatformClient
) -> None:
    before = _names(client)
    form.preview_button.click()

    assert form.plan is not None
    assert set(form.plan[form.plan["action"] == "would remove"]["name"]) == GONE
    shown = output_text(form.preview_output)
    assert all(name in shown for name in GONE)
    assert "3 agent(s) would be removed" in form.status_text
    assert _names(client) == before


def test_confirming_removes_the_gone_agents_and_shows_each_outcome(
    form: AgentCleanupForm, client: PlatformClient
) -> None:
    _clean_up(form)

    assert _names(client) == {"runner-01", "runner-02", "runner-03", "runner-06"}
    assert form.result is not None
    assert set(form.result[form.result["action"] == "removed"]["name"]) == GONE
    assert set(form.result[form.result["action"] == "skipped"]["name"]) == {
        "runner-01",
        "runner-02",
        "runner-03",
        "runner-06",
    }
    assert "runner-07" in output_text(form.result_output)
    assert "Removed 3, failed 0, kept 4" in form.status_text


def test_after_a_removal_the_next_one_needs_a_new_preview(form: AgentCleanupForm) -> None:
    _clean_up(form)
    assert form.confirm.value is False and form.confirm.disabled
    assert form.remove_button.disabled


def test_changing_the_selection_after_a_preview_asks_for_a_new_one(
    form: AgentCleanupForm, client: PlatformClient
) -> None:
    form.preview_button.click()
    form.confirm.value = True
    form.statuses.value = ("exited",)
    assert form.remove_button.disabled and form.confirm.disabled

    form.remove()
    assert _names(client) >= GONE
    assert "Preview" in form.status_text


def test_only_the_chosen_statuses_are_removed(
    form: AgentCleanupForm, client: PlatformClient
) -> None:
    _clean_up(form, "exited")
    assert GONE - _names(client) == {"runner-04"}


def test_an_agent_that_refuses_removal_is_reported_as_failed_with_the_servers_message(
    form: AgentCleanupForm, client: PlatformClient
) -> None:
    # Idle agents answer 412; the form shows that answer rather than hiding it.
    form.silent_minutes.value = 0
    _clean_up(form, "idle")

    assert form.result is not None
    failed = form.result[form.result["action"] == "failed"]
    assert list(failed["name"]) == ["runner-01"]
    assert failed["detail"].iloc[0].startswith("412")
    assert "failed 1" in form.status_text
    assert "runner-01" in _names(client)


def test_an_unknown_agent_silent_for_25_minutes_stays_unless_the_threshold_is_lowered(
    form: AgentCleanupForm, client: PlatformClient
) -> None:
    form.preview_button.click()
    assert form.plan is not None
    kept = form.plan[form.plan["name"] == "runner-06"]
    assert list(kept["action"]) == ["skipped"] and kept["detail"].iloc[0] == "pinged within 1h"

    form.silent_minutes.value = 20
    assert form.remove_button.disabled  # a new threshold asks for a new preview
    _clean_up(form)
    assert "runner-06" not in _names(client)


def test_only_the_previewed_agents_are_removed_and_one_that_changed_is_skipped(
    sandbox: Sandbox, form: AgentCleanupForm, client: PlatformClient
) -> None:
    form.preview_button.click()
    assert form.plan is not None
    ids = {name: i for i, name in form.plan["name"].items()}
    # After the preview: an idle agent turns errored (silent for hours: a new selection
    # would take it), and a previewed errored agent comes back to life.
    now = sandbox.platform.clock.now()
    sandbox.platform.set_agent_status(ids["runner-01"], "errored", now - timedelta(hours=3))
    sandbox.platform.set_agent_status(ids["runner-05"], "idle")

    form.confirm.value = True
    form.remove_button.click()

    assert form.result is not None
    assert _names(client) == {"runner-01", "runner-02", "runner-03", "runner-05", "runner-06"}
    assert set(form.result[form.result["action"] == "removed"]["name"]) == {
        "runner-04",
        "runner-07",
    }
    changed = form.result.loc[ids["runner-05"]]
    assert changed["action"] == "skipped"
    assert changed["detail"] == "status changed since the preview: errored -> idle"
    assert form.result.loc[ids["runner-01"], "action"] == "skipped"  # as previewed
    assert "1 changed since the preview, skipped" in form.status_text
