"""The two search legs on PostgreSQL: BM25 over ``tsvector`` tokens, and pgvector cosine.

Lexical leg (BM25, k1 = 1.2, b = 0.75). Each memory stores kioku's own tokens verbatim in
``lexical_tokens`` (a tsvector whose positions only count occurrences: see
``codec.encode_tokens``) and its length in tokens in ``lexical_length``. For a query:

* the corpus is the live memories (``deleted_at IS NULL``) of the workspace and the given
  contexts: N = their number, avgdl = their mean ``lexical_length``, and for each distinct
  query term df = how many of them contain it (each a GIN index lookup);
* idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)), the Lucene form, never negative;
* the candidates are the memories passing the filter whose tokens match the OR of the terms
  (the GIN index again); each scores
  sum over matched terms of idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)),
  with tf = occurrences of t in the memory and dl = its ``lexical_length`` (only the query's
  lexemes are unnested: ``setweight`` marks them, ``ts_filter`` keeps them).

Higher is better, ties broken by id, as on SQLite. The statistics are the tenant's and the
searched contexts' own (SQLite's FTS5 counts over the workspace's own table, all its
contexts), so another tenant's data never moves a score.

At scale two things change, and neither below ``STATS_CACHE_MIN`` memories in scope or
``CANDIDATE_BUDGET`` postings per query, so small contexts (and the LoCoMo and JSQuAD
benchmarks) score exactly as described above:

* N, avgdl and the dfs cost a pass over the scope's rows and the terms' postings: scopes of
  ``STATS_CACHE_MIN`` memories or more cache them for ``STATS_TTL_S`` seconds
  (``CorpusStatsCache``), so scores there may lag writes by that much;
* scoring costs about ten microseconds per candidate: when the query's terms have more than
  ``CANDIDATE_BUDGET`` postings in all, the rarest terms select the candidates and the common
  ones only add to their scores (``candidate_terms``; Lucene's common-terms cutoff). A memory
  that shares nothing but very common words with the query is then not a candidate.

Vector leg: see ``vector_leg.py``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence

import numpy as np
from psycopg import Connection
from psycopg.rows import DictRow

from kioku.storage.lexical_cutoff import candidate_terms as shared_candidate_terms
from kioku.storage.postgres import vector_leg
from kioku.storage.postgres.codec import encode_tsquery, lexeme
from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.postgres.filters import filter_sql
from kioku.storage.postgres.transfer import _decode_vector
from kioku.storage.records import MemoryFilter, ScoredId, VersionSignals

K1 = 1.2
B = 0.75

STATS_CACHE_MIN = 20_000
"""From this many live memories in scope, BM25's corpus statistics are cached (see
``CorpusStatsCache``)."""
STATS_TTL_S = 60.0
"""How long cached corpus statistics are used before they are counted again."""
STATS_CACHE_TERMS = 100_000
"""At most this many cached document frequencies per store."""
CANDIDATE_BUDGET = 5_000
"""Above this many postings over all query terms, only the rarer terms select the memories to
score (see ``candidate_terms``)."""


def idf(n: int, df: int) -> float:
    """BM25 inverse document frequency (Lucene's form: positive for any df <= n)."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


class PostgresSearchLane:
    """Mixed into ``PostgresStore``: ``lexical_search`` and ``vector_search``."""

    db: PostgresDatabase

    _lexical_stats: CorpusStatsCache | None = None

    def lexical_search(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        tokens: Sequence[str],
        flt: MemoryFilter,
        limit: int,
    ) -> list[ScoredId]:
        terms = sorted({lexeme(token) for token in tokens if token})
        if not terms or not context_ids or limit <= 0:
            return []
        if self._lexical_stats is None:
            self._lexical_stats = CorpusStatsCache()
        where, params = filter_sql(workspace_id, context_ids, flt)
        with self.db.transaction(workspace_id) as conn:
            n, avgdl, dfs = self._lexical_stats.get(conn, workspace_id, context_ids, terms)
            # A deleted memory searched with include_deleted may hold a term no live one has:
            # df counts at least the memory itself, so its idf stays finite and positive.
            weights = [idf(max(n, 1), min(max(dfs[term], 1), max(n, 1))) for term in terms]
            selecting = candidate_terms(terms, dfs, limit)
            rows = conn.execute(
                "SELECT m.id, (SELECT sum(w.idf[array_position(w.terms, u.lexeme)] "
                "* greatest(cardinality(u.positions), 1) * %s / "
                "(greatest(cardinality(u.positions), 1) + %s * "
                "(1 - %s + %s * m.lexical_length / %s))) "
                # Only the query's lexemes: setweight marks them, ts_filter keeps them.
                "FROM unnest(ts_filter(setweight(m.lexical_tokens, 'A', w.terms), '{a}')) u) "
                "AS score "
                "FROM memories m, (SELECT %s::text[] AS terms, %s::float8[] AS idf) w "
                f"WHERE {where} AND m.lexical_tokens @@ %s::tsquery "
                'ORDER BY score DESC, m.id COLLATE "C" LIMIT %s',
                (
                    K1 + 1, K1, B, B, avgdl if avgdl > 0 else 1.0,
                    terms, weights,
                    *params, encode_tsquery(selecting), limit,
                ),
            ).fetchall()  # fmt: skip
        return [ScoredId(row["id"], float(row["score"])) for row in rows]

    def vector_search(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        query: np.ndarray,
        flt: MemoryFilter,
        limit: int,
    ) -> list[ScoredId]:
        return vector_leg.vector_search(self.db, workspace_id, context_ids, query, flt, limit)

    def version_signals(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, VersionSignals]:
        if not memory_ids:
            return {}
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                "SELECT id, context_id, created_at, summary, vector_send(embedding) AS vector "
                "FROM memories WHERE workspace_id = %s AND id = ANY(%s)",
                (workspace_id, list(memory_ids)),
            ).fetchall()
        return {
            row["id"]: VersionSignals(
                row["context_id"],
                row["created_at"],
                row["summary"],
                None if row["vector"] is None else _decode_vector(row["vector"]),
            )
            for row in rows
        }


