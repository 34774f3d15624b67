"""The search legs and the embedding area of ``SQLiteStore``: FTS5 BM25 (one table per
workspace, see ``lexical.py``), vectors, the cache."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from kioku.storage.records import (
    ScoredId,
)
from kioku.storage.shared.database import Transaction
from kioku.storage.shared.embeddings import EmbeddingStore, Vectors, bump_generation
from kioku.storage.shared.legs import LegScope, SearchLegs
from kioku.storage.sqlite.bm25 import (
    RESCORE_POOL,
    DocumentFrequencies,
    Ranked,
    rank_rows,
    rescore,
    table_averages,
)
from kioku.storage.sqlite.codec import (
    decode_vector,
    encode_vector,
)
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.dialect import ID_CHUNK
from kioku.storage.sqlite.filters import chunked, filter_sql, placeholders
from kioku.storage.sqlite.lexical import is_missing_table, lexical_table
from kioku.storage.sqlite.lexical_sidecar import LexicalSidecar
from kioku.storage.vector_index import VectorIndexCache


def _pool(
    conn: sqlite3.Connection, ranked: Ranked, where: str, params: Sequence[Any], need: int
) -> list[tuple[float, int, str]]:
    """(rank, rowid, memory id), best first, of the best ``need`` rows of ``ranked`` (best
    first) that are in the searched scope, and of every row of ``ranked`` in scope that ties
    the last of them (so no tie is cut by rowid); fewer when ``ranked`` holds fewer. Looked up
    in ``ranked``'s order, a chunk at a time, until they are found: when most rows are in
    scope the back of a wide window is never looked up (each lookup reads a row of
    ``memories``)."""
    found: list[tuple[float, int, str]] = []
    checked = 0
    size = min(max(need, 1), ID_CHUNK)
    while checked < len(ranked):
        if len(found) < need:
            chunk = ranked[checked : checked + size]
            size = min(size * 2, ID_CHUNK)
        else:
            last = found[need - 1][0]
            ties = checked
            while ties < len(ranked) and ties - checked < ID_CHUNK and ranked[ties][1] <= last:
                ties += 1
            if ties == checked:
                break  # every row left ranks below the need-th: none can enter
            chunk = ranked[checked:ties]
        rank_of = {seq: rank for seq, rank in chunk}
        seqs = [str(seq) for seq in rank_of]
        rows = conn.execute(
            f"SELECT m.seq, m.id FROM memories m WHERE m.seq IN ({placeholders(seqs)}) AND {where}",
            (*seqs, *params),
        ).fetchall()
        found += [(rank_of[seq], seq, memory_id) for seq, memory_id in rows]
        found.sort()
        checked += len(chunk)
    size = min(len(found), need)
    while size < len(found) and found[size][0] == found[size - 1][0]:
        size += 1
    return found[:size]


class SQLiteVectorArea(SearchLegs, EmbeddingStore):
    """Mixed into ``SQLiteStore``: the search legs, the vector cache, and the vector writes
    that keep it in step (the rest of the embedding area: ``shared/embeddings.py``)."""

    db: SQLiteDatabase
    index: VectorIndexCache
    term_counts: DocumentFrequencies
    lexical_sidecar: LexicalSidecar

    # ------------------------------------------------------------ search legs

    def _lexical_leg(self, scope: LegScope, tokens: Sequence[str]) -> list[ScoredId]:
        workspace_id, context_ids, flt, limit = scope
        terms = sorted(set(tokens))
        where, params = filter_sql(workspace_id, context_ids, flt, by_rowid=True)
        conn = self.db.connection()
        # The workspace's own table (see lexical.py): its rows, postings and BM25 statistics
        # are this tenant's only. Rank in FTS5 alone first (joining every match to its row
        # costs more than ranking), then keep the best hits in the searched contexts and
        # filter; widen the window until enough survive. Big tables rank with a common-terms
        # cutoff (see bm25.py). The hits kept are re-scored with kioku's BM25 constants. A
        # large workspace's candidates come from its tantivy index (lexical_sidecar.py).
        table = lexical_table(workspace_id)
        rows, _ = table_averages(conn, table)
        if self.lexical_sidecar.applies(rows, flt):
            found = self.lexical_sidecar.answer(scope, terms, self.term_counts)
            if found is not None:
                return found
        window = limit * 4
        read: dict[int, str] = {}  # rows' tokens, read once for both scorings
        while True:
            try:
                ranked, exhausted = rank_rows(conn, table, terms, window, self.term_counts, read)
            except sqlite3.OperationalError as exc:
                if is_missing_table(exc, table):
                    return []  # the workspace never stored a memory
                raise
            # FTS5's order picks a pool (``RESCORE_POOL`` times the hits kept, and every row
            # tied with its last); kioku's constants score it.
            pool = _pool(conn, ranked, where, params, RESCORE_POOL * limit)
            if len(pool) >= limit or exhausted:
                break
            window *= 8
        scores = rescore(conn, table, [seq for _, seq, _ in pool], terms, self.term_counts, read)
        hits = [ScoredId(memory_id, scores[seq]) for _, seq, memory_id in pool]
        hits.sort(key=lambda hit: (-hit.score, hit.memory_id))
        return hits[:limit]

    def _vector_leg(self, scope: LegScope, query: np.ndarray) -> list[ScoredId]:
        workspace_id, context_ids, flt, limit = scope
        allowed: set[str] | None = None
        if flt.is_narrowing:
            where, params = filter_sql(workspace_id, context_ids, flt)
            allowed = {
                row[0]
                for row in self.db.connection().execute(
                    f"SELECT m.id FROM memories m WHERE {where} AND m.embedding_status = 'ready'",
                    params,
                )
            }
        hits: list[tuple[str, float]] = []
        for context_id in context_ids:
            index = self._context_index(workspace_id, context_id)
            if index is None or index.dim != query.shape[0]:
                continue
            hits.extend(index.search(query, limit, allowed))
        if flt.include_superseded and allowed:
            hits.extend(self._superseded_hits(workspace_id, allowed, query))
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return [ScoredId(memory_id, score) for memory_id, score in hits[:limit]]

    def build_vector_graph(self, workspace_id: str, context_id: str) -> bool:
        """Build a large context's HNSW graph now rather than in the background on its first
        search (the benchmark times it after a bulk fill); ``True`` when it has one."""
        index = self._context_index(workspace_id, context_id)
        return index is not None and index.ensure_graph() is not None

    def _superseded_hits(
        self, workspace_id: str, allowed: set[str], query: np.ndarray
    ) -> list[tuple[str, float]]:
        """Exact cosine over the superseded memories among ``allowed``: the cache holds only
        unsuperseded ones, and superseded memories are few (Sleep's merge losers)."""
        hits: list[tuple[str, float]] = []
        conn = self.db.connection()
        for chunk in chunked(sorted(allowed)):
            for memory_id, blob in conn.execute(
                "SELECT id, embedding FROM memories WHERE workspace_id = ? "
                f"AND id IN ({placeholders(chunk)}) AND superseded_by IS NOT NULL "
                "AND deleted_at IS NULL AND embedding_status = 'ready'",
                (workspace_id, *chunk),
            ):
                vector = decode_vector(blob)
                if vector.shape == query.shape:
                    hits.append((memory_id, float(vector @ query.astype(np.float32))))
        return hits

    def _context_index(self, workspace_id: str, context_id: str):
        row = (
            self.db.connection()
            .execute(
                "SELECT vector_generation FROM contexts WHERE workspace_id = ? AND id = ?",
                (workspace_id, context_id),
            )
            .fetchone()
        )
        if row is None:
            return None
        return self.index.get(
            context_id, row[0], lambda: self._load_vectors(workspace_id, context_id)
        )

    def _load_vectors(
        self, workspace_id: str, context_id: str
    ) -> tuple[int, list[tuple[str, np.ndarray]]]:
        with self.db.read() as conn:
            dim = conn.execute(
                "SELECT embedding_dim FROM contexts WHERE workspace_id = ? AND id = ?",
                (workspace_id, context_id),
            ).fetchone()[0]
            rows = conn.execute(
                "SELECT id, embedding FROM memories WHERE workspace_id = ? AND context_id = ? "
                "AND embedding_status = 'ready' AND deleted_at IS NULL AND superseded_by IS NULL "
                "ORDER BY seq",  # a fixed order: a rebuilt graph is the same graph
                (workspace_id, context_id),
            ).fetchall()
        return (dim or 0), [(row[0], decode_vector(row[1])) for row in rows]

    # ------------------------------------------------------------ embeddings

    def _prepare_vectors(self, dim: int) -> None:
        pass  # the cache is built per context on its first search

    def _land_vectors(
        self, tx: Transaction, workspace_id: str, context_id: str, model: str, items: Vectors
    ) -> int:
        landed: list[tuple[str, np.ndarray]] = []
        indexed: list[tuple[str, np.ndarray]] = []
        for memory_id, vector in items:
            updated = tx.execute(
                "UPDATE memories SET embedding = %s, embedding_model = %s, "
                "embedding_status = 'ready' WHERE workspace_id = %s AND context_id = %s "
                "AND id = %s AND embedding_status = 'pending' AND deleted_at IS NULL "
                "RETURNING superseded_by",
                (encode_vector(vector), model, workspace_id, context_id, memory_id),
            ).fetchone()
            if updated is not None:
                landed.append((memory_id, vector))
                if updated[0] is None:  # the cache holds unsuperseded memories only
                    indexed.append((memory_id, vector))
        if landed:
            generation = bump_generation(tx, workspace_id, context_id)
            self.index.apply(context_id, generation, upserts=indexed)
        return len(landed)

    def reset_embeddings(self, workspace_id: str, context_id: str) -> int:
        count = super().reset_embeddings(workspace_id, context_id)
        self.index.forget(context_id)
        return count

    def _bump_generation(self, conn: sqlite3.Connection, context_id: str) -> int:
        return conn.execute(
            "UPDATE contexts SET vector_generation = vector_generation + 1 WHERE id = ? "
            "RETURNING vector_generation",
            (context_id,),
        ).fetchone()[0]
