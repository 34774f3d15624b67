"""A bound on the audit rows refused keys can write.

Every request with an invented bearer key is refused, and each refusal used to append its own
audit row: an attacker could grow the append-only table by a row per request, forever. Now the
refusals of one kind (same workspace, actor, channel and reason: for invented keys, one kind
per channel) write at most one row per ``window``; the row says how many refusals it stands
for (``detail.refusals``: itself and those counted since the previous row of its kind). The
table then grows with time, not with the attacker's request rate: at most one row per kind
per window per process.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from datetime import datetime, timedelta

REFUSAL_WINDOW = timedelta(minutes=1)


class RefusalTally:
    """Counts refusals by kind and says when one should be written down."""

    def __init__(self, window: timedelta = REFUSAL_WINDOW) -> None:
        self.window = window
        self._lock = threading.Lock()
        self._written: dict[Hashable, datetime] = {}
        self._counted: dict[Hashable, int] = {}

    def count(self, kind: Hashable, now: datetime) -> int | None:
        """Count one refusal of ``kind``. Returns how many refusals an audit row written now
        stands for, or None when the last row of this kind is younger than the window."""
        with self._lock:
            self._counted[kind] = self._counted.get(kind, 0) + 1
            last = self._written.get(kind)
            if last is not None and now - last < self.window:
                return None
            self._written[kind] = now
            return self._counted.pop(kind)
