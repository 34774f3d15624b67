"""SQLite's timestamps: fixed-width UTC text, so string order is time order."""

from __future__ import annotations

from datetime import UTC, datetime


def encode_time(value: datetime) -> str:
    """Fixed-width UTC text, so string order is time order."""
    if value.tzinfo is None:
        raise ValueError("naive datetimes are not stored")
    # isoformat, not strftime: %Y does not zero-pad years below 1000 on glibc.
    return value.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"


def encode_optional_time(value: datetime | None) -> str | None:
    return None if value is None else encode_time(value)


def decode_time(value: str | None) -> datetime | None:
    # fromisoformat is ~10x faster than strptime and reads the trailing "Z" (Python 3.11+).
    return None if value is None else datetime.fromisoformat(value)


def decode_required_time(value: str) -> datetime:
    """Decode a NOT NULL timestamp column."""
    return datetime.fromisoformat(value)
