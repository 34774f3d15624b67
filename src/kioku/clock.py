"""Where "now" comes from: one clock per runtime, handed to every service that reads the time.

Tests pass a clock they move by hand, so expiry, trigger windows and Sleep are tested without
sleeping; the eval gate swaps the memory lane's clock to write its golden set with dated facts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

Clock = Callable[[], datetime]

_TICK = timedelta(microseconds=1)


def system_clock() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


class Stamps:
    """Creation times for new rows, distinct within this process: rows written at one reading
    of the clock (a batch, a fast machine, a test's clock that stands still) get consecutive
    microseconds, so they list in the order written. A clock set back (dated writes) is
    followed as it is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reading: datetime | None = None
        self._next: datetime | None = None

    def take(self, now: datetime, count: int = 1) -> datetime:
        """The first of ``count`` consecutive stamps, a microsecond apart, from ``now``."""
        with self._lock:
            ahead = self._reading is not None and self._next is not None and now >= self._reading
            start = max(now, self._next) if ahead and self._next is not None else now
            self._reading, self._next = now, start + _TICK * count
            return start
