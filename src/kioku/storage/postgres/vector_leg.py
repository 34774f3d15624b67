"""The vector leg on PostgreSQL: pgvector cosine, exact or through the HNSW index, in one
statement (one round trip after the transaction's scope).

Cosine (``<=>``) among the live, embedded memories of the contexts whose recorded dimension
matches the query's; score = 1 - distance, ties broken by id. One statement decides and
searches:

* ``dims``: the asked contexts embedded at the query's dimension (``<=>`` refuses mixed
  dimensions);
* ``large``: more than ``EXACT_MAX`` rows in scope? Without a narrowing filter the answer is
  read from ``lexical_scope_stats`` (the live memories per workspace and context that
  migration 0013's trigger keeps): one index lookup per context however large it is. With one
  (tags, trust tier, types, dates ...) it is a bounded count of the filtered rows, which reads
  only plain columns (never the embeddings: detoasting 10,001 vectors was most of the leg's
  time at 1M). Up to ``EXACT_MAX`` rows the search is exact: sorting them costs little, and a
  small tenant in a big table, or a narrow filter, is exactly the case where a filtered graph
  walk has to skip most of what it visits. Without a filter, a scope of up to
  ``SMALL_SCOPE_MAX`` rows that is a small share of the rows the index holds (its
  ``pg_class.reltuples``, all workspaces; ``WALK_TO_EXACT``) is exact too: the walk would
  cost more, and when the scope's vectors lie away from the query's neighbourhood it scanned
  ``MAX_SCAN_TUPLES`` rows, gave up, and the exact search answered after it
  (docs/benchmarks-postgres-scale.md, "small scope");
* ``approximate``: only when ``large``, the HNSW index of the query's dimension (one partial
  expression index per dimension over the normalised vectors cast to ``halfvec``, see
  ``embeddings.py``)
  with pgvector's iterative scan, so the workspace / context / live / filter conditions still
  get ``limit`` rows. The walk orders by the half-precision distance (what the index holds);
  the distance returned is the float32 one from the stored column, so scores are the exact
  cosine whichever branch answered;
* the exact search runs only when ``approximate`` returned fewer than ``limit`` rows: a small
  scope, a filter so narrow that the iterative scan gave up first (``MAX_SCAN_TUPLES``), or no
  index (the approximate branch is then an exact scan already, and answers). It reads each
  embedding once (the distance): it has no ``vector_dims`` predicate, because every vector of
  a context is of the context's recorded ``embedding_dim`` (``dims`` checks that one):
  ``store_embeddings`` lands only vectors of it under the context's row lock,
  ``reset_embeddings`` clears the dimension and the vectors together, and an import refuses a
  vector of another dimension than its context's (``service/transfer.py``).

The settings (``hnsw_settings``: ``hnsw.ef_search``, ``hnsw.iterative_scan``,
``hnsw.max_scan_tuples``, and no parallel workers: on 2 cores a parallel plan for the exact
branch cost more than it saved) are set for the transaction by the statement that sets its
scope (``PostgresDatabase.transaction(settings=...)``). Approximate means a near neighbour may
be missed: recall@10 against exact, with filters, is measured in
tests/storage/test_postgres_hnsw.py, lab/pg_vector_scale.py and
docs/benchmarks-postgres-scale.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, LiteralString

import numpy as np
from psycopg import sql

from kioku.storage.postgres.codec import encode_vector
from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.postgres.embeddings import vector_index_name
from kioku.storage.postgres.filters import filter_sql
from kioku.storage.records import ScoredId
from kioku.storage.shared.legs import LegScope

EXACT_MAX = 10_000
"""Up to this many rows in scope the vector leg is exact (as SQLite's index is)."""
EF_SEARCH = 100
"""HNSW candidate list (``hnsw.ef_search``), at least the number of rows asked for."""
EF_SEARCH_MAX = 1000
"""pgvector's ceiling for ``hnsw.ef_search`` (a larger value is an error); a search for more
rows still gets them, from the iterative scan."""
ITERATIVE_SCAN = "relaxed_order"
"""pgvector 0.8's iterative scan: filters still get ``limit`` rows; relaxed order (better
recall than strict, per pgvector's README) is re-sorted here."""
MAX_SCAN_TUPLES = 20_000
"""How far an iterative scan may go before giving up (pgvector's default)."""
SMALL_SCOPE_MAX = 25_000
"""Above ``EXACT_MAX`` and up to this many rows, a scope the walk would cross too many other
rows to fill (``WALK_TO_EXACT``) is searched exactly, without trying the walk first. The
bound keeps that search near ~100 ms (an exact search of 20,000 rows read once: 58-87 ms
p50 at load 3-9, docs/benchmarks-postgres-scale.md, "small scope")."""
WALK_TO_EXACT = 500
"""A filtered walk visits about ``limit`` x N / S rows to keep ``limit`` of a scope of S
rows spread among the N the index holds; an exact search reads S. Measured at depth 40 on a
220k index (a spread 20k scope, two runs, load 3 and 9): walk 1.6-2.6 ms per unit of N / S,
exact 3.9-4.4 us a row; both equal at S x S = 400-600 x N. So a scope goes straight to the
exact search when S x S <= this x N (at 1M: up to ~22,600 rows, 2.2 %). N is the index's
``pg_class.reltuples`` (all workspaces, kept by CREATE INDEX, VACUUM and ANALYZE; -1, never
counted, is no rows: the walk then). A scope whose vectors lie away from the query's
neighbourhood costs the walk more (it gives up at ``MAX_SCAN_TUPLES``), never less."""


def hnsw_settings(limit: int) -> dict[str, str]:
    """The leg's settings for one search of ``limit`` rows (transaction-local): pgvector's
    scan, and no parallel workers (the exact branch's parallel plan cost more than it saved
    on 2 cores, and the index scan never runs in parallel)."""
    return {
        "hnsw.iterative_scan": ITERATIVE_SCAN,
        "hnsw.ef_search": str(min(max(limit, EF_SEARCH), EF_SEARCH_MAX)),
        "hnsw.max_scan_tuples": str(MAX_SCAN_TUPLES),
        "max_parallel_workers_per_gather": "0",
    }


def vector_statement(where: LiteralString, dim: int, *, counted: bool = False) -> sql.Composed:
    """The whole leg as one statement (see the module doc). ``where`` is ``filter_sql``'s
    clause; ``counted``: the filter narrows the scope (``MemoryFilter.is_narrowing``), so its
    size is counted rather than read from the statistics. The casts and the ``vector_dims``
    predicate spell the index's expression and WHERE clause exactly, with the dimension as a
    literal (a parameter would not prove the partial index's predicate), so the planner can
    use it. Parameters: ``vector_parameters``."""
    in_dims: LiteralString = "m.context_id = ANY((SELECT ids FROM dims)::text[])"
    live: LiteralString = "m.deleted_at IS NULL AND m.embedding_status = 'ready'"
    rows_in_scope: LiteralString = where + " AND " + in_dims + " AND " + live
    # The walk needs the index's predicate; the exact search does not (its contexts' recorded
    # dimension is the dimension of every vector they hold, see the module doc), and leaving
    # it out reads each embedding once (the distance) rather than twice.
    scope = sql.SQL(rows_in_scope + " AND vector_dims(m.embedding) = {dim}").format(
        dim=sql.Literal(dim)
    )
    if counted:  # plain columns only: the embeddings stay in their TOAST table
        large = sql.SQL(
            "SELECT count(*) > {exact_max} AS yes FROM "
            "(SELECT 1 FROM memories m WHERE " + rows_in_scope + " LIMIT {exact_max_1}) s"
        ).format(exact_max=sql.Literal(EXACT_MAX), exact_max_1=sql.Literal(EXACT_MAX + 1))
    else:  # a small share of what the index holds: exact (see WALK_TO_EXACT)
        large = sql.SQL(
            "SELECT s.n > {exact_max} AND NOT (s.n <= {small_max} AND s.n * s.n <= "
            "{walk_to_exact} * coalesce((SELECT greatest(i.reltuples, 0) FROM pg_class i "
            "WHERE i.relname = {index} AND i.relnamespace = current_schema()::regnamespace), 0)"
            ") AS yes FROM (SELECT coalesce(sum(s.n), 0) AS n FROM lexical_scope_stats s "
            "WHERE s.workspace_id = %s AND s.context_id = ANY((SELECT ids FROM dims)::text[])) s"
        ).format(
            exact_max=sql.Literal(EXACT_MAX),
            small_max=sql.Literal(SMALL_SCOPE_MAX),
            walk_to_exact=sql.Literal(WALK_TO_EXACT),
            index=sql.Literal(vector_index_name(dim)),
        )
    return sql.SQL(
        "WITH dims AS (SELECT coalesce(array_agg(c.id), '{{}}') AS ids FROM contexts c "
        "WHERE c.workspace_id = %s AND c.id = ANY(%s) AND c.embedding_dim = {dim}), "
        "large AS ({large}), "
        "approximate AS MATERIALIZED (SELECT m.id, "
        "m.embedding::vector({dim}) <=> %s::vector({dim}) AS distance FROM memories m "
        "WHERE (SELECT yes FROM large) AND {scope} "
        "ORDER BY l2_normalize(m.embedding)::halfvec({dim}) "
        "<=> l2_normalize(%s::vector({dim}))::halfvec({dim}) LIMIT %s), "
        "found AS (SELECT count(*) AS n FROM approximate) "
        "SELECT id, distance FROM approximate WHERE (SELECT n FROM found) >= %s "
        "UNION ALL "
        "(SELECT m.id, m.embedding <=> %s::vector AS distance FROM memories m "
        "WHERE (SELECT n FROM found) < %s AND " + rows_in_scope + " "
        'ORDER BY distance, m.id COLLATE "C" LIMIT %s)'
    ).format(dim=sql.Literal(dim), large=large, scope=scope)


def vector_parameters(
    workspace_id: str,
    context_ids: Sequence[str],
    filter_params: Sequence[Any],
    vector: str,
    limit: int,
    *,
    counted: bool = False,
) -> list[Any]:
    """``vector_statement``'s parameters, in order (``counted`` as given to it)."""
    return [
        workspace_id, list(context_ids),  # dims
        *(filter_params if counted else [workspace_id]),  # large
        vector, *filter_params, vector, limit,  # approximate
        limit,  # approximate enough?
        vector, limit, *filter_params, limit,  # exact
    ]  # fmt: skip


def vector_search(db: PostgresDatabase, scope: LegScope, query: np.ndarray) -> list[ScoredId]:
    """The leg: at most ``scope.limit`` memories by cosine to ``query``, best first."""
    workspace_id, context_ids, flt, limit = scope
    dim = int(query.shape[0])
    # Superseded memories are left out unless asked for, as on SQLite.
    where, params = filter_sql(workspace_id, context_ids, flt)
    counted = flt.is_narrowing
    statement = vector_statement(where, dim, counted=counted)
    vector = encode_vector(query)
    arguments = vector_parameters(workspace_id, context_ids, params, vector, limit, counted=counted)
    with db.transaction(workspace_id, settings=hnsw_settings(limit)) as conn:
        rows = conn.execute(statement, arguments).fetchall()
    # Relaxed order: nearly sorted by distance; ties by id as the exact branch orders them.
    rows.sort(key=lambda row: (row["distance"], row["id"].encode()))
    return [ScoredId(row["id"], 1.0 - float(row["distance"])) for row in rows]
