"""Where a recall's time goes at scale: each stage of recall's pipeline, as the recall itself
timed it (``RecallResult.timings``: the same figures as ``Server-Timing`` and ``/metrics``).

Beside them: the bare query embedding (``embed query (bare)``, the model alone, what recall
is measured against), the whole ``recall`` call and the JSON serialisation of its answer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from kioku.benchmark.metrics import latency_summary
from kioku.models import RecallRequest
from kioku.runtime import Runtime
from kioku.service.principal import Principal

BREAKDOWN_QUERIES = 50
BARE = "embed query (bare)"
WHOLE = "whole recall"
SERIALIZE = "serialize"


def recall_breakdown(
    runtime: Runtime,
    principals: Sequence[Principal],
    context: str,
    queries: Sequence[str],
    k: int,
) -> dict[str, dict[str, float]]:
    """p50/p95 per step over the first ``BREAKDOWN_QUERIES`` queries (already warmed up);
    query i is asked in the context named ``context`` of ``principals[i mod len]``."""
    samples: dict[str, list[float]] = {}

    def note(step: str, seconds: float) -> None:
        samples.setdefault(step, []).append(seconds * 1000.0)

    embedder = runtime.embedder
    for i, query in enumerate(queries[:BREAKDOWN_QUERIES]):
        principal = principals[i % len(principals)]
        if embedder is not None:
            began = time.perf_counter()
            embedder.embed_query(query)
            note(BARE, time.perf_counter() - began)
        began = time.perf_counter()
        result = runtime.recall.recall(principal, context, RecallRequest(query=query, k=k))
        note(WHOLE, time.perf_counter() - began)
        for step, seconds in result.timings.items():
            note(step, seconds)
        began = time.perf_counter()
        result.model_dump_json()
        note(SERIALIZE, time.perf_counter() - began)
    return {step: latency_summary(values) for step, values in samples.items()}
