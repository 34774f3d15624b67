"""Writing a corpus through the real service, timing the write path and the embedding drain."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from kioku.benchmark.data import Doc, split_text
from kioku.embeddings.base import Embedder
from kioku.models import BatchCreate, ContextCreate
from kioku.runtime import Runtime
from kioku.service.principal import Principal

BATCH = 100


class RecordingEmbedder:
    """Wraps the real embedder and remembers every document vector it produced.

    The scale run reuses these vectors. With ``serve`` on, texts already embedded are answered
    from the record (same text, same model, same vector) instead of being embedded again; it is
    off while ingest is timed so no figure benefits from it.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.vectors: dict[str, np.ndarray] = {}
        self.serve = False

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed (or, when serving, look up) documents; every result is recorded."""
        if not self.serve:  # exactly the work the real embedder would do
            vectors = self.inner.embed_documents(texts)
            self.vectors.update(zip(texts, vectors, strict=True))
            return vectors
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.inner.embed_documents(missing), strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a query with the real model (never cached: queries are timed)."""
        return self.inner.embed_query(text)


@dataclass
class IngestTiming:
    """Wall times of one ingest: the write path and, separately, the embedding drain."""

    items: int = 0
    accept_s: float = 0.0
    drain_s: float | None = None

    def as_dict(self) -> dict[str, float | int | None]:
        """Figures for the report: items/s accepted and items/s until vector-searchable."""
        total = self.accept_s + (self.drain_s or 0.0)
        return {
            "items": self.items,
            "accept_s": round(self.accept_s, 3),
            "drain_s": None if self.drain_s is None else round(self.drain_s, 3),
            "accepted_per_s": round(self.items / self.accept_s, 1) if self.accept_s else None,
            "searchable_per_s": (
                round(self.items / total, 1) if self.drain_s is not None and total else None
            ),
        }


@contextmanager
def deferred_embedding(runtime: Runtime) -> Iterator[None]:
    """Detach the embedding scheduler so ``remember_batch`` only writes (memories stay pending).

    ``MemoryService`` embeds inline when no background worker runs; detaching it is the only way
    today to time the write path alone. ``drain_embeddings`` then embeds what is pending.
    """
    scheduler = runtime.memories.embedding
    runtime.memories.embedding = None
    try:
        yield
    finally:
        runtime.memories.embedding = scheduler


def memory_item(doc: Doc) -> dict[str, object]:
    """The ``remember`` body of one document (long texts split between summary and content),
    with the thread and position the data set declares."""
    summary, content = split_text(doc.text)
    item: dict[str, object] = {"summary": summary, "source_uri": doc.source_uri}
    if content:
        item["content"] = content
    if doc.thread is not None:
        item["thread"] = doc.thread
        if doc.position is not None:
            item["position"] = doc.position
    return item


def remember_docs(
    runtime: Runtime,
    principal: Principal,
    context: str,
    docs: Sequence[Doc],
    advance: Callable[[int], None] | None = None,
) -> tuple[dict[str, str], float]:
    """Write ``docs`` in batches of 100 without embedding; returns (memory id → doc key, seconds).

    Only the ``remember_batch`` calls are timed. Any item kioku rejects is an error here.
    """
    ids: dict[str, str] = {}
    elapsed = 0.0
    with deferred_embedding(runtime):
        for start in range(0, len(docs), BATCH):
            chunk = docs[start : start + BATCH]
            batch = BatchCreate(items=[memory_item(doc) for doc in chunk], wait=False)
            began = time.perf_counter()
            result = runtime.memories.remember_batch(principal, context, batch)
            elapsed += time.perf_counter() - began
            if result.failed:
                errors = [r.error for r in result.results if r.error]
                raise RuntimeError(f"kioku rejected {result.failed} items: {errors[:3]}")
            for item, doc in zip(result.results, chunk, strict=True):
                assert item.memory_id is not None
                ids[item.memory_id] = doc.key
            if advance is not None:
                advance(len(chunk))
    return ids, elapsed


def ensure_context(runtime: Runtime, principal: Principal, name: str) -> None:
    """Create the context ``name`` (fails if it exists: every run starts from an empty store)."""
    runtime.contexts.create_context(principal, ContextCreate(name=name))


def drain_embeddings(runtime: Runtime) -> float | None:
    """Embed every pending memory now; returns the seconds it took (``None`` without embedder)."""
    if runtime.embedding is None:
        return None
    began = time.perf_counter()
    runtime.embedding.drain()
    return time.perf_counter() - began
