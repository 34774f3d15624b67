"""Conversions between SQLite values and records: UTC timestamps, JSON columns, vectors."""

from __future__ import annotations

import sqlite3

from kioku.storage.records import ContextRow, MemoryRow
from kioku.storage.shared import rows
from kioku.storage.shared.rows import MEMORY_COLUMNS
from kioku.storage.sqlite.dialect import SQLiteDialect, decode_vector, encode_vector
from kioku.storage.sqlite.times import (
    decode_required_time,
    decode_time,
    encode_optional_time,
    encode_time,
)

__all__ = [
    "MEMORY_COLUMNS",
    "context_from_row",
    "decode_required_time",
    "decode_time",
    "decode_vector",
    "encode_optional_time",
    "encode_time",
    "encode_vector",
    "memory_from_row",
]

_DIALECT = SQLiteDialect()


def memory_from_row(row: sqlite3.Row) -> MemoryRow:
    return rows.memory_from_row(_DIALECT, row)


def context_from_row(row: sqlite3.Row, memory_count: int | None = None) -> ContextRow:
    return rows.context_from_row(_DIALECT, row, memory_count)
