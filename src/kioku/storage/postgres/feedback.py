"""The feedback lane on PostgreSQL: append-only events (triggers refuse UPDATE, DELETE and
TRUNCATE; only the purge cascade removes rows)."""

from __future__ import annotations

from typing import Any

from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.records import FeedbackRow, NewFeedback

_COLUMNS = (
    "id, seq, workspace_id, context_id, memory_id, helpful, query, note, actor, channel, created_at"
)


def _feedback_from_row(row: dict[str, Any]) -> FeedbackRow:
    return FeedbackRow(**row)


class PostgresFeedbackLane:
    """Mixed into ``PostgresStore``: append and read feedback events. There is no update path."""

    db: PostgresDatabase

    def insert_feedback(self, workspace_id: str, event: NewFeedback) -> FeedbackRow | None:
        with self.db.transaction(workspace_id) as conn:
            # One statement checks the memory is live in this workspace and context and
            # appends; FOR SHARE holds off a concurrent forget or purge until the commit.
            row = conn.execute(
                "WITH live AS (SELECT 1 FROM memories WHERE workspace_id = %s "
                "AND context_id = %s AND id = %s AND deleted_at IS NULL FOR SHARE) "
                "INSERT INTO retrieval_feedback (id, workspace_id, context_id, memory_id, "
                "helpful, query, note, actor, channel, created_at) "
                "SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s FROM live "
                f"RETURNING {_COLUMNS}",
                (
                    workspace_id, event.context_id, event.memory_id,
                    event.id, workspace_id, event.context_id, event.memory_id, event.helpful,
                    event.query, event.note, event.actor, event.channel, event.created_at,
                ),
            ).fetchone()  # fmt: skip
        return None if row is None else _feedback_from_row(row)

    def list_feedback(
        self,
        workspace_id: str,
        context_id: str,
        memory_id: str | None,
        before_seq: int | None,
        limit: int,
    ) -> list[FeedbackRow]:
        where = "workspace_id = %s AND context_id = %s"
        params: list[object] = [workspace_id, context_id]
        if memory_id is not None:
            where += " AND memory_id = %s"
            params.append(memory_id)
        if before_seq is not None:
            where += " AND seq < %s"
            params.append(before_seq)
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM retrieval_feedback WHERE {where} "
                "ORDER BY seq DESC LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [_feedback_from_row(row) for row in rows]
