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
