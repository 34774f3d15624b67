"""The SQLite vector leg above ``EXACT_MAX``: an HNSW graph (the real usearch library) close to
exact search, exact wherever it would fall short, and a rebuildable cache like the matrix."""

from __future__ import annotations

import itertools
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kioku.storage import vector_graph
from kioku.storage.records import MemoryChanges, MemoryFilter
from kioku.storage.sqlite import SQLiteStore
from kioku.storage.sqlite.codec import encode_vector
from kioku.storage.vector_index import ContextVectors
from tests.storage.test_contract import new_context, new_memory

LIVE = MemoryFilter()
DIM = 96
ROWS = 3000
EXACT_MAX = 500
"""Small, so 3000 rows take the HNSW path (the default is 20,000)."""
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _clustered(rng: np.random.Generator, count: int, centers: np.ndarray) -> np.ndarray:
    """Unit vectors around random centers (cosine ≈ 0.8 to their center), like real
    embeddings: neighbourhoods, not uniform noise (as in test_postgres_hnsw.py)."""
    picked = centers[rng.integers(len(centers), size=count)]
    noisy = picked + rng.standard_normal((count, DIM)).astype(np.float32) * 0.075
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def _centers(seed: int = 7) -> np.ndarray:
    centers = np.random.default_rng(seed).standard_normal((40, DIM)).astype(np.float32)
    return centers / np.linalg.norm(centers, axis=1, keepdims=True)


def _open(path: Path, **kwargs: Any) -> SQLiteStore:
    kwargs.setdefault("exact_max", EXACT_MAX)
    kwargs.setdefault("background_graphs", False)
    return SQLiteStore(path, **kwargs)


def _fill(
    store: SQLiteStore, count: int = ROWS, seed: int = 7, **memory: Any
) -> tuple[str, str, list[str], np.ndarray]:
    ws = store.ensure_workspace("alpha").id
    ctx = new_context(store, ws, "big")
    vectors = _clustered(np.random.default_rng(seed), count, _centers(seed))
    rows = [new_memory(ctx.id, f"memory {i}", **memory) for i in range(count)]
    store.insert_memories(ws, rows)
    ids = [row.id for row in rows]
    for start in range(0, count, 500):
        items = list(zip(ids[start : start + 500], vectors[start : start + 500], strict=True))
        assert store.store_embeddings(ws, ctx.id, "m", items) == len(items)
    return ws, ctx.id, ids, vectors


def _index(store: SQLiteStore, ws: str, ctx: str) -> ContextVectors:
    index = store._context_index(ws, ctx)
    assert index is not None
    return index


def _exact(ids: list[str], vectors: np.ndarray, query: np.ndarray, keep: Any = None) -> list[str]:
    order = np.argsort(-(vectors @ query), kind="stable")
    return [ids[i] for i in order if keep is None or ids[i] in keep]


def _ids(store: SQLiteStore, ws: str, ctx: str, query: np.ndarray, limit: int = 40, **f: Any):
    return [h.memory_id for h in store.vector_search(ws, [ctx], query, MemoryFilter(**f), limit)]


@pytest.fixture
def store(tmp_path: Path):
    opened = _open(tmp_path / "k.db")
    try:
        yield opened
    finally:
        opened.close()


def test_hnsw_recall_at_10_against_exact(store: SQLiteStore) -> None:
    ws, ctx, ids, vectors = _fill(store)
    rng = np.random.default_rng(11)
    queries = _clustered(rng, 50, vectors[rng.integers(len(vectors), size=50)])
    found = 0
    for query in queries:
        hits = store.vector_search(ws, [ctx], query, LIVE, 40)
        assert len(hits) == 40
        assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
        found += len(set(_exact(ids, vectors, query)[:10]) & {h.memory_id for h in hits[:10]})
    assert _index(store, ws, ctx).graph is not None  # the graph answered, not the matrix
    assert found / (10 * len(queries)) >= 0.95


def test_scores_are_exact_cosines_even_from_the_graph(store: SQLiteStore) -> None:
    ws, ctx, ids, vectors = _fill(store)
    hits = store.vector_search(ws, [ctx], vectors[5], LIVE, 10)
    assert _index(store, ws, ctx).graph is not None
    by_id = dict(zip(ids, vectors, strict=True))
    for hit in hits:
        assert hit.score == pytest.approx(float(by_id[hit.memory_id] @ vectors[5]), abs=1e-6)
    assert hits[0].memory_id == ids[5]


def test_same_query_gives_the_same_list_and_a_rebuilt_graph_answers_the_same(
    tmp_path: Path,
) -> None:
    first = _open(tmp_path / "k.db", index_dir=tmp_path / "one")
    ws, ctx, _, vectors = _fill(first)
    queries = vectors[:20] + 0.05
    before = [_ids(first, ws, ctx, q) for q in queries]
    assert [_ids(first, ws, ctx, q) for q in queries] == before
    first.close()
    # A second process with no cache file builds the graph from the database, in seq order.
    second = _open(tmp_path / "k.db", index_dir=tmp_path / "two")
    try:
        assert [_ids(second, ws, ctx, q) for q in queries] == before
        assert second.index.rebuilds == 1
    finally:
        second.close()