def candidate_terms(terms: Sequence[str], dfs: dict[str, int], limit: int) -> list[str]:
    """``lexical_cutoff.candidate_terms`` with this backend's ``CANDIDATE_BUDGET``."""
    return shared_candidate_terms(terms, dfs, limit, CANDIDATE_BUDGET)


class CorpusStatsCache:
    """BM25's corpus statistics (N, avgdl, df per term) for a workspace and set of contexts.

    Counting them costs a pass over the scope's rows (N, avgdl) and over each term's
    postings (df): nothing for a context of a few thousand memories, most of a search at a
    million. So scopes of at least ``STATS_CACHE_MIN`` memories keep them for
    ``STATS_TTL_S`` seconds: scores there may lag writes by that much (which memories match
    never does); smaller scopes are counted afresh on every search.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._corpus: dict[tuple[str, tuple[str, ...]], tuple[float, int, float]] = {}
        self._dfs: dict[tuple[str, tuple[str, ...], str], tuple[float, int]] = {}

    def get(
        self,
        conn: Connection[DictRow],
        workspace_id: str,
        context_ids: Sequence[str],
        terms: Sequence[str],
    ) -> tuple[int, float, dict[str, int]]:
        """(N, avgdl, {term: df}) for the live memories of the scope."""
        scope = (workspace_id, tuple(sorted(set(context_ids))))
        now = time.monotonic()
        with self._lock:
            cached = self._corpus.get(scope)
        if cached is not None and now - cached[0] < STATS_TTL_S:
            n, avgdl = cached[1], cached[2]
        else:
            row = conn.execute(
                "SELECT count(*) AS n, coalesce(avg(lexical_length), 0)::float8 AS avgdl "
                "FROM memories WHERE workspace_id = %s AND context_id = ANY(%s) "
                "AND deleted_at IS NULL",
                (workspace_id, list(scope[1])),
            ).fetchone()
            assert row is not None
            n, avgdl = row["n"], row["avgdl"]
            with self._lock:
                if n >= STATS_CACHE_MIN:
                    self._corpus[scope] = (now, n, avgdl)
                else:
                    self._corpus.pop(scope, None)
        caching = n >= STATS_CACHE_MIN
        dfs: dict[str, int] = {}
        if caching:
            with self._lock:
                for term in terms:
                    hit = self._dfs.get((*scope, term))
                    if hit is not None and now - hit[0] < STATS_TTL_S:
                        dfs[term] = hit[1]
        missing = [term for term in terms if term not in dfs]
        if missing:
            rows = conn.execute(
                "SELECT t.term, (SELECT count(*) FROM memories m WHERE m.workspace_id = %s "
                "AND m.context_id = ANY(%s) AND m.deleted_at IS NULL "
                "AND m.lexical_tokens @@ t.query) AS df "
                "FROM unnest(%s::text[], %s::tsquery[]) AS t(term, query)",
                (workspace_id, list(scope[1]), missing,
                 [encode_tsquery([term]) for term in missing]),
            ).fetchall()  # fmt: skip
            fresh = {row["term"]: row["df"] for row in rows}
            dfs.update(fresh)
            if caching:
                with self._lock:
                    if len(self._dfs) + len(fresh) > STATS_CACHE_TERMS:
                        self._dfs.clear()  # crude, rare: a bound on memory, not an LRU
                    for term, df in fresh.items():
                        self._dfs[(*scope, term)] = (now, df)
        return n, avgdl, dfs
