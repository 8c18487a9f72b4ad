"""The sandbox's clock.

With the demo data set the clock starts at a fixed instant, so runbook outputs
are the same on every run; it then moves with real time, so leases expire and
silent agents turn errored as they would on a real server. Tests may move it
forward with :meth:`Clock.advance` instead of sleeping.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

__all__ = ["Clock", "DEMO_EPOCH"]

# The instant the demo data set is written against.
DEMO_EPOCH = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


class Clock:
    """Sandbox time: ``start`` plus the real time elapsed since creation, plus any advance."""

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start or datetime.now(UTC)
        self._t0 = time.monotonic()
        self._offset = 0.0
        self._lock = threading.Lock()

    @property
    def start(self) -> datetime:
        """The instant the clock started at: the anchor of the demo data."""
        return self._start

    def now(self) -> datetime:
        with self._lock:
            offset = self._offset
        return self._start + timedelta(seconds=time.monotonic() - self._t0 + offset)

    # Stored state (``--state``): the clock resumes from the instant it was saved at.
    def __getstate__(self) -> dict[str, object]:
        return {"start": self._start, "elapsed": (self.now() - self._start).total_seconds()}

    def __setstate__(self, state: dict[str, object]) -> None:
        start = state["start"]
        elapsed = state["elapsed"]
        assert isinstance(start, datetime) and isinstance(elapsed, float)
        self._start = start
        self._t0 = time.monotonic()
        self._offset = elapsed
        self._lock = threading.Lock()

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward (never backward) and return the new time."""
        if seconds < 0:
            raise ValueError("the sandbox clock only moves forward")
        with self._lock:
            self._offset += seconds
        return self.now()