def test_crossing_the_threshold_both_ways(store: SQLiteStore) -> None:
    ws, ctx, ids, vectors = _fill(store, count=EXACT_MAX)
    query = vectors[3]
    assert _ids(store, ws, ctx, query, 25) == _exact(ids, vectors, query)[:25]
    assert _index(store, ws, ctx).graph is None  # at the threshold: exact, no graph
    more = _clustered(np.random.default_rng(3), 600, _centers())
    rows = [new_memory(ctx, f"more {i}") for i in range(len(more))]
    store.insert_memories(ws, rows)
    store.store_embeddings(ws, ctx, "m", list(zip([r.id for r in rows], more, strict=True)))
    all_ids, all_vectors = ids + [r.id for r in rows], np.vstack([vectors, more])
    hits = _ids(store, ws, ctx, query, 25)
    assert _index(store, ws, ctx).graph is not None  # above: the graph
    assert len(set(hits[:10]) & set(_exact(all_ids, all_vectors, query)[:10])) >= 9
    for memory_id in all_ids[: len(all_ids) - EXACT_MAX // 2 + 1]:
        store.soft_delete_memory(ws, memory_id, NOW)
    kept = set(all_ids[len(all_ids) - EXACT_MAX // 2 + 1 :])
    assert _ids(store, ws, ctx, query, 25) == _exact(all_ids, all_vectors, query, kept)[:25]
    assert _index(store, ws, ctx).graph is None  # far enough below: exact again, graph freed


def test_removed_memories_never_come_back(tmp_path: Path) -> None:
    store = _open(tmp_path / "k.db")
    ws, ctx, ids, vectors = _fill(store)
    store.vector_search(ws, [ctx], vectors[0], LIVE, 10)
    assert _index(store, ws, ctx).graph is not None
    forgotten, purged, rewritten = ids[0], ids[1], ids[2]
    store.soft_delete_memory(ws, forgotten, NOW)
    store.purge_memory(ws, purged)
    store.update_memory(
        ws, rewritten, MemoryChanges(values={"summary": "new text"}, text_changed=True), NOW
    )
    gone = {forgotten, purged, rewritten}
    for i in range(3):
        assert gone.isdisjoint(_ids(store, ws, ctx, vectors[i], 100))
    store.close()
    reopened = _open(tmp_path / "k.db")  # the persisted graph still holds their tombstones
    try:
        for i in range(3):
            assert gone.isdisjoint(_ids(reopened, ws, ctx, vectors[i], 100))
        assert reopened.index.rebuilds == 0 and _index(reopened, ws, ctx).graph is not None
    finally:
        reopened.close()


def test_filters_still_fill_the_limit(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    ws, ctx, ids, vectors = _fill(store)
    query = vectors[1]
    with store.db.write() as conn:  # a narrow filter (200 rows) and a wide one (1500)
        for column, value, step in (("type", "rare", 15), ("importance", 0.9, 2)):
            chosen = [ids[i] for i in range(0, ROWS, step)]
            conn.execute(
                f"UPDATE memories SET {column} = ? WHERE id IN ({','.join('?' * len(chosen))})",
                (value, *chosen),
            )
    rare = {ids[i] for i in range(0, ROWS, 15)}
    assert (
        _ids(store, ws, ctx, query, 150, types=["rare"]) == _exact(ids, vectors, query, rare)[:150]
    )
    half = {ids[i] for i in range(0, ROWS, 2)}
    hits = _ids(store, ws, ctx, query, 40, importance_min=0.8)
    assert len(hits) == 40 and set(hits) <= half
    assert len(set(hits[:10]) & set(_exact(ids, vectors, query, half)[:10])) >= 9
    # Should the graph walk come back short, the exact search answers instead.
    monkeypatch.setattr(vector_graph.HnswGraph, "search", lambda self, q, count: [])
    assert (
        _ids(store, ws, ctx, query, 40, importance_min=0.8)
        == _exact(ids, vectors, query, half)[:40]
    )


def test_graph_is_persisted_and_reused_without_a_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _open(tmp_path / "k.db")
    ws, ctx, _, vectors = _fill(store)
    before = _ids(store, ws, ctx, vectors[9])
    store.close()
    builds: list[int] = []
    real = vector_graph.HnswGraph.build

    def spy(dim: int, ids: Any, matrix: np.ndarray) -> vector_graph.HnswGraph:
        builds.append(len(ids))
        return real(dim, ids, matrix)

    monkeypatch.setattr(vector_graph.HnswGraph, "build", staticmethod(spy))
    reopened = _open(tmp_path / "k.db")
    try:
        assert _ids(reopened, ws, ctx, vectors[9]) == before
        assert builds == [] and reopened.index.rebuilds == 0
    finally:
        reopened.close()


def test_stale_file_after_a_crash_is_reconciled_with_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _open(tmp_path / "k.db")
    ws, ctx, ids, vectors = _fill(store)
    store.vector_search(ws, [ctx], vectors[0], LIVE, 10)
    store.close()  # the cache file (with its graph) at this generation
    # A later process moves a memory elsewhere, removes another, and dies before its cache.
    conn = sqlite3.connect(tmp_path / "k.db")
    far = -vectors[0]
    conn.execute("UPDATE memories SET embedding = ? WHERE id = ?", (encode_vector(far), ids[7]))
    conn.execute("UPDATE memories SET deleted_at = '2026-01-01T00:00:00Z' WHERE id = ?", (ids[0],))
    conn.execute("UPDATE contexts SET vector_generation = vector_generation + 1")
    conn.commit()
    conn.close()
    monkeypatch.setattr(vector_graph.HnswGraph, "build", None)  # no full build: reconciled
    reopened = _open(tmp_path / "k.db")
    try:
        assert _ids(reopened, ws, ctx, far, 5)[0] == ids[7]
        assert ids[0] not in _ids(reopened, ws, ctx, vectors[0], 100)
        assert reopened.index.rebuilds == 1
    finally:
        reopened.close()


def test_torn_or_mismatched_graph_is_never_trusted(tmp_path: Path) -> None:
    store = _open(tmp_path / "k.db")
    ws, ctx, _, vectors = _fill(store)
    before = _ids(store, ws, ctx, vectors[4])
    store.close()
    path = next((tmp_path / "k.db.vectors").glob("*.npz"))
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["graph_keys"] = arrays["graph_keys"][::-1].copy()  # keys no longer match the rows
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)
    reopened = _open(tmp_path / "k.db")
    try:
        assert _ids(reopened, ws, ctx, vectors[4]) == before  # graph rebuilt from the matrix
    finally:
        reopened.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # torn: a rebuild from the database
    again = _open(tmp_path / "k.db")
    try:
        assert _ids(again, ws, ctx, vectors[4]) == before
        assert again.index.rebuilds == 1
    finally:
        again.close()


def test_another_process_writing_makes_the_graph_stale(tmp_path: Path) -> None:
    one = _open(tmp_path / "k.db")
    two = _open(tmp_path / "k.db")
    try:
        ws, ctx, ids, vectors = _fill(one)
        assert _ids(one, ws, ctx, vectors[0])[0] == ids[0]
        assert _ids(two, ws, ctx, vectors[0])[0] == ids[0]
        two.soft_delete_memory(ws, ids[0], NOW)
        assert ids[0] not in _ids(one, ws, ctx, vectors[0], 100)
    finally:
        two.close()
        one.close()


def test_background_build_answers_exactly_until_the_graph_is_ready(tmp_path: Path) -> None:
    store = _open(tmp_path / "k.db", background_graphs=True)
    try:
        ws, ctx, ids, vectors = _fill(store)
        query = vectors[2]
        assert _ids(store, ws, ctx, query, 25) == _exact(ids, vectors, query)[:25]
        index = _index(store, ws, ctx)
        assert index.wait_for_graph(timeout=120) is not None
        assert (
            len(set(_ids(store, ws, ctx, query, 10)) & set(_exact(ids, vectors, query)[:10])) >= 9
        )
        with np.load(next((tmp_path / "k.db.vectors").glob("*.npz"))) as data:
            assert "graph" in data.files  # persisted as soon as it was built
    finally:
        store.close()


def _persisted(rows: int, dim: int) -> tuple[np.ndarray, dict[str, int], list[str], np.ndarray]:
    vectors = np.random.default_rng(3).standard_normal((rows, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"m{i:05d}" for i in range(rows)]
    graph = vector_graph.HnswGraph.build(dim, ids, vectors)
    return graph.to_bytes().copy(), dict(graph.key_of), ids, vectors


def test_a_persisted_graph_is_checked_slice_by_slice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every slice is checked: a graph whose last slice points elsewhere is rejected."""
    monkeypatch.setattr(vector_graph, "CHECK_ROWS", 16)
    blob, key_of, ids, vectors = _persisted(50, DIM)
    assert vector_graph.HnswGraph.from_bytes(blob, key_of, ids, vectors) is not None
    swapped = dict(key_of)
    swapped[ids[40]], swapped[ids[45]] = key_of[ids[45]], key_of[ids[40]]
    assert vector_graph.HnswGraph.from_bytes(blob, swapped, ids, vectors) is None


def test_reading_a_persisted_graph_needs_no_second_copy_of_the_vectors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 16's memory target: loading a 100k graph used to hold every vector two more
    times in float32 (the graph's copy, then a stacked one) beside the matrix. Now the check
    goes a slice at a time: Python allocates far less than the matrix itself."""
    import tracemalloc

    monkeypatch.setattr(vector_graph, "CHECK_ROWS", 512)
    blob, key_of, ids, vectors = _persisted(8000, 64)
    tracemalloc.start()
    try:
        graph = vector_graph.HnswGraph.from_bytes(blob, key_of, ids, vectors)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert graph is not None
    assert peak < vectors.nbytes / 2, (peak, vectors.nbytes)
