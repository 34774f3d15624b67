"""Where a recall's time goes at scale: each step ``RecallService.recall`` takes, timed alone.

The steps mirror ``recall`` for one context and no filters: resolve the context, tokenize the
query for the lexical leg, run that leg, embed the query, run the vector leg, fetch the
candidate rows. Their sum is close to, not equal to, an end-to-end recall; the whole call
(``whole recall``) and the JSON serialisation of its answer (``serialize``) are timed too, so
fusion, re-rank and building the response are the whole minus the steps.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from kioku.benchmark.metrics import latency_summary
from kioku.models import RecallRequest
from kioku.runtime import Runtime
from kioku.search.tokenize import tokenize
from kioku.service.principal import Principal
from kioku.service.recall import MIN_LEG_DEPTH
from kioku.storage.records import MemoryFilter

BREAKDOWN_QUERIES = 50


class _Steps:
    """Collects wall times per step name."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}

    @contextmanager
    def time(self, step: str) -> Iterator[None]:
        began = time.perf_counter()
        yield
        self.samples.setdefault(step, []).append((time.perf_counter() - began) * 1000.0)


def recall_breakdown(
    runtime: Runtime,
    principals: Sequence[Principal],
    context: str,
    queries: Sequence[str],
    k: int,
) -> dict[str, dict[str, float]]:
    """p50/p95 per step over the first ``BREAKDOWN_QUERIES`` queries (already warmed up);
    query i is asked in the context named ``context`` of ``principals[i mod len]``."""
    depth = max(k * runtime.recall.fetch_factor, MIN_LEG_DEPTH)
    flt = MemoryFilter()
    steps = _Steps()
    embedder = runtime.embedder
    for i, query in enumerate(queries[:BREAKDOWN_QUERIES]):
        principal = principals[i % len(principals)]
        ws = principal.workspace_id
        with steps.time("resolve context"):
            context_id = runtime.contexts.resolve(principal, context).id
        with steps.time("tokenize query"):
            terms = tokenize(query)
        with steps.time("lexical leg"):
            hits = runtime.store.lexical_search(ws, [context_id], terms, flt, depth)
        ids = {hit.memory_id for hit in hits}
        if embedder is not None:
            with steps.time("embed query"):
                vector = embedder.embed_query(query)
            with steps.time("vector leg"):
                hits = runtime.store.vector_search(ws, [context_id], vector, flt, depth)
            ids |= {hit.memory_id for hit in hits}
        with steps.time("fetch rows"):
            runtime.store.get_memories(ws, sorted(ids))
        with steps.time("whole recall"):
            result = runtime.recall.recall(principal, context, RecallRequest(query=query, k=k))
        with steps.time("serialize"):
            result.model_dump_json()
    return {step: latency_summary(values) for step, values in steps.samples.items()}
