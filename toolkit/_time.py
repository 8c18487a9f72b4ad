"""Time parsing and formatting, in one place.

Timestamps are timezone-aware UTC datetimes everywhere in the toolkit; on the
wire they are ISO 8601 with milliseconds and ``Z`` (the platform) or RFC 3339
with nanoseconds (the secrets server). Durations are seconds or Go-style
strings such as ``1h30m``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from ._errors import DecodeError

__all__ = [
    "NotATime",
    "format_iso_ms",
    "from_epoch",
    "later",
    "parse_duration",
    "parse_time",
    "format_rfc3339",
]


class NotATime(DecodeError, ValueError):
    """A value that should be a time is not one (a server's field): a toolkit error,
    and a ValueError for the callers that read a person's input."""


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h|d)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}


def parse_time(value: str | datetime | None) -> datetime | None:
    """Parse an ISO 8601 / RFC 3339 timestamp to an aware UTC datetime (None stays None).

    Raises :class:`NotATime` for anything else (a number, a duration, garbage).
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        raise NotATime(f"expected a time, got {type(value).__name__}")
    try:
        return _parse_text(value)
    except (ValueError, OverflowError):
        raise NotATime("a value that should be an ISO 8601 time is not one") from None


def from_epoch(value: Any) -> datetime | None:
    """A unix timestamp (seconds, a number or digits) as an aware UTC datetime; None
    for none. Raises :class:`NotATime` for anything else, or one out of range."""
    if value is None or value == "" or value == 0:
        return None
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError(type(value).__name__)
        return datetime.fromtimestamp(int(value), UTC)
    except (ValueError, TypeError, OverflowError, OSError):
        raise NotATime("a value that should be a unix time is not one") from None


def later(when: datetime | None, seconds: float) -> datetime | None:
    """``when`` plus ``seconds``; None when ``when`` is None or the sum falls outside
    the years a datetime holds (a server's ttl of 10**30 seconds), never an
    OverflowError."""
    if when is None:
        return None
    try:
        return when + timedelta(seconds=seconds)
    except (OverflowError, ValueError):
        return None


def _parse_text(value: str) -> datetime:
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # Python's parser takes at most microseconds: trim nanosecond fractions.
    match = re.match(r"^(.*?\.\d{6})\d+(.*)$", text)
    if match:
        text = match.group(1) + match.group(2)
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def format_iso_ms(value: datetime) -> str:
    """``2026-06-01T12:00:00.000Z``: the platform's timestamp form."""
    # isoformat is several times cheaper than strftime; pages of agents call this a lot.
    return value.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def format_rfc3339(value: datetime) -> str:
    """``2026-06-01T12:00:00.123456Z``: the secrets server's timestamp form."""
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_duration(value: str | int | float | timedelta | None, *, field: str = "duration") -> int:
    """Seconds in a duration given as seconds or a string like ``90s``, ``1h30m``, ``24h``.

    Raises ValueError naming ``field`` for anything else.
    """
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise ValueError(f"{field}: expected a duration, got a boolean")
    if isinstance(value, timedelta):
        return int(value.total_seconds())
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"{field}: a duration cannot be negative")
        return int(value)
    text = str(value).strip()
    if re.fullmatch(r"\d+", text):
        return int(text)
    pos = 0
    total = 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise ValueError(f"{field}: {value!r} is not a duration (seconds, or like '90s', '1h30m')")
    return int(total)
