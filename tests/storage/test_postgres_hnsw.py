"""The PostgreSQL vector leg at scale: one HNSW index per dimension (over ``halfvec``), used by
the planner, close to exact search with and without filters, scoring with the float32 cosine,
and exact again wherever an approximate answer would fall short."""

from __future__ import annotations

import itertools
from typing import Any, LiteralString, cast

import numpy as np
import psycopg
import pytest
from psycopg import sql

from kioku.storage.postgres import PostgresStore, vector_leg
from kioku.storage.postgres.connection import ALL_WORKSPACES
from kioku.storage.postgres.embeddings import vector_index_name
from kioku.storage.records import MemoryFilter
from tests.storage.test_contract import new_context, new_memory, vec

LIVE = MemoryFilter()
DIM = 96
ROWS = 3000
SCOPE = "m.workspace_id = %s AND m.context_id = ANY(%s)"


def _clustered(rng: np.random.Generator, count: int, centers: np.ndarray) -> np.ndarray:
    """Unit vectors around random centers (cosine ≈ 0.8 to their center), like real
    embeddings: neighbourhoods, not uniform noise."""
    picked = centers[rng.integers(len(centers), size=count)]
    noisy = picked + rng.standard_normal((count, DIM)).astype(np.float32) * 0.075
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def _fill(
    pg: PostgresStore, count: int = ROWS, seed: int = 7, **memory: Any
) -> tuple[str, str, list[str], np.ndarray]:
    """A context of ``count`` memories with clustered ``DIM``-dimensional vectors."""
    ws = pg.ensure_workspace("alpha").id
    ctx = new_context(pg, ws, "big")
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((40, DIM)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    vectors = _clustered(rng, count, centers)
    rows = [new_memory(ctx.id, f"memory {i}", **memory) for i in range(count)]
    pg.insert_memories(ws, rows)
    ids = [row.id for row in rows]
    for start in range(0, count, 500):
        items = list(zip(ids[start : start + 500], vectors[start : start + 500], strict=True))
        assert pg.store_embeddings(ws, ctx.id, "m", items) == len(items)
    with pg.db.transaction(ALL_WORKSPACES) as conn:
        conn.execute("ANALYZE memories")
    return ws, ctx.id, ids, vectors


def test_one_partial_hnsw_index_per_dimension(pg: PostgresStore) -> None:
    ws = pg.ensure_workspace("alpha").id
    a, b = new_context(pg, ws, "a"), new_context(pg, ws, "b")
    ma, mb = new_memory(a.id, "two"), new_memory(b.id, "three")
    pg.insert_memories(ws, [ma, mb])
    pg.store_embeddings(ws, a.id, "m2", [(ma.id, vec(1, 0))])
    pg.store_embeddings(ws, b.id, "m3", [(mb.id, vec(0, 1, 0))])
    with pg.db.transaction(ALL_WORKSPACES) as conn:
        rows = conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories' "
            "AND indexname LIKE 'ix_memories_hnsw_%%'"
        ).fetchall()
    defs = {row["indexname"]: row["indexdef"] for row in rows}
    for dim in (2, 3):
        definition = defs[vector_index_name(dim)]
        assert f"(l2_normalize(embedding))::halfvec({dim})" in definition
        assert "halfvec_cosine_ops" in definition
        assert f"vector_dims(embedding) = {dim}" in definition


def _plan(
    pg: PostgresStore,
    ws: str,
    ctx: str,
    query: np.ndarray,
    *,
    generic: bool,
    counted: bool = False,
) -> str:
    """EXPLAIN of the leg's statement, with its settings; ``generic``: the plan PostgreSQL
    may switch a prepared statement to after five runs (no parameter values known);
    ``counted``: the statement for a narrowing filter (the scope's size counted)."""
    where, params = SCOPE, [ws, [ctx]]
    if counted:
        where, params = SCOPE + " AND m.trust_tier = %s", [ws, [ctx], "trusted"]
    statement = vector_leg.vector_statement(where, DIM, counted=counted)
    arguments = vector_leg.vector_parameters(
        ws, [ctx], params, vector_leg.encode_vector(query), 40, counted=counted
    )
    with pg.db.transaction(ws, settings=vector_leg.hnsw_settings(40)) as conn:
        if generic:
            conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        text = statement.as_string(conn)
        numbered = text.split("%s")
        text = "".join(f"{part}${i}" for i, part in enumerate(numbered[:-1], 1)) + numbered[-1]
        types = ", ".join(
            "text[]" if isinstance(a, list) else "bigint" if isinstance(a, int) else "text"
            for a in arguments
        )
        conn.execute(cast(LiteralString, f"PREPARE leg({types}) AS {text}"))
        values = sql.SQL(", ").join(sql.Literal(value) for value in arguments)
        rows = conn.execute(sql.SQL("EXPLAIN EXECUTE leg({})").format(values)).fetchall()
        conn.execute("DEALLOCATE leg")
    return "\n".join(row["QUERY PLAN"] for row in rows)


