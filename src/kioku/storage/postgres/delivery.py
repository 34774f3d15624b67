"""Deterministic delivery on PostgreSQL: the pinned set and trigger windows. No ranking."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import LiteralString

from kioku.storage.postgres.codec import MEMORY_COLUMNS, memory_from_row
from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.postgres.filters import filter_sql
from kioku.storage.records import MemoryFilter, MemoryRow

# The IN lets the planner use ix_memories_delivery (workspace, context, mode), as on SQLite.
_PINNED = (
    "m.delivery_mode IN ('always', 'on_trigger') AND (m.delivery_mode = 'always' OR "
    "(m.trigger_from <= %s AND (m.trigger_until IS NULL OR m.trigger_until > %s)))"
)
_UPCOMING = (
    "m.delivery_mode = 'on_trigger' AND m.trigger_from < %s "
    "AND (m.trigger_until IS NULL OR m.trigger_until > %s)"
)


class PostgresDeliveryLane:
    """Mixed into ``PostgresStore``: ``load_pinned`` and ``upcoming`` queries."""

    db: PostgresDatabase

    def _page(
        self,
        workspace_id: str,
        where: LiteralString,
        params: list[object],
        order: LiteralString,
        limit: int,
    ) -> tuple[list[MemoryRow], int]:
        with self.db.transaction(workspace_id) as conn:
            if limit <= 0:  # no page to window over: count alone
                found = conn.execute(
                    f"SELECT count(*) AS n FROM memories m WHERE {where}", params
                ).fetchone()
                return [], 0 if found is None else found["n"]
            # The total is a window count over the same rows: page and total always agree
            # (SQLite reads both in one snapshot).
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS}, count(*) OVER () AS total FROM memories m "
                f"WHERE {where} ORDER BY {order} LIMIT %s",
                (*params, limit),
            ).fetchall()
        total = rows[0]["total"] if rows else 0
        return [memory_from_row(row) for row in rows], total

    def pinned_memories(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        flt: MemoryFilter,
        now: datetime,
        limit: int,
    ) -> tuple[list[MemoryRow], int]:
        where, params = filter_sql(workspace_id, context_ids, flt)
        return self._page(
            workspace_id,
            f"{where} AND {_PINNED}",
            [*params, now, now],
            'm.importance DESC, m.created_at, m.id COLLATE "C"',
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
            workspace_id,
            f"{where} AND {_UPCOMING}",
            [*params, end, start],
            'm.trigger_from, m.importance DESC, m.id COLLATE "C"',
            limit,
        )
