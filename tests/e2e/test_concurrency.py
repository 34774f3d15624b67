"""Many writers and readers at once: processes on one SQLite file, threads on PostgreSQL.

Each worker remembers (one by one and in atomic batches), recalls what it wrote, upserts a
shared state key and its own, and gives feedback. Afterwards the invariants are checked on the
tables themselves: every write exactly once, one row per state key, the lexical index in step
with the table, every vector stored and findable.
"""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path

import psycopg
import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.models import BatchCreate, FeedbackCreate, MemoryCreate, RecallRequest, StateSet
from kioku.runtime import Runtime, open_runtime
from kioku.storage.sqlite.lexical import lexical_tables
from tests.conftest import make_settings
from tests.postgres import empty_postgres_database

pytestmark = pytest.mark.e2e

WORKERS = 4
SINGLES = 15
BATCHES = 2
BATCH = 20
PER_WORKER = SINGLES + BATCHES * BATCH


def work(runtime: Runtime, worker: int) -> list[str]:
    """One worker's share; returns the ids it wrote. Raises on any wrong answer."""
    principal = runtime.local_principal("rest")
    written: list[str] = []
    for i in range(SINGLES):
        summary = f"worker {worker} single {i} token w{worker}s{i}"
        memory = runtime.memories.remember(principal, "default", MemoryCreate(summary=summary))
        written.append(memory.id)
        found = runtime.recall.recall(principal, "default", RecallRequest(query=f"w{worker}s{i}"))
        assert found.results and found.results[0].id == memory.id, summary
        feedback = FeedbackCreate(memory_id=memory.id, helpful=i % 2 == 0, query=summary)
        runtime.feedback.feedback(principal, "default", feedback)
        runtime.state.set_state(principal, "default", "shared", StateSet(value={"w": worker}))
        runtime.state.set_state(principal, "default", f"own-{worker}", StateSet(value=i))
    for b in range(BATCHES):
        items = [
            {"summary": f"worker {worker} batch {b} item {i} token w{worker}b{b}i{i}"}
            for i in range(BATCH)
        ]
        result = runtime.memories.remember_batch(
            principal, "default", BatchCreate(items=items, atomic=True)
        )
        assert result.failed == 0
        written += [item.memory_id for item in result.results if item.memory_id]
    return written


def _process_worker(database: str, worker: int, out: multiprocessing.Queue) -> None:
    runtime = open_runtime(make_settings(Path(database).parent), embedder=FakeEmbedder())
    try:
        out.put((worker, work(runtime, worker), None))
    except BaseException as exc:  # reported to the parent, which fails the test
        out.put((worker, [], repr(exc)))
    finally:
        runtime.close()


def check_answers(runtime: Runtime, written: list[str]) -> None:
    """The invariants every backend must hold, seen through the service."""
    principal = runtime.local_principal("rest")
    assert len(written) == len(set(written)) == WORKERS * PER_WORKER
    stats = runtime.stats.stats(principal, "default")
    assert stats.memories == len(written)
    assert stats.embeddings == {"ready": len(written), "pending": 0, "failed": 0}
    assert sum(stats.feedback.values()) == WORKERS * SINGLES
    keys = {s.key: s.value for s in runtime.state.list_state(principal, "default", limit=100).items}
    assert set(keys) == {"shared", *(f"own-{w}" for w in range(WORKERS))}
    assert all(keys[f"own-{w}"] == SINGLES - 1 for w in range(WORKERS))
    # Vector index in step: each sampled memory is the vector leg's nearest to its own text.
    for memory_id in written[:: len(written) // 10]:
        memory = runtime.memories.get_memory(principal, "default", memory_id)
        hits = runtime.recall.recall(
            principal, "default", RecallRequest(query=memory.summary, k=1), legs=("vector",)
        )
        assert hits.results[0].id == memory_id


def test_processes_on_one_sqlite_file_lose_and_double_nothing(tmp_path: Path) -> None:
    database = tmp_path / "kioku.db"
    open_runtime(make_settings(tmp_path), embedder=FakeEmbedder()).close()  # migrated once
    spawn = multiprocessing.get_context("spawn")
    out = spawn.Queue()
    processes = [
        spawn.Process(target=_process_worker, args=(str(database), w, out)) for w in range(WORKERS)
    ]
    for process in processes:
        process.start()
    answers = [out.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    assert [error for _, _, error in answers if error] == []
    written = [memory_id for _, ids, _ in answers for memory_id in ids]
    runtime = open_runtime(make_settings(tmp_path), embedder=FakeEmbedder())
    try:
        check_answers(runtime, written)
    finally:
        runtime.close()
    with sqlite3.connect(database) as conn:
        assert conn.execute(
            "SELECT count(*) FROM (SELECT key FROM agent_states GROUP BY context_id, key "
            "HAVING count(*) > 1)"
        ).fetchone() == (0,)
        (rows,) = conn.execute("SELECT count(*) FROM memories").fetchone()
        indexed = sum(
            conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in lexical_tables(conn)
        )
        assert rows == indexed == len(written)


def test_threads_on_postgresql_lose_and_double_nothing(
    tmp_path: Path, postgres_database: str
) -> None:
    empty_postgres_database(postgres_database)
    settings = make_settings(tmp_path, database_url=postgres_database)
    runtime = open_runtime(settings, embedder=FakeEmbedder())
    try:
        results: dict[int, list[str]] = {}
        errors: list[BaseException] = []

        def run(worker: int) -> None:
            try:
                results[worker] = work(runtime, worker)
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(w,)) for w in range(WORKERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        written = [memory_id for ids in results.values() for memory_id in ids]
        check_answers(runtime, written)
    finally:
        runtime.close()
    with psycopg.connect(postgres_database) as conn:
        conn.execute("SELECT set_config('kioku.workspace_id', '*', false)")
        assert conn.execute(
            "SELECT count(*) FROM (SELECT key FROM agent_states GROUP BY context_id, key "
            "HAVING count(*) > 1) AS d"
        ).fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*) FROM memories WHERE lexical_tokens = ''::tsvector OR embedding IS NULL"
        ).fetchone() == (0,)