@pytest.mark.parametrize("counted", [False, True], ids=["statistics", "counted"])
@pytest.mark.parametrize("generic", [False, True], ids=["custom", "generic"])
def test_planner_uses_the_hnsw_index(pg: PostgresStore, generic: bool, counted: bool) -> None:
    ws, ctx, _, vectors = _fill(pg)
    plan = _plan(pg, ws, ctx, vectors[0], generic=generic, counted=counted)
    assert f"Index Scan using {vector_index_name(DIM)}" in plan, plan
    approximate = plan.split("CTE approximate")[1].split("CTE found")[0]
    assert "Index Scan using ix_memories_hnsw" in approximate, plan
    assert f"::halfvec({DIM})" in approximate, plan  # the walk orders by the index's expression
    assert "Sort" not in approximate, plan
    assert "Gather" not in plan, plan  # no parallel workers (hnsw_settings)
    # The scope's size: read from the statistics the lexical trigger keeps, or (a narrowing
    # filter) a bounded count of plain columns, never the embeddings.
    assert ("lexical_scope_stats" in plan) is not counted, plan
    with pg.db.transaction(ws) as conn:
        text = vector_leg.vector_statement(SCOPE, DIM, counted=counted).as_string(conn)
    large = text.split("large AS (")[1].split("approximate AS")[0]
    assert ("FROM memories m" in large) is counted
    assert "m.embedding " not in large and "(m.embedding)" not in large


