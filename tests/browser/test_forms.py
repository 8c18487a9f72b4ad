"""The forms used in the page as a person would: team access, agent clean-up, library check-out."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.browser._page import (
    button,
    field,
    focus_on,
    form,
    open_notebook,
    run_cells,
    save_notebook,
    screenshot,
    wait_status,
    wait_text,
)
from toolkit._spec.team_access import PERMISSION_ATTRIBUTES


def choose(page: Any, box: Any, value: str) -> None:
    box.select_option(label=value)
    page.wait_for_timeout(600)  # the kernel redraws the form


def open_form(page: Any, lab: str, notebook: str, cell: str, title: str) -> Any:
    """Run only the runbook's parameter check, its connection, the names it chooses and
    the cell that shows the form; the form."""
    open_notebook(page, lab, notebook)
    run_cells(page, "runbook.check_parameters(", "import toolkit", "run.choose", cell)
    shown = form(page, title)
    shown.wait_for()
    return shown


def permission_fields(editor: Any) -> dict[str, Any]:
    return {api: field(editor, api) for api in PERMISSION_ATTRIBUTES}


def test_the_team_access_editor_opens_the_permission_fields_for_custom_only(
    page: Any, lab_kernels: str, sandbox: Any
) -> None:
    editor = open_form(
        page,
        lab_kernels,
        "02_team_access_audit.ipynb",
        "TeamAccessForm(",
        "Team access to a workspace",
    )
    access = field(editor, "Access", "select")
    runs = field(editor, "runs", "select")

    def set_level(level: str, *, open_fields: bool) -> dict[str, bool]:
        """Pick ``level``, wait for the kernel's redraw, and say which fields are open."""
        choose(page, access, level)
        wanted = "!el.disabled" if open_fields else "el.disabled"
        page.wait_for_function(f"(el) => {wanted}", arg=runs.element_handle())
        return {api: box.is_enabled() for api, box in permission_fields(editor).items()}

    # Custom first, so that each fixed level below has fields to close.
    assert all(set_level("custom", open_fields=True).values())
    for level in ("read", "plan", "write", "admin"):
        opened = set_level(level, open_fields=False)
        assert not any(opened.values()), (level, opened)
        assert all(set_level("custom", open_fields=True).values())

    choose(page, field(editor, "runs", "select"), "apply")
    editor.locator("button.mod-primary").click()  # "Add", or "Update" for an existing record
    wait_status(page, editor, r"(Added|Updated) .*'s custom access to ")
    focus_on(page, editor)
    screenshot(page, "team-access-custom")


def test_the_agent_cleanup_form_previews_asks_for_confirmation_and_reports(
    page: Any, lab_kernels: str, sandbox: Any
) -> None:
    cleanup = open_form(
        page,
        lab_kernels,
        "01_agent_pool_health.ipynb",
        "AgentCleanupForm(",
        "Remove agents that are gone",
    )
    remove = button(cleanup, "Remove agents")
    assert remove.is_disabled(), "nothing is removed before a preview"

    button(cleanup, "Preview").click()
    preview = wait_status(page, cleanup, r"Preview: (\d+) agent\(s\) would be removed, (\d+) kept")
    would = int(re.search(r"(\d+) agent", preview).group(1))  # type: ignore[union-attr]
    assert would > 0
    wait_text(page, cleanup, r"would remove")
    assert remove.is_disabled(), "the preview alone does not arm the removal"

    cleanup.get_by_label("I have read the preview; remove these agents").check()
    page.wait_for_function("(el) => !el.disabled", arg=remove.element_handle())
    remove.click()
    report = wait_status(
        page, cleanup, r"Removed (\d+), failed (\d+), kept (\d+)\.", timeout=60_000
    )
    assert report.startswith(f"✔ Removed {would},"), report
    wait_text(page, cleanup, r"removed")
    assert remove.is_disabled(), "a second removal needs a new preview"
    focus_on(page, cleanup)
    screenshot(page, "agent-cleanup-report")


def test_the_library_panel_checks_an_account_out_and_in(
    page: Any, lab_kernels: str, sandbox: Any, workdir: Path
) -> None:
    notebook = "08_service_account_library.ipynb"
    library = open_form(
        page, lab_kernels, notebook, "LibraryCheckoutForm(", "Service account library"
    )
    choose(page, field(library, "Set", "select"), "dba-oncall")
    reveal = button(library, "Reveal password")
    assert reveal.is_disabled(), "nothing to reveal before a check-out"

    button(library, "Check out").click()
    out = wait_status(page, library, r"Checked out (\S+) from dba-oncall for \d+ s\.")
    account = re.search(r"Checked out (\S+) from", out).group(1)  # type: ignore[union-attr]
    wait_text(page, library, rf"Account {re.escape(account)}, lease \S+")

    page.wait_for_function("(el) => !el.disabled", arg=reveal.element_handle())
    reveal.click()
    shown = library.locator("pre")
    shown.wait_for()
    password = shown.inner_text().strip()
    assert password and f"Password of {account}:" in library.inner_text()
    button(library, "Hide").click()
    shown.wait_for(state="detached")

    button(library, "Check in").click()
    wait_status(page, library, rf"Checked in {re.escape(account)}; its password has been changed\.")
    assert "lease" not in library.locator(":scope > .widget-html").nth(1).inner_text()
    assert reveal.is_disabled()
    focus_on(page, library)
    screenshot(page, "library-checked-in")

    saved = save_notebook(page, workdir / notebook)
    assert password not in json.dumps(saved), "the revealed password is not saved"
