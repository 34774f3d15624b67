"""Filters and keyset paging of list_memories against a brute-force model, on real SQLite.

One store of varied memories per test; hypothesis draws the filters and page sizes. Paging
must return exactly the filtered set, newest first, with nothing skipped or repeated, also
while other threads keep inserting.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kioku.embeddings.fake import FakeEmbedder
from kioku.models import Memory, MemoryCreate, RecallFilters
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from tests.conftest import ManualClock, make_settings

TYPES = ("note", "rule", "fact")
TAGS = ("infra", "people", "ja", "urgent")
MODES = ("on_recall", "always")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Runtime, list[Memory]]]:
    clock = ManualClock()
    path: Path = tmp_path_factory.mktemp("listing")
    runtime = open_runtime(make_settings(path), embedder=FakeEmbedder(), clock=clock)
    principal = runtime.local_principal("rest")
    rng = random.Random(7)
    written = []
    for i in range(60):
        if i % 3:  # some share a created_at: the id breaks the tie
            clock.advance(seconds=1)
        data = MemoryCreate(
            summary=f"memory {i}",
            type=rng.choice(TYPES),
            tags=rng.sample(TAGS, rng.randint(0, 3)),
            importance=round(rng.random(), 2),
            delivery_mode=rng.choice(MODES),
        )
        written.append(runtime.memories.remember(principal, "default", data))
    for memory in written[::7]:
        runtime.memories.forget(principal, "default", memory.id)
    try:
        yield runtime, written
    finally:
        runtime.close()


FILTERS = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, max_size=2),
        "tags": st.lists(st.sampled_from(TAGS), min_size=1, max_size=2)
        | st.builds(lambda t: {"all": t}, st.lists(st.sampled_from(TAGS), min_size=1, max_size=2)),
        "importance_min": st.sampled_from([0.0, 0.25, 0.5]),
        "importance_max": st.sampled_from([0.5, 0.75, 1.0]),
        "delivery_mode": st.sampled_from(MODES),
        "include_deleted": st.booleans(),
    },
)


def expected(memories: list[Memory], runtime: Runtime, f: dict) -> list[str]:
    principal = runtime.local_principal("rest")
    kept = []
    for m in memories:
        current = runtime.store.get_memory(principal.workspace_id, m.id)
        assert current is not None
        if current.deleted_at is not None and not f.get("include_deleted"):
            continue
        types = f.get("type")
        if types is not None and m.type not in ([types] if isinstance(types, str) else types):
            continue
        tags = f.get("tags")
        if isinstance(tags, list) and not set(tags) & set(m.tags):
            continue
        if isinstance(tags, dict) and not set(tags["all"]) <= set(m.tags):
            continue
        if m.importance < f.get("importance_min", 0.0):
            continue
        if m.importance > f.get("importance_max", 1.0):
            continue
        if "delivery_mode" in f and m.delivery_mode != f["delivery_mode"]:
            continue
        kept.append(m)
    kept.sort(key=lambda m: (m.created_at, m.id), reverse=True)
    return [m.id for m in kept]


def page_through(
    runtime: Runtime, principal: Principal, filters: RecallFilters, limit: int
) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        page = runtime.memories.list_memories(
            principal, "default", filters, cursor=cursor, limit=limit
        )
        ids += [m.id for m in page.items]
        if page.next_cursor is None:
            return ids
        cursor = page.next_cursor


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(FILTERS, st.integers(1, 25))
def test_paging_any_filter_returns_exactly_the_filtered_set_newest_first(
    store: tuple[Runtime, list[Memory]], raw: dict, limit: int
) -> None:
    runtime, memories = store
    principal = runtime.local_principal("rest")
    listed = page_through(runtime, principal, RecallFilters(**raw), limit)
    assert listed == expected(memories, runtime, raw)


def test_keyset_paging_never_skips_or_repeats_under_concurrent_inserts(tmp_path: Path) -> None:
    runtime = open_runtime(make_settings(tmp_path), embedder=FakeEmbedder())
    try:
        principal = runtime.local_principal("rest")
        before = [
            runtime.memories.remember(principal, "default", MemoryCreate(summary=f"old {i}")).id
            for i in range(120)
        ]
        stop = threading.Event()
        inserted: list[str] = []

        def writer(n: int) -> None:
            local = runtime.local_principal("rest")
            i = 0
            while not stop.is_set():
                made = runtime.memories.remember(
                    local, "default", MemoryCreate(summary=f"new {n}-{i}")
                )
                inserted.append(made.id)
                i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        try:
            seen = page_through(runtime, principal, RecallFilters(), 7)
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        assert inserted, "the writers must have run while paging"
        assert len(seen) == len(set(seen)), "a memory was listed twice"
        assert set(before) <= set(seen), "a memory that existed all along was skipped"
        assert set(seen) <= set(before) | set(inserted)
    finally:
        runtime.close()
