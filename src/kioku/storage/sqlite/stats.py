"""Counts per lane of one context on SQLite (``stats``): a few aggregate queries, no text read."""

from __future__ import annotations

from datetime import datetime

from kioku.storage.records import ContextCounts
from kioku.storage.sqlite.codec import encode_time
from kioku.storage.sqlite.connection import SQLiteDatabase

_MEMORY_COUNTS = """
SELECT
    count(*) FILTER (WHERE deleted_at IS NULL AND superseded_by IS NULL),
    count(*) FILTER (WHERE deleted_at IS NOT NULL),
    count(*) FILTER (WHERE deleted_at IS NULL AND superseded_by IS NOT NULL),
    count(*) FILTER (WHERE deleted_at IS NULL AND delivery_mode = 'always'),
    count(*) FILTER (WHERE deleted_at IS NULL AND delivery_mode = 'on_trigger'),
    count(*) FILTER (WHERE deleted_at IS NULL AND trust_tier = 'external'),
    count(*) FILTER (WHERE deleted_at IS NULL AND embedding_status = 'ready'),
    count(*) FILTER (WHERE deleted_at IS NULL AND embedding_status = 'pending'),
    count(*) FILTER (WHERE deleted_at IS NULL AND embedding_status = 'failed')
FROM memories WHERE workspace_id = ? AND context_id = ?
"""


class SQLiteStatsLane:
    """Mixed into ``SQLiteStore``."""

    db: SQLiteDatabase

    def context_counts(self, workspace_id: str, context_id: str, now: datetime) -> ContextCounts:
        scope = (workspace_id, context_id)
        with self.db.read() as conn:
            memories = conn.execute(_MEMORY_COUNTS, scope).fetchone()
            state_keys = conn.execute(
                "SELECT count(*) FROM agent_states WHERE workspace_id = ? AND context_id = ? "
                "AND (expires_at IS NULL OR expires_at > ?)",
                (*scope, encode_time(now)),
            ).fetchone()[0]
            votes = conn.execute(
                "SELECT count(*) FILTER (WHERE helpful = 1), count(*) FILTER (WHERE helpful = 0) "
                "FROM retrieval_feedback WHERE workspace_id = ? AND context_id = ?",
                scope,
            ).fetchone()
        live, deleted, superseded, pinned, triggered, external, ready, pending, failed = memories
        return ContextCounts(
            live=live,
            deleted=deleted,
            superseded=superseded,
            pinned=pinned,
            triggered=triggered,
            external=external,
            embedding={"ready": ready, "pending": pending, "failed": failed},
            state_keys=state_keys,
            helpful=votes[0],
            unhelpful=votes[1],
        )
