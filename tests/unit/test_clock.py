"""Row stamps from the one clock: distinct while it stands still, following it when it moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kioku.clock import Stamps

T = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
US = timedelta(microseconds=1)


def test_a_clock_that_stands_still_still_gives_distinct_increasing_stamps() -> None:
    stamps = Stamps()
    assert [stamps.take(T) for _ in range(3)] == [T, T + US, T + 2 * US]


def test_a_batch_reserves_one_stamp_per_row() -> None:
    stamps = Stamps()
    first = stamps.take(T, count=5)
    assert first == T and stamps.take(T) == T + 5 * US


def test_a_moving_clock_is_followed_forward_and_back() -> None:
    stamps = Stamps()
    stamps.take(T)
    later = T + timedelta(days=1)
    assert stamps.take(later) == later
    earlier = T - timedelta(days=30)  # dated writes (the eval gate) go back in time
    assert stamps.take(earlier) == earlier
    assert stamps.take(earlier) == earlier + US
