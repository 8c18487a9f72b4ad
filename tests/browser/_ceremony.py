"""The rekey ceremony carried out in a page, by its fields and buttons.

Used in JupyterLab and in the Voila app alike: only what a key holder sees
and clicks is used.
"""

from __future__ import annotations

import re
from typing import Any

from tests.browser._page import button, field, form, type_into, wait_status, wait_text
from toolkit import Sensitive

__all__ = ["carry_out_ceremony"]


def carry_out_ceremony(
    page: Any, current: list[Sensitive], *, shares: int = 3, threshold: int = 2
) -> list[str]:
    """Start with verification, enter the current shares, hand out and verify the new ones.

    Returns the new shares as the page revealed them, one key holder at a time.
    """
    ceremony = form(page, "Rekey ceremony")
    ceremony.scroll_into_view_if_needed()
    seal = wait_text(page, ceremony, r"current seal\s+(\d+) of (\d+)")
    needed = int(seal.group(1))

    for label, value in (("Shares", shares), ("Threshold", threshold)):
        type_into(page, field(ceremony, label), str(value))
    verify = ceremony.get_by_label("Require verification of the new shares")
    if not verify.is_checked():
        verify.check()
    button(ceremony, "Start").click()
    wait_status(page, ceremony, r"Started: key holders, enter your current shares")

    # The one password field: labelled "Key share", then "New share" while verifying.
    secret_field = ceremony.locator("input[type=password]")
    for done, share in enumerate(current[:needed], 1):
        assert field(ceremony, "Key share", "input[type=password]").is_visible()
        type_into(page, secret_field, share.reveal())
        button(ceremony, "Submit share").click()
        expected = (
            "The threshold is reached" if done == needed else f"Share accepted: {done} of {needed}"
        )
        wait_status(page, ceremony, re.escape(expected))
        assert secret_field.input_value() == "", "the share field is emptied once read"

    new: list[str] = []
    for k in range(1, shares + 1):
        button(ceremony, f"Reveal share for keyholder {k}").click()
        revealed = ceremony.locator("pre")
        revealed.wait_for()
        assert ceremony.locator("pre").count() == 1, "one share on screen at a time"
        new.append(revealed.inner_text().strip())
        button(ceremony, "I have recorded it").click()
        revealed.wait_for(state="detached")
    assert f"All {shares} new shares have been handed out." in ceremony.inner_text()
    assert len(set(new)) == shares

    for done, share in enumerate(new[:threshold], 1):
        assert field(ceremony, "New share", "input[type=password]").is_visible()
        type_into(page, secret_field, share)
        button(ceremony, "Verify new share").click()
        expected = (
            "Complete: the new shares are in force."
            if done == threshold
            else f"New share accepted: {done} of {threshold}"
        )
        wait_status(page, ceremony, re.escape(expected))
        assert secret_field.input_value() == ""

    button(ceremony, "Prove the new shares unseal").click()
    wait_status(
        page, ceremony, re.escape(f"The new shares unseal the server ({threshold} of {shares}).")
    )
    assert re.search(r"phase\s+complete", ceremony.inner_text())
    assert re.search(rf"current seal\s+{threshold} of {shares}", ceremony.inner_text())
    return new
