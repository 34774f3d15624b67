"""The embedding lane on PostgreSQL: the queue of pending memories and the stored vectors.

The vectors in ``memories.embedding`` are the only copy (no file cache as on SQLite), but
``contexts.vector_generation`` still goes up whenever a context's searchable vectors change,
so anything that caches per generation (now or later) stays correct on both backends.

The ``embedding`` column has no fixed dimension (each context may use its own model), and an
HNSW index needs one. So there is one partial expression index per dimension in use,

    CREATE INDEX ix_memories_hnsw_<dim> ON memories
        USING hnsw ((embedding::vector(<dim>)) vector_cosine_ops)
        WHERE vector_dims(embedding) = <dim>

made at run time the first time vectors of that dimension are stored (no migration can know
the dimensions in advance). The search leg writes the same cast and the same predicate, with
the dimension as a literal, so the planner can match the index (see ``search.py``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from psycopg import Connection, errors, sql
from psycopg.rows import DictRow

from kioku.storage.postgres.codec import encode_vector
from kioku.storage.postgres.connection import ALL_WORKSPACES, PostgresDatabase
from kioku.storage.records import EmbeddingJob, EmbeddingQueue, embedding_text

log = logging.getLogger(__name__)

HNSW_M = 16
"""Graph degree (pgvector's default)."""
HNSW_EF_CONSTRUCTION = 64
"""Candidate list while building (pgvector's default)."""
_INDEX_LOCK = 0x6B696F6B  # pg_advisory_xact_lock key space: "kiok"


def vector_index_name(dim: int) -> str:
    """The name of the HNSW index over the memories of dimension ``dim``."""
    return f"ix_memories_hnsw_{int(dim)}"


def vector_index_exists(conn: Connection[DictRow], dim: int) -> bool:
    """Whether the HNSW index for ``dim`` exists (and is valid) in the current schema."""
    row = conn.execute(
        "SELECT i.indisvalid AS valid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
        "WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace",
        (vector_index_name(dim),),
    ).fetchone()
    return row is not None and bool(row["valid"])


def create_vector_index(conn: Connection[Any], dim: int) -> None:
    """``CREATE INDEX IF NOT EXISTS`` the HNSW index for ``dim``, in the caller's transaction.

    It holds a SHARE lock on ``memories`` (writes wait) until that transaction ends: cheap the
    first time a dimension is used (few rows to index), long on a table already full of
    vectors of that dimension (a bulk load builds it once, after the load: see the benchmark).
    """
    dim = int(dim)
    if dim <= 0:
        raise ValueError("a vector dimension is positive")
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON memories USING hnsw "
            "((embedding::vector({dim})) vector_cosine_ops) "
            "WITH (m = {m}, ef_construction = {ef}) WHERE vector_dims(embedding) = {dim}"
        ).format(
            name=sql.Identifier(vector_index_name(dim)),
            dim=sql.Literal(dim),
            m=sql.Literal(HNSW_M),
            ef=sql.Literal(HNSW_EF_CONSTRUCTION),
        )
    )


class PostgresEmbeddingLane:
    """Mixed into ``PostgresStore``."""

    db: PostgresDatabase
    _indexed_dims: set[int] | None = None
    _index_guard = threading.Lock()

    def ensure_vector_index(self, dim: int) -> bool:
        """Make sure the HNSW index for ``dim`` exists; ``False`` if it could not be made.

        Checked once per dimension per process. Creation runs in its own transaction, under
        an advisory lock, before the vectors are written: two workers storing the first
        vectors of a dimension then never hold SHARE locks while waiting for each other's
        row locks. Without the privilege to create it (a role that does not own the table),
        search stays exact: logged, not raised.
        """
        dim = int(dim)
        with self._index_guard:
            if self._indexed_dims is None:
                self._indexed_dims = set()
            if dim in self._indexed_dims:
                return True
        try:
            with self.db.transaction(ALL_WORKSPACES) as conn:
                if not vector_index_exists(conn, dim):
                    conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_INDEX_LOCK, dim))
                    create_vector_index(conn, dim)
        except errors.InsufficientPrivilege:
            log.warning(
                "cannot create the HNSW index for %d-dimensional vectors (not the table's "
                "owner): vector search stays exact; create it as the owner: %s",
                dim,
                vector_index_name(dim),
            )
            return False
        with self._index_guard:
            assert self._indexed_dims is not None
            self._indexed_dims.add(dim)
        return True

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
        self.ensure_vector_index(dim)
        with self.db.transaction(workspace_id) as conn:
            # Two workers storing a context's first vectors agree on one model. NO KEY UPDATE,
            # not UPDATE: the foreign-key checks of concurrent inserts into this context
            # (memories, feedback, edges take KEY SHARE on it) must not queue behind this
            # lock while it waits for memory rows they hold: that was a deadlock.
            context = conn.execute(
                "SELECT embedding_model, embedding_dim FROM contexts "
                "WHERE workspace_id = %s AND id = %s FOR NO KEY UPDATE",
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
            # One dimension per context, as the search leg assumes: other vectors are dropped.
            kept = [(memory_id, v) for memory_id, v in items if int(v.shape[0]) == dim]
            # One statement for the batch (one round trip, not one per vector).
            landed = conn.execute(
                "UPDATE memories m SET embedding = u.vector, embedding_model = %s, "
                "embedding_status = 'ready' "
                "FROM unnest(%s::text[], %s::text[]::vector[]) AS u(id, vector) "
                "WHERE m.workspace_id = %s AND m.context_id = %s AND m.id = u.id "
                "AND m.embedding_status = 'pending' AND m.deleted_at IS NULL",
                (
                    model,
                    [memory_id for memory_id, _ in kept],
                    [encode_vector(vector) for _, vector in kept],
                    workspace_id,
                    context_id,
                ),
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

    def embedding_queue(self) -> EmbeddingQueue:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            row = conn.execute(
                "SELECT count(*) AS depth, min(updated_at) AS oldest FROM memories "
                "WHERE embedding_status = 'pending'"
            ).fetchone()
        assert row is not None
        return EmbeddingQueue(row["depth"], row["oldest"])

    def _bump_generation(
        self, conn: Connection[DictRow], workspace_id: str, context_id: str
    ) -> int:
        row = conn.execute(
            "UPDATE contexts SET vector_generation = vector_generation + 1 "
            "WHERE workspace_id = %s AND id = %s RETURNING vector_generation",
            (workspace_id, context_id),
        ).fetchone()
        return 0 if row is None else row["vector_generation"]
