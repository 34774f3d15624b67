"""Thread places on PostgreSQL (``ix_memories_thread``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import LiteralString

from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.postgres.filters import filter_sql
from kioku.storage.records import MemoryFilter


class PostgresThreadLane:
    """Mixed into ``PostgresStore``: the ``ThreadStore`` primitives."""

    db: PostgresDatabase

    def thread_tails(
        self, workspace_id: str, context_id: str, threads: Sequence[str]
    ) -> dict[str, int]:
        if not threads:
            return {}
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                "SELECT thread, max(thread_position) AS tail FROM memories "
                "WHERE workspace_id = %s AND context_id = %s AND thread = ANY(%s) "
                "GROUP BY thread",
                (workspace_id, context_id, list(dict.fromkeys(threads))),
            ).fetchall()
        return {row["thread"]: row["tail"] for row in rows}

    def thread_neighbours(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        memory_ids: Sequence[str],
        flt: MemoryFilter,
    ) -> list[tuple[str, str]]:
        if not context_ids or not memory_ids:
            return []
        where, params = filter_sql(workspace_id, context_ids, flt)
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                "SELECT c.id AS of_id, ("
                + _nearest("<", "DESC", where)
                + ") AS before, ("
                + _nearest(">", "ASC", where)
                + ") AS after FROM memories c "
                "WHERE c.workspace_id = %s AND c.id = ANY(%s) AND c.thread IS NOT NULL",
                (*params, *params, workspace_id, list(memory_ids)),
            ).fetchall()
        return [
            (row["of_id"], other)
            for row in rows
            for other in (row["before"], row["after"])
            if other
        ]


def _nearest(compare: LiteralString, order: LiteralString, where: LiteralString) -> LiteralString:
    """The id of the memory just before (``<``, ``DESC``) or after a candidate ``c`` in its
    thread, among those ``where`` lets through (a gap in the positions is no obstacle)."""
    return (
        "SELECT m.id FROM memories m WHERE m.context_id = c.context_id "
        "AND m.thread = c.thread AND m.thread_position "
        + compare
        + " c.thread_position AND "
        + where
        + " ORDER BY m.thread_position "
        + order
        + " LIMIT 1"
    )
