"""Deterministic delivery on SQLite: the pinned set and trigger windows. No ranking."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from kioku.storage.records import MemoryFilter, MemoryRow
from kioku.storage.sqlite.codec import MEMORY_COLUMNS, encode_time, memory_from_row
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.filters import filter_sql

# The IN lets SQLite walk ix_memories_delivery (workspace, context, mode) instead of every row
# of the context: load_pinned must stay cheap however large the context grows.
_PINNED = (
    "m.delivery_mode IN ('always', 'on_trigger') AND (m.delivery_mode = 'always' OR "
    "(m.trigger_from <= ? AND (m.trigger_until IS NULL OR m.trigger_until > ?)))"
)
_UPCOMING = (
    "m.delivery_mode = 'on_trigger' AND m.trigger_from < ? "
    "AND (m.trigger_until IS NULL OR m.trigger_until > ?)"
)


class SQLiteDeliveryLane:
    """Mixed into ``SQLiteStore``: ``load_pinned`` and ``upcoming`` queries."""

    db: SQLiteDatabase

    def _page(
        self, where: str, params: list[object], order: str, limit: int
    ) -> tuple[list[MemoryRow], int]:
        with self.db.read() as conn:
            total = conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", params)
            count = int(total.fetchone()[0])
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where} ORDER BY {order} LIMIT ?",
                (*params, limit),
            ).fetchall()
        return [memory_from_row(row) for row in rows], count

    def pinned_memories(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        flt: MemoryFilter,
        now: datetime,
        limit: int,
    ) -> tuple[list[MemoryRow], int]:
        where, params = filter_sql(workspace_id, context_ids, flt)
        stamp = encode_time(now)
        return self._page(
            f"{where} AND {_PINNED}",
            [*params, stamp, stamp],
            "m.importance DESC, m.created_at, m.id",
            limit,
        )

    def upcoming_memories(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        flt: MemoryFilter,
        start: datetime,
        end: datetime,
        limit: int,
    ) -> tuple[list[MemoryRow], int]:
        where, params = filter_sql(workspace_id, context_ids, flt)
        return self._page(
            f"{where} AND {_UPCOMING}",
            [*params, encode_time(end), encode_time(start)],
            "m.trigger_from, m.importance DESC, m.id",
            limit,
        )
