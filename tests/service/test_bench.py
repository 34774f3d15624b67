"""The bench's and the gate's service (``runtime.bench``), on both backends: vectors stored as
given, counts, the indexes a large scope builds in the background, rows read without an
access counted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kioku.embeddings.fake import FakeEmbedder
from kioku.models import BatchCreate
from kioku.runtime import Runtime, open_runtime
from tests.conftest import ManualClock, make_settings
from tests.postgres import empty_postgres_database


@pytest.fixture(params=["sqlite", "postgres"])
def bench_runtime(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> Iterator[Runtime]:
    """A runtime that writes without embedding (as the scale bench's fill: ``remember_docs``
    detaches the scheduler), and whose lexical index (both backends) covers a scope of 2
    memories or more."""
    url = {}
    if request.param == "postgres":
        url = {"database_url": request.getfixturevalue("postgres_database")}
        empty_postgres_database(url["database_url"])
    settings = make_settings(tmp_path, lexical_index_min=2, **url)
    rt = open_runtime(settings, embedder=FakeEmbedder(), clock=clock)
    rt.memories.embedding = None
    try:
        yield rt
    finally:
        rt.close()


def test_vectors_seeded_as_given_leave_nothing_to_embed(bench_runtime: Runtime) -> None:
    rt = bench_runtime
    me = rt.local_principal("import")
    context_id = rt.contexts.resolve(me, "default").id
    items = [{"summary": f"Synthetic turn {i}"} for i in range(3)]
    made = rt.memories.remember_batch(me, "default", BatchCreate(items=items))
    ids = [r.memory_id for r in made.results if r.memory_id is not None]
    assert rt.health.database_health().embedding_queue == 3
    assert rt.embedder is not None
    dim = rt.embedder.embed_query("probe").shape[0]
    vectors = np.eye(3, dim, dtype=np.float32)
    pairs = list(zip(ids, vectors, strict=True))
    landed = rt.bench.store_vectors(me, context_id, rt.embedder.name, pairs)
    assert landed == 3
    assert rt.health.database_health().embedding_queue == 0
    assert rt.bench.count_memories(me, context_id) == 3
    rt.memories.forget(me, "default", ids[0])
    assert rt.bench.count_memories(me, context_id) == 2


def test_a_large_scopes_index_is_built_on_request(bench_runtime: Runtime) -> None:
    rt = bench_runtime
    me = rt.local_principal("import")
    context_id = rt.contexts.resolve(me, "default").id
    assert not rt.bench.needs_lexical_index(me, context_id)  # empty
    items = [{"summary": f"Synthetic turn {i}"} for i in range(3)]
    rt.memories.remember_batch(me, "default", BatchCreate(items=items))
    assert rt.bench.needs_lexical_index(me, context_id)  # both backends have one
    assert rt.bench.wait_for_lexical_index(me, timeout=30)
    assert rt.bench.build_vector_graph(me, context_id) is False  # no large vector index here


def test_voted_rows_are_read_without_an_access(bench_runtime: Runtime) -> None:
    rt = bench_runtime
    me = rt.local_principal("import")
    items = [{"summary": "Kept"}, {"summary": "Forgotten"}]
    made = rt.memories.remember_batch(me, "default", BatchCreate(items=items))
    kept, gone = [r.memory_id for r in made.results if r.memory_id is not None]
    rt.memories.forget(me, "default", gone)
    rows = rt.bench.memories_by_id(me, [kept, gone, "missing"])
    assert set(rows) == {kept, gone}
    assert rows[gone].deleted_at is not None
    assert rows[kept].access_count == 0
    rt.bench.memories_by_id(me, [kept])
    assert rt.bench.memories_by_id(me, [kept])[kept].access_count == 0
    other = rt.workspaces.owner("elsewhere", "cli", create=True)
    assert other is not None
    assert rt.bench.memories_by_id(other, [kept]) == {}
