"""Large frames in a scrolling box, secrets hidden, and records shown as HTML without secrets."""

from __future__ import annotations

import re
import time

import pandas as pd
import pytest

from toolkit import Record, Sensitive, display
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


def _table_alone(shown: display.InteractiveFrame) -> str:
    """The table's HTML without the kernel's one-off DataTables bundle."""
    display._INTERACTIVE["loaded"] = True
    return shown._repr_html_()


def test_a_frame_over_the_budget_shows_the_first_rows_that_fit_and_says_how_many() -> None:
    rows = 122_000
    frame = pd.DataFrame(
        {
            "lease": [f"database/creds/role-{i % 7}/{i:06d}" for i in range(rows)],
            "ttl": pd.to_timedelta(range(rows), unit="s"),
            "n": range(rows),
        }
    )
    started = time.monotonic()
    page = _table_alone(display.interactive(frame))
    assert time.monotonic() - started < 10  # every row is never rendered to be measured
    budget = display.MAX_TABLE_BYTES
    assert 0.9 * budget <= len(page) <= budget  # the budget is used, never passed
    (shown,) = re.findall(r"The first ([\d,]+) of 122,000 rows", page)
    last = int(shown.replace(",", "")) - 1
    assert f"role-{last % 7}/{last:06d}" in page and f"/{last + 1:06d}" not in page
    assert "budget is 2 MB" in page and "max_bytes" in page


def test_a_smaller_or_larger_budget_is_kept_and_a_bad_one_refused() -> None:
    frame = pd.DataFrame({"lease": [f"db/creds/{i:05d}" for i in range(20_000)]})
    small = _table_alone(display.interactive(frame, max_bytes=100_000))
    assert len(small) <= 100_000 and "The first " in small
    whole = _table_alone(display.interactive(frame, max_bytes=10_000_000))
    assert "20000 rows, all searchable" in whole
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_bytes"):
            display.interactive(frame, max_bytes=bad)  # type: ignore[arg-type]


def test_one_long_cell_is_cut_in_the_table_and_kept_in_the_frame() -> None:
    frame = pd.DataFrame({"policy": ['path "x" {}\n' * 100_000, "short"]})
    page = _table_alone(display.interactive(frame))
    assert len(page) < 100_000 and "characters; cut here" in page and "short" in page
    assert len(frame["policy"][0]) == 1_200_000


def test_the_bundle_comes_with_the_first_table_of_a_kernel_only() -> None:
    display._INTERACTIVE["loaded"] = False
    small = pd.DataFrame({"n": range(7)})
    first = display.interactive(small)._repr_html_()
    second = display.interactive(small)._repr_html_()
    assert len(first) > 500_000 > 50_000 > len(second)
    assert first.endswith(second)  # the same table, the bundle before it
