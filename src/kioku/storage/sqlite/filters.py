"""SQLite's spelling of the memory filter (``?`` placeholders) and statement-sized id lists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kioku.storage.records import MemoryFilter
from kioku.storage.shared.filters import memory_filter
from kioku.storage.sqlite.dialect import SQLiteDialect, chunked, native

__all__ = ["chunked", "filter_sql", "placeholders"]

_DIALECT = SQLiteDialect()


def placeholders(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def filter_sql(
    workspace_id: str, context_ids: Sequence[str], flt: MemoryFilter, *, by_rowid: bool = False
) -> tuple[str, list[Any]]:
    """Build the WHERE clause (``shared.filters.memory_filter``); the workspace scope first.

    ``by_rowid``: the caller already names the rows (``m.seq IN ...``); the scope columns are
    then prefixed with ``+`` so SQLite looks the rows up by key instead of scanning the
    context's index.
    """
    where, params = memory_filter(
        _DIALECT, workspace_id, context_ids, flt, scope_prefix="+" if by_rowid else ""
    )
    return native(where), params
