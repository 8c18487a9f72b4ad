"""The rekey ceremony as a Voila app: a page with no code, carried through by key holders."""

from __future__ import annotations

from typing import Any

from tests.browser._ceremony import carry_out_ceremony
from tests.browser._page import WIDGET_AS_TEXT, cut_labels, form, screenshot
from toolkit import Sensitive


def test_the_ceremony_app_shows_no_code_and_carries_the_ceremony_through(
    page: Any, voila: str, current_shares: list[Sensitive]
) -> None:
    page.goto(voila, timeout=180_000)
    ceremony = form(page, "Rekey ceremony")
    ceremony.wait_for(timeout=180_000)

    # Markdown cells are shown; no code cell, no editor, no prompt, no source text.
    assert page.locator(".jp-CodeMirrorEditor, .cm-editor, .jp-InputPrompt").count() == 0
    shown = page.locator("body").inner_text()
    for source in ("RekeyCeremonyForm(client)", "connect_secrets(", "import toolkit"):
        assert source not in shown, f"code on the page: {source}"
    assert ceremony.is_visible()
    assert not WIDGET_AS_TEXT.search(shown)
    assert cut_labels(page) == []

    carry_out_ceremony(page, current_shares, shares=3, threshold=2)
    ceremony.scroll_into_view_if_needed()
    assert cut_labels(page) == []  # the buttons shown later in the ceremony too
    screenshot(page, "ceremony-voila-complete")
