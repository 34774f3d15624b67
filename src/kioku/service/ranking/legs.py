"""Stage ``legs``: the lexical leg (BM25) and the vector leg (query embedding + nearest
neighbours), each ``depth`` deep, over the contexts of the scope.

The vector leg searches only contexts whose stored vectors come from the embedder the query
can be embedded with. The two legs run one after the other (``PARALLEL``): side by side on a
pool thread they measured no faster on 2 cores (LoCoMo conv-26, 150 questions, in-process
p50: SQLite 15.5 ms in turn vs 16.2 ms side by side, PostgreSQL 50–56 vs 57 ms; over REST
equal within noise; docs/benchmarks.md, *Recall as a pipeline*): the query embedding takes a
core whole, and the lexical leg's Python parts then wait for the GIL.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from kioku.service import telemetry
from kioku.service.ranking.state import Ranking, Tools
from kioku.storage.records import ScoredId

PARALLEL = False
"""Run the vector leg on a pool thread beside the lexical leg (off: measured slower, above)."""
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
