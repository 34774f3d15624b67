"""The embedding lane on PostgreSQL: the queue of pending memories and the stored vectors.

The vectors in ``memories.embedding`` are the only copy (no file cache as on SQLite), but
``contexts.vector_generation`` still goes up whenever a context's searchable vectors change,
so anything that caches per generation (now or later) stays correct on both backends.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from psycopg import Connection
from psycopg.rows import DictRow

from kioku.storage.postgres.codec import encode_vector
from kioku.storage.postgres.connection import ALL_WORKSPACES, PostgresDatabase
from kioku.storage.records import EmbeddingJob, embedding_text


class PostgresEmbeddingLane:
    """Mixed into ``PostgresStore``."""

    db: PostgresDatabase

    def pending_embeddings(self, model: str, limit: int) -> list[EmbeddingJob]:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            rows = conn.execute(
                "SELECT m.id, m.workspace_id, m.context_id, m.summary, m.content FROM memories m "
                "JOIN contexts c ON c.id = m.context_id AND c.workspace_id = m.workspace_id "
                "WHERE m.embedding_status = 'pending' AND m.deleted_at IS NULL "
                "AND (c.embedding_model IS NULL OR c.embedding_model = %s) "
                "ORDER BY m.seq LIMIT %s",
                (model, limit),
            ).fetchall()
        return [
            EmbeddingJob(
                r["id"],
                r["workspace_id"],
                r["context_id"],
                embedding_text(r["summary"], r["content"]),
            )
            for r in rows
        ]

    def store_embeddings(
        self,
        workspace_id: str,
        context_id: str,
        model: str,
        items: Sequence[tuple[str, np.ndarray]],
    ) -> int:
        if not items:
            return 0
        dim = int(items[0][1].shape[0])
        with self.db.transaction(workspace_id) as conn:
            # FOR UPDATE: two workers storing a context's first vectors agree on one model.
            context = conn.execute(
                "SELECT embedding_model, embedding_dim FROM contexts "
                "WHERE workspace_id = %s AND id = %s FOR UPDATE",
                (workspace_id, context_id),
            ).fetchone()
            if context is None:
                return 0
            if context["embedding_model"] is None:
                conn.execute(
                    "UPDATE contexts SET embedding_model = %s, embedding_dim = %s "
                    "WHERE workspace_id = %s AND id = %s",
                    (model, dim, workspace_id, context_id),
                )
            elif context["embedding_model"] != model or context["embedding_dim"] != dim:
                return 0  # never mix models in one context; `kioku reembed` switches explicitly
            landed = 0
            for memory_id, vector in items:
                if int(vector.shape[0]) != dim:
                    continue  # one dimension per context, as the search leg assumes
                landed += conn.execute(
                    "UPDATE memories SET embedding = %s::vector, embedding_model = %s, "
                    "embedding_status = 'ready' WHERE workspace_id = %s AND context_id = %s "
                    "AND id = %s AND embedding_status = 'pending' AND deleted_at IS NULL",
                    (encode_vector(vector), model, workspace_id, context_id, memory_id),
                ).rowcount
            if landed:
                self._bump_generation(conn, workspace_id, context_id)
        return landed

    def mark_embedding_failed(self, workspace_id: str, memory_ids: Sequence[str]) -> None:
        with self.db.transaction(workspace_id) as conn:
            conn.execute(
                "UPDATE memories SET embedding_status = 'failed' WHERE workspace_id = %s "
                "AND embedding_status = 'pending' AND id = ANY(%s)",
                (workspace_id, list(memory_ids)),
            )

    def reset_embeddings(self, workspace_id: str, context_id: str) -> int:
        with self.db.transaction(workspace_id) as conn:
            conn.execute(
                "UPDATE contexts SET embedding_model = NULL, embedding_dim = NULL "
                "WHERE workspace_id = %s AND id = %s",
                (workspace_id, context_id),
            )
            count = conn.execute(
                "UPDATE memories SET embedding = NULL, embedding_model = NULL, "
                "embedding_status = 'pending' WHERE workspace_id = %s AND context_id = %s "
                "AND deleted_at IS NULL",
                (workspace_id, context_id),
            ).rowcount
            self._bump_generation(conn, workspace_id, context_id)
        return count

    def pending_count(self) -> int:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            row = conn.execute(
                "SELECT count(*) AS n FROM memories WHERE embedding_status = 'pending'"
            ).fetchone()
        assert row is not None
        return row["n"]

    def _bump_generation(
        self, conn: Connection[DictRow], workspace_id: str, context_id: str
    ) -> int:
        row = conn.execute(
            "UPDATE contexts SET vector_generation = vector_generation + 1 "
            "WHERE workspace_id = %s AND id = %s RETURNING vector_generation",
            (workspace_id, context_id),
        ).fetchone()
        return 0 if row is None else row["vector_generation"]
