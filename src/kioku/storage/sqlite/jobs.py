"""Leased embedding work on SQLite (the rest of the claims: ``shared/jobs.py``)."""

from __future__ import annotations

from datetime import datetime

from kioku.storage.records import EmbeddingJob
from kioku.storage.shared.jobs import JobStore, job_from_row
from kioku.storage.sqlite.codec import encode_time
from kioku.storage.sqlite.connection import SQLiteDatabase


class SQLiteJobArea(JobStore):
    """``JobStore`` on SQLite."""

    db: SQLiteDatabase

    def claim_embeddings(
        self, model: str, limit: int, now: datetime, until: datetime
    ) -> list[EmbeddingJob]:
        with self.db.write() as conn:
            # Round robin across workspaces: each workspace's pending memories are numbered
            # oldest first (its turn), and the claim takes turn 1 of every workspace before
            # turn 2 of any, so one tenant's backlog never delays another's next memory by
            # more than one batch.
            rows = conn.execute(
                "UPDATE memories SET embedding_lease_until = ? WHERE seq IN ("
                "SELECT seq FROM (SELECT m.seq, row_number() OVER ("
                "PARTITION BY m.workspace_id ORDER BY m.seq) AS turn "
                "FROM memories m JOIN contexts c ON c.id = m.context_id "
                "AND c.workspace_id = m.workspace_id WHERE m.embedding_status = 'pending' "
                "AND m.deleted_at IS NULL AND (c.embedding_model IS NULL OR c.embedding_model = ?) "
                "AND (m.embedding_lease_until IS NULL OR m.embedding_lease_until <= ?)) "
                "ORDER BY turn, seq LIMIT ?) "
                "RETURNING seq, id, workspace_id, context_id, summary, content",
                (encode_time(until), model, encode_time(now), limit),
            ).fetchall()
        rows = sorted(rows, key=lambda row: row["seq"])  # RETURNING has no order
        return [job_from_row(row) for row in rows]
