"""The embedding area in SQL, written once: the queue of memories waiting for a vector, the
one model (and dimension) of a context, and the stored vectors' reads.

``memories.embedding`` is the source of truth on both engines; ``contexts.vector_generation``
goes up whenever a context's searchable vectors change, so anything that caches per
generation (SQLite's vector cache) stays correct. Each backend writes the vectors its own way
(``_land_vectors``: one batched statement on PostgreSQL, the cache kept in step on SQLite).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from kioku.storage.records import EmbeddingJob, EmbeddingQueue, VersionSignals
from kioku.storage.shared.database import ALL_WORKSPACES, Database, Transaction
from kioku.storage.shared.jobs import job_from_row

Vectors = Sequence[tuple[str, np.ndarray]]
"""(memory id, vector) pairs."""


def bump_generation(tx: Transaction, workspace_id: str, context_id: str) -> int:
    """Mark a context's searchable vectors changed; its new generation (0: no such context)."""
    row = tx.execute(
        "UPDATE contexts SET vector_generation = vector_generation + 1 "
        "WHERE workspace_id = %s AND id = %s RETURNING vector_generation",
        (workspace_id, context_id),
    ).fetchone()
    return 0 if row is None else row["vector_generation"]


class EmbeddingStore(Protocol):
    """Embedding primitives: the queue, a context's model, the stored vectors."""

    sql: Database

    def _prepare_vectors(self, dim: int) -> None:
        """Before the first vectors of dimension ``dim`` are written (PostgreSQL: its HNSW
        index, in a transaction of its own)."""
        ...

    def _land_vectors(
        self, tx: Transaction, workspace_id: str, context_id: str, model: str, items: Vectors
    ) -> int:
        """Write the vectors of still-pending live memories of the context; how many landed."""
        ...

    def pending_embeddings(self, model: str, limit: int) -> list[EmbeddingJob]:
        """Memories waiting for a vector, in contexts that use ``model`` (or none yet)."""
        with self.sql.read(ALL_WORKSPACES) as tx:
            rows = tx.execute(
                "SELECT m.id, m.workspace_id, m.context_id, m.summary, m.content FROM memories m "
                "JOIN contexts c ON c.id = m.context_id AND c.workspace_id = m.workspace_id "
                "WHERE m.embedding_status = 'pending' AND m.deleted_at IS NULL "
                "AND (c.embedding_model IS NULL OR c.embedding_model = %s) "
                "ORDER BY m.seq LIMIT %s",
                (model, limit),
            ).fetchall()
        return [job_from_row(row) for row in rows]

    def store_embeddings(
        self,
        workspace_id: str,
        context_id: str,
        model: str,
        items: Vectors,
    ) -> int:
        """Save vectors (the source of truth) and update the index; returns how many landed.
        The first vectors of a context fix its model and dimension; others are refused."""
        if not items:
            return 0
        dim = int(items[0][1].shape[0])
        self._prepare_vectors(dim)
        with self.sql.write(workspace_id) as tx:
            # Two workers storing a context's first vectors agree on one model. NO KEY UPDATE,
            # not UPDATE: the foreign-key checks of concurrent inserts into this context
            # (memories, feedback, edges take KEY SHARE on it) must not queue behind this
            # lock while it waits for memory rows they hold: that was a deadlock.
            context = tx.execute(
                "SELECT embedding_model, embedding_dim FROM contexts "
                f"WHERE workspace_id = %s AND id = %s{self.sql.dialect.for_no_key_update}",
                (workspace_id, context_id),
            ).fetchone()
            if context is None:
                return 0
            if context["embedding_model"] is None:
                tx.execute(
                    "UPDATE contexts SET embedding_model = %s, embedding_dim = %s "
                    "WHERE workspace_id = %s AND id = %s",
                    (model, dim, workspace_id, context_id),
                )
            elif context["embedding_model"] != model or context["embedding_dim"] != dim:
                return 0  # never mix models in one context; `kioku reembed` switches explicitly
            return self._land_vectors(tx, workspace_id, context_id, model, items)

    def mark_embedding_failed(self, workspace_id: str, memory_ids: Sequence[str]) -> None:
        d = self.sql.dialect
        with self.sql.write(workspace_id) as tx:
            for chunk in d.chunks(list(memory_ids)) if memory_ids else ():
                ids, params = d.any("id", chunk)
                tx.execute(
                    "UPDATE memories SET embedding_status = 'failed' WHERE workspace_id = %s "
                    f"AND embedding_status = 'pending' AND {ids}",
                    (workspace_id, *params),
                )

    def reset_embeddings(self, workspace_id: str, context_id: str) -> int:
        """Drop every vector of a context and its model; mark its memories ``pending``."""
        with self.sql.write(workspace_id) as tx:
            tx.execute(
                "UPDATE contexts SET embedding_model = NULL, embedding_dim = NULL "
                "WHERE workspace_id = %s AND id = %s",
                (workspace_id, context_id),
            )
            count = tx.execute(
                "UPDATE memories SET embedding = NULL, embedding_model = NULL, "
                "embedding_status = 'pending' WHERE workspace_id = %s AND context_id = %s "
                "AND deleted_at IS NULL",
                (workspace_id, context_id),
            ).rowcount
            bump_generation(tx, workspace_id, context_id)
        return count

    def pending_count(self) -> int:
        """How many memories (all workspaces) wait for a vector: the embedding queue length."""
        with self.sql.read(ALL_WORKSPACES) as tx:
            row = tx.execute(
                "SELECT count(*) AS n FROM memories WHERE embedding_status = 'pending'"
            ).fetchone()
        return row["n"]

    def embedding_queue(self) -> EmbeddingQueue:
        """The embedding queue (all workspaces) in one query: how many memories wait for a
        vector and when the longest-waiting one was last written (for ``/metrics``)."""
        with self.sql.read(ALL_WORKSPACES) as tx:
            row = tx.execute(
                "SELECT count(*) AS depth, min(updated_at) AS oldest FROM memories "
                "WHERE embedding_status = 'pending'"
            ).fetchone()
        return EmbeddingQueue(row["depth"], self.sql.dialect.read_optional_time(row["oldest"]))

    def version_signals(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, VersionSignals]:
        """Context, creation time, summary and stored vector of a few top candidates (the
        newer-fact-first stage of recall); never the content."""
        d = self.sql.dialect
        found: dict[str, VersionSignals] = {}
        with self.sql.read(workspace_id) as tx:
            for chunk in d.chunks(list(memory_ids)) if memory_ids else ():
                ids, params = d.any("id", chunk)
                for row in tx.execute(
                    f"SELECT id, context_id, created_at, summary, {d.vector} FROM memories "
                    f"WHERE {d.unindexed('workspace_id')} = %s AND {ids}",
                    (workspace_id, *params),
                ).fetchall():
                    vector = None if row["vector"] is None else d.read_vector(row["vector"])
                    found[row["id"]] = VersionSignals(
                        row["context_id"], d.read_time(row["created_at"]), row["summary"], vector
                    )
        return found
