"""Claims on SQLite: background jobs and leased embedding work (see migration 0005)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from kioku.storage.records import EmbeddingJob, embedding_text
from kioku.storage.sqlite.codec import encode_time
from kioku.storage.sqlite.connection import SQLiteDatabase


class SQLiteJobLane:
    """Mixed into ``SQLiteStore``."""

    db: SQLiteDatabase

    def claim_job(self, name: str, holder: str, now: datetime, until: datetime) -> bool:
        with self.db.write() as conn:
            # One conditional upsert: of several claimers, exactly one finds the row free.
            row = conn.execute(
                "INSERT INTO job_claims (name, holder, claimed_at, claimed_until) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
                "claimed_at = excluded.claimed_at, claimed_until = excluded.claimed_until, "
                "runs = job_claims.runs + 1 WHERE job_claims.claimed_until <= excluded.claimed_at "
                "RETURNING name",
                (name, holder, encode_time(now), encode_time(until)),
            ).fetchone()
        return row is not None

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
        return [
            EmbeddingJob(
                row["id"],
                row["workspace_id"],
                row["context_id"],
                embedding_text(row["summary"], row["content"]),
            )
            for row in rows
        ]

    def release_embeddings(self, workspace_id: str, memory_ids: Sequence[str]) -> None:
        if not memory_ids:
            return
        marks = ", ".join("?" * len(memory_ids))
        with self.db.write() as conn:
            conn.execute(
                "UPDATE memories SET embedding_lease_until = NULL WHERE workspace_id = ? "
                f"AND embedding_status = 'pending' AND id IN ({marks})",
                (workspace_id, *memory_ids),
            )
