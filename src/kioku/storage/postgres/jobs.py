"""Leased embedding work on PostgreSQL, safe across replicas (the rest: ``shared/jobs.py``)."""

from __future__ import annotations

from datetime import datetime

from kioku.storage.postgres.connection import ALL_WORKSPACES, PostgresDatabase
from kioku.storage.records import EmbeddingJob
from kioku.storage.shared.jobs import JobStore, job_from_row


class PostgresJobArea(JobStore):
    """``JobStore`` on PostgreSQL."""

    db: PostgresDatabase

    def claim_embeddings(
        self, model: str, limit: int, now: datetime, until: datetime
    ) -> list[EmbeddingJob]:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            # Round robin across workspaces: each workspace's pending memories are numbered
            # oldest first (its turn), and the claim takes turn 1 of every workspace before
            # turn 2 of any, so one tenant's backlog never delays another's next memory by
            # more than one batch. SKIP LOCKED: a replica claiming at the same instant takes
            # the next rows instead of waiting for (and then re-taking) these; the conditions
            # are repeated on the locked row so a claim committed meanwhile is re-checked.
            rows = conn.execute(
                "WITH ranked AS (SELECT m.workspace_id, m.id, m.seq, row_number() OVER ("
                "PARTITION BY m.workspace_id ORDER BY m.seq) AS turn FROM memories m "
                "JOIN contexts c ON c.id = m.context_id AND c.workspace_id = m.workspace_id "
                "WHERE m.embedding_status = 'pending' AND m.deleted_at IS NULL "
                "AND (c.embedding_model IS NULL OR c.embedding_model = %(model)s) "
                "AND (m.embedding_lease_until IS NULL OR m.embedding_lease_until <= %(now)s)), "
                "picked AS (SELECT m.workspace_id, m.id FROM memories m JOIN ranked r "
                "ON r.workspace_id = m.workspace_id AND r.id = m.id "
                "WHERE m.embedding_status = 'pending' AND m.deleted_at IS NULL "
                "AND (m.embedding_lease_until IS NULL OR m.embedding_lease_until <= %(now)s) "
                "ORDER BY r.turn, r.seq LIMIT %(limit)s FOR UPDATE OF m SKIP LOCKED) "
                "UPDATE memories m SET embedding_lease_until = %(until)s FROM picked "
                "WHERE m.workspace_id = picked.workspace_id AND m.id = picked.id "
                "RETURNING m.seq, m.id, m.workspace_id, m.context_id, m.summary, m.content",
                {"model": model, "now": now, "limit": limit, "until": until},
            ).fetchall()
        rows.sort(key=lambda row: row["seq"])
        return [job_from_row(row) for row in rows]
