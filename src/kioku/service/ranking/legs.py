"""Stage ``legs``: the lexical leg (BM25) and the vector leg (query embedding + nearest
neighbours), each ``depth`` deep, over the contexts of the scope.

The vector leg searches only contexts whose stored vectors come from the embedder the query
can be embedded with. The two legs run side by side (``PARALLEL``): the vector leg on a pool
thread and its own connection. At LoCoMo scale that measured no faster than in turn (over
REST equal within noise; in-process, SQLite 16.2 ms side by side vs 15.5 ms in turn), but at
100,000 memories the lexical leg is heavy SQL that releases the GIL and in turn it cost the
whole query embedding on top (whole recall p50 47 ms in turn; docs/benchmarks.md, *Recall as
a pipeline*).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from kioku.service import telemetry
from kioku.service.ranking.state import Ranking, Tools
from kioku.storage.records import ScoredId

PARALLEL = True
"""Run the vector leg on a pool thread beside the lexical leg (measured, above)."""
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kioku-recall")


def run(ranking: Ranking, tools: Tools) -> None:
    """Fill ``ranking.ran`` with each asked-for leg's candidates (lexical first) and
    ``ranking.query_vector`` when the vector leg ran."""
    contexts = vector_contexts(ranking, tools)
    vector_leg: Future[list[ScoredId]] | None = None
    vector: list[ScoredId] | None = None
    lexical: list[ScoredId] | None = None
    if "vector" in ranking.legs and tools.embedder is not None and contexts:
        embedder = tools.embedder

        def search_vectors() -> list[ScoredId]:
            ranking.query_vector = embedder.embed_query(ranking.query.text)
            return tools.store.vector_search(
                ranking.ws, contexts, ranking.query_vector, ranking.flt, ranking.depth
            )

        if PARALLEL:
            vector_leg = _POOL.submit(timed_leg, ranking, "vector", search_vectors)
        else:
            vector = timed_leg(ranking, "vector", search_vectors)
    if "lexical" in ranking.legs:
        lexical = timed_leg(
            ranking,
            "lexical",
            lambda: tools.store.lexical_search(
                ranking.ws, ranking.context_ids, ranking.query.terms, ranking.flt, ranking.depth
            ),
        )
    if vector_leg is not None:
        vector = vector_leg.result()
    if lexical is not None:
        ranking.ran["lexical"] = lexical
    if vector is not None:
        ranking.ran["vector"] = vector


def vector_contexts(ranking: Ranking, tools: Tools) -> list[str]:
    """Contexts of the scope whose stored vectors come from the embedder we can embed the
    query with."""
    if tools.embedder is None:
        return []
    return [row.id for row in ranking.scope if row.embedding_model == tools.embedder.name]


def timed_leg(ranking: Ranking, leg: str, search: Callable[[], list[ScoredId]]) -> list[ScoredId]:
    """Run one leg's search; its time goes to ``telemetry`` and to the ranking's timings
    (``Server-Timing``: ``lexical`` and ``vector`` inside ``legs``)."""
    began = time.perf_counter()
    try:
        return search()
    finally:
        took = time.perf_counter() - began
        ranking.timings[leg] = took
        telemetry.recall_leg(leg, took)
