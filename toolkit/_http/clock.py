"""The server's clock, as the ``Date`` headers of its answers place it.

Views that judge staleness ask the server's time rather than this machine's, so that a
skewed laptop clock (or the sandbox's fixed demo clock) does not change their verdict.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime

__all__ = ["ServerClock"]

# The Date headers believed: a server's clock outside these years is broken, and
# its dates would not fit a frame's datetimes (pandas ends in 2262).
_SANE_YEARS = range(2000, 2200)


class ServerClock:
    """The server's time: the latest believable ``Date`` header, moved on by this
    machine's monotonic clock; this machine's time before any was seen."""

    def __init__(self) -> None:
        self._seen: tuple[datetime, float] | None = None
        # The header last noted: the header has a one-second grain, so the first
        # answer carrying a value places the clock best, and parsing it again costs time.
        self.last_date: str | None = None
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            seen = self._seen
        if seen is None:
            return datetime.now(UTC)
        when, at = seen
        return when + timedelta(seconds=time.monotonic() - at)

    def note(self, date: str) -> None:
        """Place the clock from a ``Date`` header (one that cannot be read, or is out of
        any sane year, changes nothing)."""
        self.last_date = date
        try:
            when = parsedate_to_datetime(date)
        except (TypeError, ValueError, OverflowError, IndexError):
            return
        if when.year not in _SANE_YEARS:
            return  # a broken clock: this machine's serves better
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        with self._lock:
            self._seen = (when, time.monotonic())
