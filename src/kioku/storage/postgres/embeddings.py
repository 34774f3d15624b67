"""The embedding area on PostgreSQL (the rest: ``shared/embeddings.py``): the stored vectors
are the only copy (no file cache as on SQLite), written in one statement per batch.

The ``embedding`` column has no fixed dimension (each context may use its own model), and an
HNSW index needs one. So there is one partial expression index per dimension in use,

    CREATE INDEX ix_memories_hnsw_<dim> ON memories
        USING hnsw ((l2_normalize(embedding)::halfvec(<dim>)) halfvec_cosine_ops)
        WHERE vector_dims(embedding) = <dim>

made at run time the first time vectors of that dimension are stored (no migration can know
the dimensions in advance). The search leg writes the same cast and the same predicate, with
the dimension as a literal, so the planner can match the index (see ``vector_leg.py``).

The index holds the vectors at half precision (``halfvec``, migration 0016): half the pages
of a float32 graph, so a walk at a million memories reads half as much, for the same
recall@10 against exact search (docs/benchmarks-postgres-scale.md). They are normalised
first (``l2_normalize``: cosine does not change, and every component fits a half float,
whose range ends at 65,504: a raw cast would refuse to store a vector with a larger one).
The column keeps float32, and the leg's scores are computed from it. ``halfvec`` indexes up
to 4,000 dimensions (``vector``: 2,000).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from psycopg import Connection, errors, sql
from psycopg.rows import DictRow

from kioku.storage.postgres.codec import encode_vector
from kioku.storage.postgres.connection import ALL_WORKSPACES, PostgresDatabase
from kioku.storage.postgres.dialect import PostgresTransaction
from kioku.storage.shared.database import Transaction
from kioku.storage.shared.embeddings import EmbeddingStore, Vectors, bump_generation

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
            "((l2_normalize(embedding)::halfvec({dim})) halfvec_cosine_ops) "
            "WITH (m = {m}, ef_construction = {ef}) WHERE vector_dims(embedding) = {dim}"
        ).format(
            name=sql.Identifier(vector_index_name(dim)),
            dim=sql.Literal(dim),
            m=sql.Literal(HNSW_M),
            ef=sql.Literal(HNSW_EF_CONSTRUCTION),
        )
    )


class PostgresEmbeddingArea(EmbeddingStore):
    """Mixed into ``PostgresStore``: the HNSW index per dimension, and the batched vector
    write (the rest of the area: ``shared/embeddings.py``)."""

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

    def _prepare_vectors(self, dim: int) -> None:
        self.ensure_vector_index(dim)

    def _land_vectors(
        self, tx: Transaction, workspace_id: str, context_id: str, model: str, items: Vectors
    ) -> int:
        # One dimension per context, as the search leg assumes: other vectors are dropped.
        dim = int(items[0][1].shape[0])
        kept = [(memory_id, v) for memory_id, v in items if int(v.shape[0]) == dim]
        # One statement for the batch (one round trip, not one per vector).
        landed = tx.execute(
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
            bump_generation(tx, workspace_id, context_id)
        return landed

    def _bump_generation(
        self, conn: Connection[DictRow], workspace_id: str, context_id: str
    ) -> int:
        return bump_generation(PostgresTransaction(conn), workspace_id, context_id)
