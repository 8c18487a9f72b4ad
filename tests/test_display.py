"""Large frames in a scrolling box, secrets hidden, and records shown as HTML without secrets."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from toolkit import Record, Sensitive
from toolkit.display import scrolling


def test_a_long_frame_is_shown_whole_in_a_box_that_scrolls_under_a_sticky_header() -> None:
    frame = pd.DataFrame({"lease": [f"db/creds/{i}" for i in range(300)], "ttl": range(300)})
    page = scrolling(frame, height="20em")._repr_html_()
    assert page.count("<tr") == 301  # the header and every row, no "..." row
    assert "db/creds/0<" in page and "db/creds/299<" in page and "..." not in page
    assert re.search(r"class='toolkit-scroll' style='max-height:20em'", page)
    assert "position:sticky" in page and "var(--jp-layout-color0" in page
    assert "300 rows" in page
    assert repr(scrolling(frame)) == repr(frame)


def test_past_the_limit_the_box_says_how_many_rows_it_leaves_out() -> None:
    frame = pd.DataFrame({"n": range(50)})
    page = scrolling(frame, limit=20)._repr_html_()
    assert page.count("<tr") == 21
    assert "20 of 50 rows shown" in page


def test_secret_cells_and_markup_never_reach_the_page() -> None:
    frame = pd.DataFrame(
        {"account": ["<b>svc</b>"], "password": [Sensitive("hunter2-secret", "password")]}
    )
    page = scrolling(frame)._repr_html_()
    assert "hunter2-secret" not in page
    assert "&lt;hidden password&gt;" in page
    assert "<b>svc</b>" not in page and "&lt;b&gt;svc&lt;/b&gt;" in page


def test_a_record_shows_as_a_table_with_its_secret_fields_hidden() -> None:
    record = Record(
        {"username": "v-root-7", "password": Sensitive("s3cr3t-value", "password")},
        kind="credentials",
    )
    page = record._repr_html_()
    assert "<caption>credentials</caption>" in page and "v-root-7" in page
    assert "s3cr3t-value" not in page and "s3cr3t-value" not in repr(record)


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        scrolling(pd.DataFrame(), limit=0)


def test_an_interactive_table_holds_every_row_with_a_stable_id_and_the_bundle_once() -> None:
    from toolkit import display

    display._INTERACTIVE["loaded"] = False
    frame = pd.DataFrame({"lease": [f"db/creds/{i}" for i in range(3000)], "n": range(3000)})
    first = display.interactive(frame)._repr_html_()
    again = display.interactive(frame)._repr_html_()
    assert "db/creds/2999" in again and "3000 rows, all searchable" in again
    assert "sample" not in again
    ids = re.findall(r'id="(toolkit_[0-9a-f]+)"', again)
    assert ids and ids[0] in first  # the same frame, the same id: nothing random
    assert len(first) > len(again) + 500_000  # the offline bundle came with the first only
    assert "cdn" not in again.lower() and "https://" not in again.split("<table")[0]
    assert repr(display.interactive(frame)) == repr(frame)


def test_an_interactive_table_says_when_it_shows_a_sample() -> None:
    from toolkit.display import interactive

    frame = pd.DataFrame({"n": range(50), "password": [Sensitive("pw-7-secret", "password")] * 50})
    page = interactive(frame, limit=20)._repr_html_()
    assert "A sample: the first 20 of 50 rows" in page
    assert "pw-7-secret" not in page
    with pytest.raises(ValueError, match="at least 1"):
        interactive(frame, limit=0)


def test_scrolling_boxes_become_interactive_only_when_asked() -> None:
    from toolkit import display

    frame = pd.DataFrame({"n": range(5)})
    assert "dataTable" not in scrolling(frame)._repr_html_() and "toolkit_" not in (
        scrolling(frame)._repr_html_()
    )
    display.use_interactive(True)
    try:
        assert "toolkit_" in scrolling(frame)._repr_html_()
    finally:
        display.use_interactive(False)
    assert "toolkit-scroll" in scrolling(frame)._repr_html_()
