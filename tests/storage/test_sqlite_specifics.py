"""SQLite-only behaviour: WAL, the vector cache beside the file, crash staleness."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kioku.service.hebbian import strengthen_edges, weaken_edges
from kioku.storage.records import MemoryFilter
from kioku.storage.sqlite import SQLiteStore
from tests.storage.test_contract import T0, new_context, new_memory, vec


def test_database_is_one_wal_file(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "k.db")
    try:
        mode = store.db.connection().execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    finally:
        store.close()


def test_vectors_written_by_another_process_are_seen(tmp_path: Path) -> None:
    """Two processes on one file: the reader's index notices the writer's generation bump."""
    path = tmp_path / "k.db"
    reader, writer = SQLiteStore(path), SQLiteStore(path)
    try:
        ws = reader.ensure_workspace("w").id
        ctx = new_context(reader, ws, "c")
        first = new_memory(ctx.id, "a")
        reader.insert_memories(ws, [first])
        reader.store_embeddings(ws, ctx.id, "m", [(first.id, vec(1, 0))])
        assert len(reader.vector_search(ws, [ctx.id], vec(1, 0), MemoryFilter(), 5)) == 1
        second = new_memory(ctx.id, "b")
        writer.insert_memories(ws, [second])
        writer.store_embeddings(ws, ctx.id, "m", [(second.id, vec(0.9, 0.1))])
        hits = reader.vector_search(ws, [ctx.id], vec(1, 0), MemoryFilter(), 5)
        assert {h.memory_id for h in hits} == {first.id, second.id}
    finally:
        reader.close()
        writer.close()


def test_crash_after_commit_leaves_a_stale_cache_that_is_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "k.db"
    store = SQLiteStore(path)
    ws = store.ensure_workspace("w").id
    ctx = new_context(store, ws, "c")
    rows = [new_memory(ctx.id, "a"), new_memory(ctx.id, "b")]
    store.insert_memories(ws, rows)
    store.store_embeddings(ws, ctx.id, "m", [(rows[0].id, vec(1, 0))])
    store.vector_search(ws, [ctx.id], vec(1, 0), MemoryFilter(), 5)
    store.close()  # cache file written at this generation
    # A later process commits a vector and dies before writing its cache file.
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE memories SET embedding = ?, embedding_model = 'm', embedding_status = 'ready' "
        "WHERE id = ?",
        (vec(0, 1).astype("<f4").tobytes(), rows[1].id),
    )
    conn.execute("UPDATE contexts SET vector_generation = vector_generation + 1")
    conn.commit()
    conn.close()
    reopened = SQLiteStore(path)
    try:
        hits = reopened.vector_search(ws, [ctx.id], vec(0, 1), MemoryFilter(), 5)
        assert hits[0].memory_id == rows[1].id
        assert reopened.index.rebuilds == 1
    finally:
        reopened.close()


def test_edge_lookups_by_pair_use_the_primary_key(tmp_path: Path) -> None:
    """The graph's reads and deletes of a list of pairs look each pair up on the primary key:
    SQLite 3.40 scans the workspace's edges for ``(a, b) IN (VALUES …)`` or an OR of
    equalities (a Hebbian update then costs a scan of the whole graph)."""
    store = SQLiteStore(tmp_path / "k.db")
    try:
        ws = store.ensure_workspace("w").id
        ctx = new_context(store, ws, "c")
        rows = [new_memory(ctx.id, f"m{i}") for i in range(40)]
        store.insert_memories(ws, rows)
        ids = [row.id for row in rows]
        strengthen_edges(store, ws, ctx.id, [(a, b) for a in ids for b in ids], 0.1, T0)
        statements: list[str] = []
        conn = store.db.connection()
        conn.set_trace_callback(statements.append)
        pairs = list(zip(ids[:10], ids[10:20], strict=True))
        strengthen_edges(store, ws, ctx.id, pairs, 0.1, T0)
        weaken_edges(store, ws, ctx.id, pairs, 0.9, 0.5, T0)  # below the floor: deleted
        conn.set_trace_callback(None)
        by_pair = [s for s in statements if "memory_edges" in s and "source_id" in s]
        lookups = [s for s in by_pair if s.startswith(("SELECT", "DELETE"))]
        assert any(s.startswith("DELETE") for s in lookups)
        for statement in lookups:
            plan = " ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + statement))
            assert "workspace_id=? AND source_id=? AND target_id=?" in plan, (statement, plan)
    finally:
        store.close()


def test_thread_neighbours_look_candidates_up_by_id(tmp_path: Path) -> None:
    """Recall's ``thread_neighbours`` read finds each candidate by its id, then its neighbours
    through ``ix_memories_thread``: SQLite's planner (no statistics) otherwise walked every
    threaded memory of the workspace through that index to find the few candidates (3.5 ms a
    recall at 100,000 memories)."""
    store = SQLiteStore(tmp_path / "k.db")
    try:
        ws = store.ensure_workspace("w").id
        ctx = new_context(store, ws, "c")
        rows = [
            new_memory(ctx.id, f"t{i}", thread=f"s{i % 5}", thread_position=i) for i in range(200)
        ]
        store.insert_memories(ws, rows)
        candidates = [row.id for row in rows[:80]]  # as many as a recall's legs bring
        statements: list[str] = []
        conn = store.db.connection()
        conn.set_trace_callback(statements.append)
        pairs = store.thread_neighbours(ws, [ctx.id], candidates, MemoryFilter())
        conn.set_trace_callback(None)
        assert {(rows[7].id, rows[2].id), (rows[7].id, rows[12].id)} <= set(pairs)
        (statement,) = [s for s in statements if "AS prev_id" in s]
        plan = [r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + statement)]
        assert plan[0].startswith("SEARCH c USING INDEX sqlite_autoindex_memories_1 (id=?)"), plan
        neighbours = [step for step in plan if step.startswith("SEARCH m")]
        assert len(neighbours) == 2, plan
        assert all("ix_memories_thread (workspace_id=? AND context_id=? AND thread=?" in step
                   for step in neighbours), plan  # fmt: skip
    finally:
        store.close()
