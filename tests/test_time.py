"""Durations and timestamps (toolkit/_time.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from toolkit._time import format_iso_ms, parse_duration, parse_time


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), (90, 90), ("90s", 90), ("1h", 3600), ("1h30m", 5400), ("24h", 86400), ("", 0)],
)
def test_durations_accept_seconds_and_suffixed_strings(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["1x", "h1", "-5", "1h 30m", True])
def test_bad_durations_are_refused_naming_the_field(bad):
    with pytest.raises(ValueError, match="ttl"):
        parse_duration(bad, field="ttl")


def test_timestamps_round_trip_with_milliseconds_and_z():
    when = parse_time("2026-06-01T12:00:00.123456789Z")
    assert when == datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=UTC)
    assert format_iso_ms(when) == "2026-06-01T12:00:00.123Z"
