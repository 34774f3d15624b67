"""The background embedding worker after a transient error (its leases are given back) and
past its time budget (the slow memory is marked failed, the others embed)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np

from kioku.embeddings.fake import FakeEmbedder
from kioku.models import MemoryCreate, RecallRequest
from kioku.runtime import open_runtime
from kioku.service.embedding import EmbeddingScheduler
from kioku.storage.base import Store
from kioku.storage.records import EMBED_MAX_CHARS
from tests.conftest import make_settings


class _FailsOnce:
    """Wraps a real store; the first ``store_embeddings`` raises, as a deadlock would."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.failures = 0

    def store_embeddings(
        self,
        workspace_id: str,
        context_id: str,
        model: str,
        items: Sequence[tuple[str, np.ndarray]],
    ) -> int:
        if self.failures == 0:
            self.failures += 1
            raise RuntimeError("deadlock detected")
        return self._store.store_embeddings(workspace_id, context_id, model, items)

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)


def test_a_failed_batch_is_retried_at_once_not_after_its_lease(tmp_path: Path) -> None:
    runtime = open_runtime(make_settings(tmp_path), embedder=FakeEmbedder())
    try:
        principal = runtime.local_principal("rest")
        written = [
            runtime.memories.remember(principal, "default", MemoryCreate(summary=f"fact {i}"))
            for i in range(3)
        ]
        store = _FailsOnce(runtime.store)
        # The runtime embeds inline in tests; reset to pending to hand the work to a worker.
        context = runtime.contexts.resolve(principal, "default")
        runtime.store.reset_embeddings(principal.workspace_id, context.id)
        worker = EmbeddingScheduler(store, FakeEmbedder())  # type: ignore[arg-type]
        worker.start()
        try:
            deadline = time.monotonic() + 20  # the lease is 5 minutes: only a release is this fast
            while time.monotonic() < deadline:
                stats = runtime.stats.stats(principal, "default")
                if stats.embeddings.get("ready") == len(written):
                    break
                time.sleep(0.1)
        finally:
            worker.stop()
        assert store.failures == 1
        assert runtime.stats.stats(principal, "default").embeddings == {
            "ready": 3,
            "pending": 0,
            "failed": 0,
        }
    finally:
        runtime.close()


class _StallsOn(FakeEmbedder):
    """Hangs for a minute on any text containing ``word`` (a stuck remote API, a pathological
    input), embeds the rest at once."""

    def __init__(self, word: str) -> None:
        super().__init__()
        self.word = word

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if any(self.word in text for text in texts):
            time.sleep(60)
        return super().embed_documents(texts)


def test_a_memory_over_its_time_budget_is_failed_and_the_worker_moves_on(
    tmp_path: Path,
) -> None:
    runtime = open_runtime(make_settings(tmp_path), embedder=FakeEmbedder())
    try:
        principal = runtime.local_principal("rest")
        for summary in ("first fact", "a stalling fact", "last fact"):
            runtime.memories.remember(principal, "default", MemoryCreate(summary=summary))
        context = runtime.contexts.resolve(principal, "default")
        runtime.store.reset_embeddings(principal.workspace_id, context.id)
        worker = EmbeddingScheduler(
            runtime.store, _StallsOn("stalling"), item_budget=timedelta(seconds=0.5)
        )
        started = time.monotonic()
        worker.start()
        try:
            deadline = started + 20
            while time.monotonic() < deadline:
                if runtime.stats.stats(principal, "default").embeddings.get("pending") == 0:
                    break
                time.sleep(0.05)
        finally:
            worker.stop()
        assert time.monotonic() - started < 10  # not the minute the stalled call takes
        assert runtime.stats.stats(principal, "default").embeddings == {
            "ready": 2,
            "pending": 0,
            "failed": 1,
        }
        # Still found by keyword search.
        found = runtime.recall.recall(principal, "default", RecallRequest(query="stalling"))
        lexical = [h.summary for h in found.results if h.score_breakdown.lexical_rank is not None]
        assert lexical == ["a stalling fact"]
    finally:
        runtime.close()


class _Recording(FakeEmbedder):
    """Remembers every text it was handed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return super().embed_documents(texts)


def test_only_a_bounded_prefix_of_a_large_memory_is_embedded(tmp_path: Path) -> None:
    """A 1 MiB memory costs the embedder what 2,048 characters cost; all of it stays found by
    keyword search, the words at its very end included."""
    embedder = _Recording()
    runtime = open_runtime(make_settings(tmp_path), embedder=embedder)
    try:
        principal = runtime.local_principal("rest")
        content = "filler words " * 80_000 + "zanzibar"
        runtime.memories.remember(
            principal, "default", MemoryCreate(summary="a huge note", content=content)
        )
        assert runtime.embedding is not None
        runtime.embedding.drain()
        assert embedder.texts and max(len(text) for text in embedder.texts) == EMBED_MAX_CHARS
        assert embedder.texts[0].startswith("a huge note\nfiller words")
        found = runtime.recall.recall(principal, "default", RecallRequest(query="zanzibar"))
        assert [hit.summary for hit in found.results][:1] == ["a huge note"]
    finally:
        runtime.close()
