"""The rows both engines read and write alike: a memory and a context, through the dialect.

A memory's columns are named here once: what a read selects (``MEMORY_COLUMNS``) and what
every INSERT of a memory writes (``MEMORY_INSERT``, by ``memory_insert``). A new column is a
migration, a field of the records, and its name here (docs/architecture.md, "A new column").
"""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from typing import Any, LiteralString

from kioku.storage.records import ContextRow, MemoryRow, NewMemory
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

MEMORY_INSERT: tuple[str, ...] = (
    "id", "workspace_id", "context_id", "summary", "content", "type", "tags", "importance",
    "delivery_mode", "trigger_from", "trigger_until", "source_type", "source_uri", "trust_tier",
    "created_at", "updated_at", "instruction_like", "external_id", "external_owner", "tainted",
    "thread", "thread_position",
)  # fmt: skip
"""The columns every INSERT of a memory writes from its record, tokens aside (the engine's
``Lexicon`` adds those): remember and batch, a connector's sync, Sleep's summaries, an
import. The rest start at their defaults (``RESTORED``: unless an import brings them)."""
RESTORED = ("embedding_status", "access_count", "last_accessed_at", "superseded_by", "deleted_at")
"""What a stored memory gathered after its INSERT: an import writes it too."""
assert set(MEMORY_FIELDS) == {*MEMORY_INSERT, *RESTORED}

_CONTEXT_FIELDS = tuple(field.name for field in fields(ContextRow) if field.name != "memory_count")


def encode_column(d: Dialect, column: str, value: Any) -> Any:
    """A value for ``UPDATE … SET column = %s``: JSON columns and timestamps encoded."""
    if column in ("tags", "search_config"):
        return d.json(value)
    return d.time(value) if isinstance(value, datetime) else value


def memory_insert(d: Dialect, workspace_id: str, row: NewMemory | MemoryRow) -> dict[str, Any]:
    """One memory's INSERT, column → parameter: ``MEMORY_INSERT`` read from the record (a
    restored ``MemoryRow``: ``RESTORED`` too), encoded for the engine. A new memory is
    updated when it is created."""
    restored = isinstance(row, MemoryRow)
    values: dict[str, Any] = {}
    for column in (*MEMORY_INSERT, *RESTORED) if restored else MEMORY_INSERT:
        if column == "workspace_id":
            value: Any = workspace_id
        elif column == "updated_at" and not restored:
            value = row.created_at
        else:
            value = getattr(row, column)
        values[column] = encode_column(d, column, value)
    return values


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
