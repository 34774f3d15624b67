"""Conversions between SQLite values and records: UTC timestamps, JSON columns, vectors."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

import numpy as np

from kioku.storage.records import ContextRow, MemoryRow

MEMORY_COLUMNS = (
    "id, workspace_id, context_id, summary, content, type, tags, importance, delivery_mode, "
    "trigger_from, trigger_until, source_type, source_uri, trust_tier, embedding_status, "
    "access_count, last_accessed_at, superseded_by, created_at, updated_at, deleted_at, "
    "instruction_like, external_id, external_owner, tainted, thread, thread_position"
)


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


def encode_vector(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def decode_vector(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype="<f4")


def memory_from_row(row: sqlite3.Row) -> MemoryRow:
    return MemoryRow(
        id=row["id"],
        workspace_id=row["workspace_id"],
        context_id=row["context_id"],
        summary=row["summary"],
        content=row["content"],
        type=row["type"],
        tags=json.loads(row["tags"]),
        importance=row["importance"],
        delivery_mode=row["delivery_mode"],
        trigger_from=decode_time(row["trigger_from"]),
        trigger_until=decode_time(row["trigger_until"]),
        source_type=row["source_type"],
        source_uri=row["source_uri"],
        trust_tier=row["trust_tier"],
        embedding_status=row["embedding_status"],
        access_count=row["access_count"],
        last_accessed_at=decode_time(row["last_accessed_at"]),
        superseded_by=row["superseded_by"],
        created_at=decode_required_time(row["created_at"]),
        updated_at=decode_required_time(row["updated_at"]),
        deleted_at=decode_time(row["deleted_at"]),
        instruction_like=None if row["instruction_like"] is None else bool(row["instruction_like"]),
        external_id=row["external_id"],
        external_owner=row["external_owner"],
        tainted=bool(row["tainted"]),
        thread=row["thread"],
        thread_position=row["thread_position"],
    )


def context_from_row(row: sqlite3.Row, memory_count: int | None = None) -> ContextRow:
    return ContextRow(
        id=row["id"],
        workspace_id=row["workspace_id"],
        name=row["name"],
        description=row["description"],
        trust_tier=row["trust_tier"],
        sleep_mode=row["sleep_mode"],
        search_config=json.loads(row["search_config"]),
        embedding_model=row["embedding_model"],
        embedding_dim=row["embedding_dim"],
        created_at=decode_required_time(row["created_at"]),
        updated_at=decode_required_time(row["updated_at"]),
        memory_count=memory_count,
        connector_id=row["connector_id"],
    )
