"""Claims: background jobs and leased embedding work, safe across replicas (migration 0005)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from kioku.storage.records import EmbeddingJob, embedding_text
from kioku.storage.shared.database import ALL_WORKSPACES, Database


def job_from_row(row: Any) -> EmbeddingJob:
    """A row of a memory's id, workspace_id, context_id, summary and content, as a job."""
    return EmbeddingJob(
        row["id"], row["workspace_id"], row["context_id"],
        embedding_text(row["summary"], row["content"]),
    )  # fmt: skip


class JobStore(Protocol):
    """Claim primitives: what several replicas on one database must not do twice. Each backend
    writes its own ``claim_embeddings`` (PostgreSQL skips rows another replica has locked)."""

    sql: Database

    def claim_job(self, name: str, holder: str, now: datetime, until: datetime) -> bool:
        """Win the background job ``name`` until ``until``; ``False`` while another holder's
        (or an earlier) claim has not run out. Of concurrent claimers exactly one wins."""
        d = self.sql.dialect
        with self.sql.write(ALL_WORKSPACES) as tx:
            # One conditional upsert: ON CONFLICT DO UPDATE re-checks the WHERE on the row's
            # newest version, so of several claimers exactly one gets a row back.
            row = tx.execute(
                "INSERT INTO job_claims (name, holder, claimed_at, claimed_until) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET "
                "holder = excluded.holder, claimed_at = excluded.claimed_at, "
                "claimed_until = excluded.claimed_until, runs = job_claims.runs + 1 "
                "WHERE job_claims.claimed_until <= excluded.claimed_at RETURNING name",
                (name, holder, d.time(now), d.time(until)),
            ).fetchone()
        return row is not None

    def release_embeddings(self, workspace_id: str, memory_ids: Sequence[str]) -> None:
        """End the lease on these memories (still pending): the next claim takes them again.
        For a worker whose batch failed on a transient error (a deadlock, a lost connection),
        so the memories are retried now rather than when the lease runs out."""
        if not memory_ids:
            return
        ids, params = self.sql.dialect.any("id", memory_ids)
        with self.sql.write(workspace_id) as tx:
            tx.execute(
                "UPDATE memories SET embedding_lease_until = NULL WHERE workspace_id = %s "
                f"AND embedding_status = 'pending' AND {ids}",
                (workspace_id, *params),
            )

    def claim_embeddings(
        self, model: str, limit: int, now: datetime, until: datetime
    ) -> list[EmbeddingJob]:
        """Like ``pending_embeddings``, but leased to the caller until ``until``: no other
        claim returns these memories before then (a crashed worker's lease just runs out).
        Taken round robin across workspaces, oldest first within each: every workspace's
        oldest claimable memory comes before any workspace's second, so one tenant's backlog
        delays another tenant's memory by at most one claim."""
        ...
