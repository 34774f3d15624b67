"""The rows both engines read alike: a memory and a context, decoded through the dialect."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, LiteralString

from kioku.storage.records import ContextRow, MemoryRow
from kioku.storage.shared.database import Dialect

MEMORY_COLUMNS: LiteralString = (
    "id, workspace_id, context_id, summary, content, type, tags, importance, delivery_mode, "
    "trigger_from, trigger_until, source_type, source_uri, trust_tier, embedding_status, "
    "access_count, last_accessed_at, superseded_by, created_at, updated_at, deleted_at, "
    "instruction_like, external_id, external_owner, tainted, thread, thread_position"
)
"""The select list of a ``MemoryRow`` (unqualified names)."""
MEMORY_FIELDS = tuple(MEMORY_COLUMNS.split(", "))
assert {field.name for field in fields(MemoryRow)} == set(MEMORY_FIELDS)

_CONTEXT_FIELDS = tuple(field.name for field in fields(ContextRow) if field.name != "memory_count")


def memory_from_row(d: Dialect, row: Any) -> MemoryRow:
    """A row holding at least ``MEMORY_COLUMNS`` (a sqlite3.Row or a psycopg dict row)."""
    values = {name: row[name] for name in MEMORY_FIELDS}
    values["tags"] = d.read_json(values["tags"])
    for key in ("created_at", "updated_at"):
        values[key] = d.read_time(values[key])
    for key in ("trigger_from", "trigger_until", "last_accessed_at", "deleted_at"):
        values[key] = d.read_optional_time(values[key])
    if values["instruction_like"] is not None:  # SQLite stores booleans as 0/1
        values["instruction_like"] = bool(values["instruction_like"])
    values["tainted"] = bool(values["tainted"])
    return MemoryRow(**values)


def context_from_row(d: Dialect, row: Any, memory_count: int | None = None) -> ContextRow:
    """A ``contexts`` row (``SELECT *`` or wider) and, for listings, its live memory count."""
    values = {name: row[name] for name in _CONTEXT_FIELDS}
    values["search_config"] = d.read_json(values["search_config"])
    for key in ("created_at", "updated_at"):
        values[key] = d.read_time(values[key])
    return ContextRow(**values, memory_count=memory_count)
