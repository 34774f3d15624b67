"""The feedback lane: append-only events (the migrations' triggers refuse UPDATE and DELETE;
only the purge cascade removes rows). There is no update path."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from kioku.storage.records import FeedbackRow, NewFeedback
from kioku.storage.shared.database import Database, Dialect, record

COLUMNS = (
    "id, seq, workspace_id, context_id, memory_id, helpful, query, note, actor, channel, created_at"
)


def feedback_from_row(d: Dialect, row: Any) -> FeedbackRow:
    event = record(d, FeedbackRow, row, times=("created_at",))
    return replace(event, helpful=bool(event.helpful))  # SQLite stores 0/1


class FeedbackStore(Protocol):
    """Feedback primitives, written once for both backends: append and read."""

    sql: Database

    def insert_feedback(self, workspace_id: str, event: NewFeedback) -> FeedbackRow | None:
        """Append an event; ``None`` (nothing written) unless the memory is live in that context."""
        d = self.sql.dialect
        with self.sql.write(workspace_id) as tx:
            # One statement checks the memory is live in this workspace and context and
            # appends; the lock (PostgreSQL FOR SHARE, SQLite's write lock) holds off a
            # concurrent forget or purge until the commit.
            row = tx.execute(
                "WITH live AS (SELECT 1 FROM memories WHERE workspace_id = %s "
                f"AND context_id = %s AND id = %s AND deleted_at IS NULL{d.for_share}) "
                "INSERT INTO retrieval_feedback (id, workspace_id, context_id, memory_id, "
                "helpful, query, note, actor, channel, created_at) "
                "SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s FROM live "
                f"RETURNING {COLUMNS}",
                (
                    workspace_id, event.context_id, event.memory_id,
                    event.id, workspace_id, event.context_id, event.memory_id, event.helpful,
                    event.query, event.note, event.actor, event.channel,
                    d.time(event.created_at),
                ),
            ).fetchone()  # fmt: skip
        return None if row is None else feedback_from_row(d, row)

    def list_feedback(
        self,
        workspace_id: str,
        context_id: str,
        memory_id: str | None,
        before_seq: int | None,
        limit: int,
    ) -> list[FeedbackRow]:
        """Newest first, keyset-paginated on the append sequence."""
        where = "workspace_id = %s AND context_id = %s"
        params: list[object] = [workspace_id, context_id]
        if memory_id is not None:
            where += " AND memory_id = %s"
            params.append(memory_id)
        if before_seq is not None:
            where += " AND seq < %s"
            params.append(before_seq)
        with self.sql.read(workspace_id) as tx:
            rows = tx.execute(
                f"SELECT {COLUMNS} FROM retrieval_feedback WHERE {where} "
                "ORDER BY seq DESC LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [feedback_from_row(self.sql.dialect, row) for row in rows]
