"""Where "now" comes from. Services take a clock so expiry can be tested without sleeping."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)
