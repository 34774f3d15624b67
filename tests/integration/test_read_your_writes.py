"""Read-your-writes (issue 31): a memory acknowledged before a recall ranks in that recall
as it will once its vector is stored, on SQLite and PostgreSQL, with the real bundled model.

"Not embedded yet" is made exactly as a busy worker leaves it: the memory service writes the
rows with no embedder to hand them to (``memories.embedding = None``), so they wait as
``pending``; ``drain()`` then embeds them as the worker would.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kioku.embeddings.bundled import BundledEmbedder
from kioku.models import BatchCreate, MemoryCreate, RecallRequest, RecallResult
from kioku.runtime import Runtime, open_runtime
from kioku.service.principal import Principal
from kioku.service.ranking import pending
from tests.conftest import backend_settings

pytestmark = pytest.mark.integration

BACKGROUND = [
    "The quarterly budget review moved to the second floor meeting room.",
    "Alice prefers green tea in the afternoon.",
    "The staging server is rebooted every Sunday night.",
    "Bob's flight to Osaka leaves at 9 in the morning.",
    "The office plants are watered on Mondays and Thursdays.",
    "Our team lunch is usually on Friday at the ramen place.",
    "The printer on the third floor jams with thick paper.",
    "Carol is learning to play the cello.",
    "Backups of the wiki run at 2 am every day.",
    "The parking garage closes at midnight on weekends.",
    "会議室の予約は前日までに総務へ連絡する。",
    "新しいノートパソコンは来週配布される予定だ。",
]


@pytest.fixture(params=["sqlite", "postgres"])
def runtime(
    request: pytest.FixtureRequest, tmp_path: Path, bundled: BundledEmbedder
) -> Iterator[Runtime]:
    runtime = open_runtime(backend_settings(request, tmp_path), embedder=bundled)
    try:
        principal = runtime.local_principal("rest")
        for text in BACKGROUND:  # embedded: the vector leg has a context to search
            runtime.memories.remember(principal, "default", MemoryCreate(summary=text))
        yield runtime
    finally:
        runtime.close()


@contextmanager
def worker_behind(runtime: Runtime) -> Iterator[None]:
    """Writes inside leave their memories ``pending``, as when the worker has not got to them."""
    service = runtime.memories
    saved, service.embedding = service.embedding, None
    try:
        yield
    finally:
        service.embedding = saved


def recall(runtime: Runtime, query: str, k: int = 10) -> RecallResult:
    principal = runtime.local_principal("rest")
    return runtime.recall.recall(principal, "default", RecallRequest(query=query, k=k))


def places(result: RecallResult) -> list[str]:
    return [hit.summary for hit in result.results]


def write_pending(runtime: Runtime, principal: Principal, texts: list[str]) -> None:
    with worker_behind(runtime):
        for text in texts:
            runtime.memories.remember(principal, "default", MemoryCreate(summary=text))


@pytest.mark.parametrize(
    ("fresh", "query"),
    [
        # English: a paraphrase that shares few words with the memory.
        (
            ["The dentist appointment for Dan was moved to Thursday at 4 pm."],
            "When does Dan see the dentist?",
        ),
        # Japanese: half-width katakana stored, full-width asked; the lexical leg matches.
        (["ｻｰﾊﾞｰﾙｰﾑの鍵は受付で借りる。"], "サーバールームの鍵はどこで借りる？"),
        # Two new memories at once, one matching the words three times over.
        (
            [
                "Invoice INV-77 was paid; the invoice INV-77 receipt is filed; INV-77 closed.",
                "An invoice for the catering arrived.",
            ],
            "invoice INV-77",
        ),
    ],
)
def test_a_memory_written_and_recalled_at_once_ranks_as_it_will_once_embedded(
    runtime: Runtime, fresh: list[str], query: str
) -> None:
    principal = runtime.local_principal("rest")
    write_pending(runtime, principal, fresh)
    assert runtime.store.pending_count() == len(fresh)

    before = recall(runtime, query)
    assert before.pending_vectors is not None
    assert before.pending_vectors.embedded == len(fresh)
    assert before.pending_vectors.lexical_only == 0
    assert "vector" in before.legs

    assert runtime.embedding is not None
    runtime.embedding.drain()
    assert runtime.store.pending_count() == 0
    after = recall(runtime, query)
    assert after.pending_vectors is None

    assert places(before) == places(after)
    for early, late in zip(before.results, after.results, strict=True):
        # The score itself moves a little between the two recalls (the first one counted an
        # access to each result: the re-ranker reads that); what the legs and fusion made
        # of each memory does not.
        assert early.score_breakdown.vector == pytest.approx(late.score_breakdown.vector, abs=1e-4)
        assert early.score_breakdown.vector_rank == late.score_breakdown.vector_rank
        assert early.score_breakdown.fused == pytest.approx(late.score_breakdown.fused, abs=1e-4)
    assert fresh[0] in places(after)[:2]


def test_without_the_stage_a_waiting_memory_loses_to_its_own_absence(
    runtime: Runtime,
) -> None:
    """The failure the stage prevents, on the same data: with the stage ablated, a new memory
    that the lexical leg ranks first by far loses first place to an older, embedded one."""
    principal = runtime.local_principal("rest")
    older = "Dan mentioned the garden needs watering."
    runtime.memories.remember(principal, "default", MemoryCreate(summary=older))
    fresh = "Dan's dentist appointment moved to Thursday at 4 pm."
    write_pending(runtime, principal, [fresh])
    request = RecallRequest(query="When is Dan's dentist appointment?", k=5)
    ablated = runtime.recall.recall(principal, "default", request, ablate=frozenset({"pending"}))
    with_stage = recall(runtime, request.query, k=5)
    assert runtime.embedding is not None
    runtime.embedding.drain()
    after = recall(runtime, request.query, k=5)
    assert places(after)[0] == fresh
    assert places(with_stage)[0] == fresh
    assert places(ablated)[0] == older, places(ablated)  # lexical 1.6 over lexical 5.9


def test_with_thousands_pending_an_exact_match_is_found_within_the_bound(
    runtime: Runtime,
) -> None:
    principal = runtime.local_principal("rest")
    filler = [
        {"summary": f"Routine note {i}: the archive calendar was updated for week {i % 52}."}
        for i in range(5000)
    ]
    with worker_behind(runtime):
        for start in range(0, len(filler), 100):
            batch = BatchCreate(items=filler[start : start + 100])
            runtime.memories.remember_batch(principal, "default", batch)
        runtime.memories.remember(
            principal, "default", MemoryCreate(summary="The vault code for the archive is ZK-4417.")
        )
    assert runtime.store.pending_count() == 5001

    began = time.perf_counter()
    result = recall(runtime, "vault code ZK-4417 archive", k=5)
    took = time.perf_counter() - began

    assert places(result)[0] == "The vault code for the archive is ZK-4417."
    assert result.pending_vectors is not None
    assert result.pending_vectors.embedded <= pending.MAX_EMBEDDED
    assert result.pending_vectors.lexical_only > 0  # the bound was hit, and the answer says so
    assert result.timings["pending"] < 1.0  # bounded: a few batches, never the whole backlog
    assert took < 5.0
