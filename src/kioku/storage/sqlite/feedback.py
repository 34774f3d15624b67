"""The feedback lane on SQLite: append-only events (triggers refuse UPDATE and DELETE)."""

from __future__ import annotations

import sqlite3

from kioku.storage.records import FeedbackRow, NewFeedback
from kioku.storage.sqlite.codec import decode_required_time, encode_time
from kioku.storage.sqlite.connection import SQLiteDatabase

_COLUMNS = (
    "id, seq, workspace_id, context_id, memory_id, helpful, query, note, actor, channel, created_at"
)


def _feedback_from_row(row: sqlite3.Row) -> FeedbackRow:
    return FeedbackRow(
        id=row["id"],
        seq=row["seq"],
        workspace_id=row["workspace_id"],
        context_id=row["context_id"],
        memory_id=row["memory_id"],
        helpful=bool(row["helpful"]),
        query=row["query"],
        note=row["note"],
        actor=row["actor"],
        channel=row["channel"],
        created_at=decode_required_time(row["created_at"]),
    )


class SQLiteFeedbackLane:
    """Mixed into ``SQLiteStore``: append and read feedback events. There is no update path."""

    db: SQLiteDatabase

    def insert_feedback(self, workspace_id: str, event: NewFeedback) -> FeedbackRow | None:
        with self.db.write() as conn:
            # The memory must be live, in this workspace and in this context, checked in the
            # same transaction as the insert (a concurrent forget cannot slip between them).
            live = conn.execute(
                "SELECT 1 FROM memories WHERE workspace_id = ? AND context_id = ? AND id = ? "
                "AND deleted_at IS NULL",
                (workspace_id, event.context_id, event.memory_id),
            ).fetchone()
            if live is None:
                return None
            conn.execute(
                "INSERT INTO retrieval_feedback (id, workspace_id, context_id, memory_id, "
                "helpful, query, note, actor, channel, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    event.id, workspace_id, event.context_id, event.memory_id,
                    int(event.helpful), event.query, event.note, event.actor, event.channel,
                    encode_time(event.created_at),
                ),
            )  # fmt: skip
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM retrieval_feedback WHERE id = ?", (event.id,)
            ).fetchone()
        return _feedback_from_row(row)

    def list_feedback(
        self,
        workspace_id: str,
        context_id: str,
        memory_id: str | None,
        before_seq: int | None,
        limit: int,
    ) -> list[FeedbackRow]:
        where = "workspace_id = ? AND context_id = ?"
        params: list[object] = [workspace_id, context_id]
        if memory_id is not None:
            where += " AND memory_id = ?"
            params.append(memory_id)
        if before_seq is not None:
            where += " AND seq < ?"
            params.append(before_seq)
        rows = (
            self.db.connection()
            .execute(
                f"SELECT {_COLUMNS} FROM retrieval_feedback WHERE {where} "
                "ORDER BY seq DESC LIMIT ?",
                (*params, limit),
            )
            .fetchall()
        )
        return [_feedback_from_row(row) for row in rows]
