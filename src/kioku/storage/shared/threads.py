"""Threads: where a thread ends, and who sits next to a memory in its thread
(docs/concepts.md, *Threads*; ``ix_memories_thread``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kioku.storage.records import MemoryFilter
from kioku.storage.shared.database import Database, select_among
from kioku.storage.shared.filters import memory_filter


class ThreadStore(Protocol):
    """Thread primitives, written once for both backends. See tests/storage/test_thread_contract."""

    sql: Database

    def thread_tails(
        self, workspace_id: str, context_id: str, threads: Sequence[str]
    ) -> dict[str, int]:
        """The highest position used in each of ``threads`` of the context (forgotten memories
        count too, so a position is never handed out twice); threads with no memory are
        absent."""
        if not threads:
            return {}
        d = self.sql.dialect
        with self.sql.read(workspace_id) as tx:
            rows = select_among(
                tx,
                d,
                "SELECT thread, max(thread_position) AS tail FROM memories "
                "WHERE workspace_id = %s AND context_id = %s AND {among} GROUP BY thread",
                "thread",
                list(dict.fromkeys(threads)),
                before=(workspace_id, context_id),
            )
        tails = {row["thread"]: row["tail"] for row in rows}
        return tails

    def thread_neighbours(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        memory_ids: Sequence[str],
        flt: MemoryFilter,
    ) -> list[tuple[str, str]]:
        """(memory id, neighbour id) for every memory of ``memory_ids`` in a thread and the
        memories just before and just after it (the nearest lower and higher positions) in the
        same context and thread, among those of ``context_ids`` that ``flt`` lets through."""
        if not context_ids or not memory_ids:
            return []
        d = self.sql.dialect
        where, params = memory_filter(d, workspace_id, context_ids, flt)
        with self.sql.read(workspace_id) as tx:
            rows = select_among(
                tx,
                d,
                f"SELECT c.id AS of_id, ({_nearest('<', 'DESC', where)}) AS prev_id, "
                f"({_nearest('>', 'ASC', where)}) AS next_id FROM memories c "
                # By id, not through ``ix_memories_thread`` (SQLite's planner, without
                # statistics, walked every threaded row of the workspace: 3.5 ms at 100k).
                f"WHERE {d.unindexed('c.workspace_id')} = %s AND {{among}} "
                "AND c.thread IS NOT NULL",
                "c.id",
                memory_ids,
                before=(*params, *params, workspace_id),
            )
        return [
            (row["of_id"], other)
            for row in rows
            for other in (row["prev_id"], row["next_id"])
            if other
        ]


def _nearest(compare: str, order: str, where: str) -> str:
    """The id of the memory just before (``<``, ``DESC``) or after a candidate ``c`` in its
    thread, among those ``where`` lets through (a gap in the positions is no obstacle)."""
    return (
        # ``m.thread IS NOT NULL`` said outright lets the planner use the partial index
        # ``ix_memories_thread``: PostgreSQL on fresh statistics otherwise walked the whole
        # context per candidate through another index (18 ms for 98 candidates of 419 rows).
        "SELECT m.id FROM memories m WHERE m.workspace_id = c.workspace_id "
        "AND m.context_id = c.context_id AND m.thread IS NOT NULL AND m.thread = c.thread "
        f"AND m.thread_position {compare} c.thread_position AND {where} "
        f"ORDER BY m.thread_position {order} LIMIT 1"
    )
