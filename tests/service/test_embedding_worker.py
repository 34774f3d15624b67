"""The background embedding worker after a transient error: its leases are given back."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kioku.embeddings.fake import FakeEmbedder
from kioku.models import MemoryCreate
from kioku.runtime import open_runtime
from kioku.service.embedding import EmbeddingScheduler
from kioku.storage.base import Store
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