def test_scores_are_the_float32_cosine(pg: PostgresStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk ranks by the half-precision distance; the scores returned are the stored
    float32 vectors' cosine, equal to the exact search's for the same memory."""
    ws, ctx, ids, vectors = _fill(pg)
    monkeypatch.setattr(vector_leg, "EXACT_MAX", 100)
    query = _clustered(np.random.default_rng(17), 1, vectors[:1])[0]
    approximate = pg.vector_search(ws, [ctx], query, LIVE, 40)
    monkeypatch.setattr(vector_leg, "EXACT_MAX", 10 * ROWS)
    exact = {h.memory_id: h.score for h in pg.vector_search(ws, [ctx], query, LIVE, ROWS)}
    assert len(approximate) == 40
    position = {memory_id: i for i, memory_id in enumerate(ids)}
    for hit in approximate:
        assert hit.score == exact[hit.memory_id]
        v = vectors[position[hit.memory_id]].astype(np.float64)
        cosine = float(v @ query) / float(np.linalg.norm(v) * np.linalg.norm(query))
        assert hit.score == pytest.approx(cosine, abs=1e-6)
    assert all(a.score >= b.score for a, b in itertools.pairwise(approximate))
    with pg.db.transaction(ws) as conn:  # and half precision would have differed
        row = conn.execute(
            "SELECT m.embedding <=> %s::vector AS full, "
            "m.embedding::halfvec <=> %s::halfvec AS half FROM memories m "
            "WHERE m.workspace_id = %s AND m.id = %s",
            (vector_leg.encode_vector(query),) * 2 + (ws, approximate[0].memory_id),
        ).fetchone()
    assert row is not None and row["full"] != row["half"]
    assert approximate[0].score == pytest.approx(1.0 - row["full"], abs=1e-12)


def test_hnsw_recall_at_10_against_exact(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, ctx, ids, vectors = _fill(pg)
    rng = np.random.default_rng(11)
    queries = _clustered(rng, 50, vectors[rng.integers(len(vectors), size=50)])
    monkeypatch.setattr(vector_leg, "EXACT_MAX", 100)  # 3000 rows: the HNSW path
    approximate: list[list[str]] = []
    for query in queries:
        approximate.append([h.memory_id for h in pg.vector_search(ws, [ctx], query, LIVE, 40)])
    found = 0
    for query, hits in zip(queries, approximate, strict=True):
        exact = [ids[i] for i in np.argsort(-(vectors @ query), kind="stable")[:10]]
        found += len(set(exact) & set(hits[:10]))
        assert len(hits) == 40
    assert found / (10 * len(queries)) >= 0.95


def test_small_scope_is_exact_and_ordered_like_before(pg: PostgresStore) -> None:
    ws, ctx, ids, vectors = _fill(pg, count=400)
    query = vectors[3]
    hits = pg.vector_search(ws, [ctx], query, LIVE, 25)
    order = np.argsort(-(vectors @ query), kind="stable")[:25]
    assert [h.memory_id for h in hits] == [ids[i] for i in order]
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


def _walked(pg: PostgresStore, ws: str, ctx: str, query: np.ndarray) -> bool:
    """Whether the leg's statement ran the HNSW walk (EXPLAIN ANALYZE: the index scan of the
    approximate branch executed) for the context ``ctx`` alone, unfiltered."""
    statement = vector_leg.vector_statement(SCOPE, DIM)
    arguments = vector_leg.vector_parameters(
        ws, [ctx], [ws, [ctx]], vector_leg.encode_vector(query), 40
    )
    with pg.db.transaction(ws, settings=vector_leg.hnsw_settings(40)) as conn:
        explain = sql.SQL("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) ") + statement
        text = psycopg.ClientCursor(conn).mogrify(explain, arguments)
        plan = [row["QUERY PLAN"] for row in conn.execute(cast(LiteralString, text))]
    walk = [line for line in plan if f"Index Scan using {vector_index_name(DIM)}" in line]
    assert len(walk) == 1, plan
    return "never executed" not in walk[0]


def test_small_share_of_the_index_goes_straight_to_exact_search(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A context above ``EXACT_MAX`` but a small share of the rows the index holds is searched
    exactly without the walk (which, filtered to few of the rows it visits, would scan up to
    ``MAX_SCAN_TUPLES`` and then give way to the exact search anyway); the big context, most
    of the index, still walks."""
    ws, big, _, big_vectors = _fill(pg)
    small = new_context(pg, ws, "small")
    rng = np.random.default_rng(23)
    centers = rng.standard_normal((5, DIM)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    vectors = _clustered(rng, 200, centers)
    vectors[7] = vectors[3]  # a tie: broken by id
    rows = [new_memory(small.id, f"small {i}") for i in range(200)]
    pg.insert_memories(ws, rows)
    ids = [row.id for row in rows]
    assert pg.store_embeddings(ws, small.id, "m", list(zip(ids, vectors, strict=True))) == 200
    with pg.db.transaction(ALL_WORKSPACES) as conn:
        conn.execute("ANALYZE memories")
    monkeypatch.setattr(vector_leg, "EXACT_MAX", 100)  # both contexts are above it
    monkeypatch.setattr(vector_leg, "SMALL_SCOPE_MAX", 1000)
    query = big_vectors[0]  # near the big context: the walk would visit its rows first
    assert not _walked(pg, ws, small.id, query)
    assert _walked(pg, ws, big, query)  # 3000 of 3200 rows: 3000 x 3000 > WALK_TO_EXACT x 3200
    hits = pg.vector_search(ws, [small.id], query, LIVE, 40)
    scores = vectors.astype(np.float64) @ query.astype(np.float64)
    order = sorted(range(200), key=lambda i: (-scores[i], ids[i].encode()))[:40]
    assert [h.memory_id for h in hits] == [ids[i] for i in order]
    hits = pg.vector_search(ws, [small.id], vectors[3], LIVE, 2)
    assert [h.memory_id for h in hits] == sorted([ids[3], ids[7]], key=str.encode)
    monkeypatch.setattr(vector_leg, "SMALL_SCOPE_MAX", 150)  # 200 rows: above the bound
    assert _walked(pg, ws, small.id, query)


def test_narrow_filter_falls_back_to_exact(
    pg: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, ctx, ids, vectors = _fill(pg)
    rare = set(range(0, ROWS, 15))  # 200 rows carry the tag
    with pg.db.transaction(ws) as conn:
        conn.execute(
            "UPDATE memories SET type = 'rare' WHERE workspace_id = %s AND id = ANY(%s)",
            (ws, [ids[i] for i in rare]),
        )
    monkeypatch.setattr(vector_leg, "EXACT_MAX", 100)
    monkeypatch.setattr(vector_leg, "MAX_SCAN_TUPLES", 300)  # the graph walk gives up early
    flt = MemoryFilter(types=["rare"])
    query = vectors[1]
    hits = pg.vector_search(ws, [ctx], query, flt, 150)
    ranked = [i for i in np.argsort(-(vectors @ query), kind="stable") if i in rare][:150]
    assert [h.memory_id for h in hits] == [ids[i] for i in ranked]


def test_other_tenants_rows_never_come_back(pg: PostgresStore) -> None:
    _ws, ctx, _, vectors = _fill(pg, count=600)
    other = pg.ensure_workspace("beta").id
    mine = new_context(pg, other, "mine")
    row = new_memory(mine.id, "far away")
    pg.insert_memories(other, [row])
    pg.store_embeddings(other, mine.id, "m", [(row.id, vectors[0])])
    assert [h.memory_id for h in pg.vector_search(other, [mine.id], vectors[0], LIVE, 10)] == [
        row.id
    ]
    assert pg.vector_search(other, [ctx], vectors[0], LIVE, 10) == []


def _tagged(pg: PostgresStore) -> tuple[str, list[str], list[str], np.ndarray, dict[str, set[int]]]:
    """3000 memories over two contexts, every 10th tagged ``mid``, every 100th also ``rare``,
    every 5th ``external``; returns (workspace, contexts, ids, vectors, {label: indexes})."""
    ws = pg.ensure_workspace("alpha").id
    contexts = [new_context(pg, ws, "left").id, new_context(pg, ws, "right").id]
    rng = np.random.default_rng(5)
    centers = rng.standard_normal((40, DIM)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    vectors = _clustered(rng, ROWS, centers)
    rows = [
        new_memory(
            contexts[i % 2],
            f"memory {i}",
            tags=["mid", "rare"] if i % 100 == 0 else ["mid"] if i % 10 == 0 else [],
            trust_tier="external" if i % 5 == 0 else "trusted",
        )
        for i in range(ROWS)
    ]
    pg.insert_memories(ws, rows)
    for side, context in enumerate(contexts):
        mine = [i for i in range(ROWS) if i % 2 == side]
        items = [(rows[i].id, vectors[i]) for i in mine]
        assert pg.store_embeddings(ws, context, "m", items) == len(items)
    with pg.db.transaction(ALL_WORKSPACES) as conn:
        conn.execute("ANALYZE memories")
    labels = {
        "mid": {i for i in range(ROWS) if i % 10 == 0},
        "rare": {i for i in range(ROWS) if i % 100 == 0},
        "trusted": {i for i in range(ROWS) if i % 5 != 0},
        "left": {i for i in range(ROWS) if i % 2 == 0},
    }
    return ws, contexts, [row.id for row in rows], vectors, labels


@pytest.mark.parametrize(
    ("label", "flt", "left_only"),
    [
        ("trusted", MemoryFilter(trust_tier="trusted"), False),
        ("mid", MemoryFilter(tags_any=["mid"]), False),
        ("rare", MemoryFilter(tags_all=["mid", "rare"]), False),
        ("left", MemoryFilter(), True),
    ],
    ids=["trust-tier-80pct", "tag-10pct", "tags-1pct", "one-of-two-contexts"],
)
def test_filtered_recall_at_10_against_exact(
    pg: PostgresStore,
    monkeypatch: pytest.MonkeyPatch,
    label: str,
    flt: MemoryFilter,
    left_only: bool,
) -> None:
    """Every filter answers k rows, and the approximate ones find the exact top 10 (real
    embeddings' neighbourhoods, here clusters: the easy case for a graph, unlike the noisy
    synthetic vectors of docs/benchmarks-postgres-scale.md)."""
    ws, contexts, ids, vectors, labels = _tagged(pg)
    monkeypatch.setattr(vector_leg, "EXACT_MAX", 100)  # every filter here: > 100 rows
    scope = contexts[:1] if left_only else contexts
    allowed = labels[label]
    rng = np.random.default_rng(13)
    queries = _clustered(rng, 30, vectors[rng.integers(len(vectors), size=30)])
    found = 0
    for query in queries:
        hits = [h.memory_id for h in pg.vector_search(ws, scope, query, flt, 10)]
        ranked = [i for i in np.argsort(-(vectors @ query), kind="stable") if i in allowed]
        exact = {ids[i] for i in ranked[:10]}
        assert len(hits) == 10 and set(hits) <= {ids[i] for i in allowed}
        found += len(exact & set(hits))
    assert found / (10 * len(queries)) >= 0.9


def test_tags_have_an_index_for_any_and_all(pg: PostgresStore) -> None:
    """``tags ?| array`` and ``tags ?& array`` (the tags filters) need jsonb_ops GIN (not
    jsonb_path_ops). On a few thousand rows the planner still reads the pages; from ~100k
    memories it picks this index (docs/benchmarks-postgres-scale.md)."""
    with pg.db.transaction(ALL_WORKSPACES) as conn:
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'memories' "
            "AND indexname = 'ix_memories_tags'"
        ).fetchone()
    assert row is not None and row["indexdef"].endswith("USING gin (tags)")


def test_settings_stay_within_pgvector_bounds() -> None:
    """``hnsw.ef_search`` above 1,000 is an error in pgvector: a search for more rows keeps
    the ceiling (the iterative scan still returns them); no parallel workers on the leg."""
    assert vector_leg.hnsw_settings(10)["hnsw.ef_search"] == str(vector_leg.EF_SEARCH)
    assert vector_leg.hnsw_settings(400)["hnsw.ef_search"] == "400"
    assert vector_leg.hnsw_settings(5000)["hnsw.ef_search"] == "1000"
    assert vector_leg.hnsw_settings(40)["max_parallel_workers_per_gather"] == "0"
