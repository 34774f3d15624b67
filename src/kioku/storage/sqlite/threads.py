"""Thread places on SQLite (``ix_memories_thread``)."""

from __future__ import annotations

from collections.abc import Sequence

from kioku.storage.records import MemoryFilter
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.filters import chunked, filter_sql, placeholders


class SQLiteThreadLane:
    """Mixed into ``SQLiteStore``: the ``ThreadStore`` primitives."""

    db: SQLiteDatabase

    def thread_tails(
        self, workspace_id: str, context_id: str, threads: Sequence[str]
    ) -> dict[str, int]:
        conn = self.db.connection()
        tails: dict[str, int] = {}
        for chunk in chunked(list(dict.fromkeys(threads))):
            rows = conn.execute(
                "SELECT thread, max(thread_position) FROM memories "
                "WHERE workspace_id = ? AND context_id = ? "
                f"AND thread IN ({placeholders(chunk)}) GROUP BY thread",
                (workspace_id, context_id, *chunk),
            ).fetchall()
            tails.update({row[0]: row[1] for row in rows})
        return tails

    def thread_neighbours(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        memory_ids: Sequence[str],
        flt: MemoryFilter,
    ) -> list[tuple[str, str]]:
        if not context_ids:
            return []
        where, params = filter_sql(workspace_id, context_ids, flt)
        conn = self.db.connection()
        pairs: list[tuple[str, str]] = []
        for chunk in chunked(list(memory_ids)):
            rows = conn.execute(
                f"SELECT c.id, ({_nearest('<', 'DESC', where)}), "
                f"({_nearest('>', 'ASC', where)}) FROM memories c "
                f"WHERE c.workspace_id = ? AND c.id IN ({placeholders(chunk)}) "
                "AND c.thread IS NOT NULL",
                (*params, *params, workspace_id, *chunk),
            ).fetchall()
            pairs.extend((row[0], other) for row in rows for other in row[1:] if other)
        return pairs


def _nearest(compare: str, order: str, where: str) -> str:
    """The id of the memory just before (``<``, ``DESC``) or after a candidate ``c`` in its
    thread, among those ``where`` lets through (a gap in the positions is no obstacle)."""
    return (
        "SELECT m.id FROM memories m WHERE m.context_id = c.context_id "
        f"AND m.thread = c.thread AND m.thread_position {compare} c.thread_position AND {where} "
        f"ORDER BY m.thread_position {order} LIMIT 1"
    )
