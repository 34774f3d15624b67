"""Counts per lane of one context on PostgreSQL (``stats``): aggregates only, no text read."""

from __future__ import annotations

from datetime import datetime

from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.records import ContextCounts

_COUNTS = """
SELECT
    count(*) FILTER (WHERE deleted_at IS NULL AND superseded_by IS NULL) AS live,
    count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted,
    count(*) FILTER (WHERE deleted_at IS NULL AND superseded_by IS NOT NULL) AS superseded,
    count(*) FILTER (WHERE deleted_at IS NULL AND delivery_mode = 'always') AS pinned,
    count(*) FILTER (WHERE deleted_at IS NULL AND delivery_mode = 'on_trigger') AS triggered,
    count(*) FILTER (WHERE deleted_at IS NULL AND trust_tier = 'external') AS external,
    count(*) FILTER (WHERE deleted_at IS NULL AND embedding_status = 'ready') AS ready,
    count(*) FILTER (WHERE deleted_at IS NULL AND embedding_status = 'pending') AS pending,
    count(*) FILTER (WHERE deleted_at IS NULL AND embedding_status = 'failed') AS failed,
    (SELECT count(*) FROM agent_states s WHERE s.workspace_id = %(ws)s
        AND s.context_id = %(ctx)s AND (s.expires_at IS NULL OR s.expires_at > %(now)s))
        AS state_keys,
    (SELECT count(*) FROM retrieval_feedback f WHERE f.workspace_id = %(ws)s
        AND f.context_id = %(ctx)s AND f.helpful) AS helpful,
    (SELECT count(*) FROM retrieval_feedback f WHERE f.workspace_id = %(ws)s
        AND f.context_id = %(ctx)s AND NOT f.helpful) AS unhelpful
FROM memories WHERE workspace_id = %(ws)s AND context_id = %(ctx)s
"""


class PostgresStatsLane:
    """Mixed into ``PostgresStore``."""

    db: PostgresDatabase

    def context_counts(self, workspace_id: str, context_id: str, now: datetime) -> ContextCounts:
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(_COUNTS, {"ws": workspace_id, "ctx": context_id, "now": now})
            counts = row.fetchone()
        assert counts is not None
        return ContextCounts(
            live=counts["live"],
            deleted=counts["deleted"],
            superseded=counts["superseded"],
            pinned=counts["pinned"],
            triggered=counts["triggered"],
            external=counts["external"],
            embedding={
                "ready": counts["ready"],
                "pending": counts["pending"],
                "failed": counts["failed"],
            },
            state_keys=counts["state_keys"],
            helpful=counts["helpful"],
            unhelpful=counts["unhelpful"],
        )
