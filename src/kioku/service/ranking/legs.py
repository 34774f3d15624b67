"""Stage ``legs``: the lexical leg (BM25) and the vector leg (query embedding + nearest
neighbours), each ``depth`` deep, over the contexts of the scope.

The vector leg searches only contexts whose stored vectors come from the embedder the query
can be embedded with. The query embedding needs nothing but the query's text, so recall starts
it on a pool thread before anything else (``VectorLeg``, from ``service/recall.py``, before the
scope is read); once the scope is known the same thread searches the vectors on its own
connection, while the lexical leg runs here. At 100,000 memories the lexical leg is heavy SQL
that releases the GIL and in turn it cost the whole query embedding on top (whole recall p50
47 ms in turn vs 31 side by side; docs/benchmarks.md, *Recall as a pipeline*); at LoCoMo scale
the embedding is the longer of the two: the scope and the lexical leg hide behind it, and so
do the reads the stages want about the lexical candidates (``Stage.read_ahead``: ``signals``
and ``thread_neighbours``; the stages then read only the vector leg's others).
"""

from __future__ import annotations

import time

from kioku.service import telemetry
from kioku.service.ranking.state import Ranking, Tools
from kioku.service.ranking.vector_leg import VectorLeg
from kioku.storage.records import ScoredId


def run(ranking: Ranking, tools: Tools) -> None:
    """Fill ``ranking.ran`` with each asked-for leg's candidates (lexical first) and
    ``ranking.query_vector`` when the query was embedded."""
    contexts = vector_contexts(ranking, tools)
    leg = ranking.vector_leg
    if leg is None and "vector" in ranking.legs and tools.embedder is not None and contexts:
        leg = ranking.vector_leg = VectorLeg(tools.embedder, ranking.query.text)
    if leg is not None:
        if "vector" in ranking.legs and contexts:
            leg.search(
                lambda vector: tools.store.vector_search(
                    ranking.ws, contexts, vector, ranking.flt, ranking.depth
                )
            )
        else:
            leg.skip()
    lexical: list[ScoredId] | None = None
    if "lexical" in ranking.legs:
        began = time.perf_counter()
        try:
            lexical = tools.store.lexical_search(
                ranking.ws, ranking.context_ids, ranking.query.terms, ranking.flt, ranking.depth
            )
        finally:
            _note(ranking, "lexical", time.perf_counter() - began)
    if lexical is not None:
        ranking.ran["lexical"] = lexical
    if leg is not None:
        ids = [hit.memory_id for hit in lexical or ()]
        for read_ahead in ranking.read_ahead:
            if not ids or leg.done():
                break  # the embedding is the longer: the stages' reads go ahead meanwhile
            read_ahead(ranking, tools, ids)
        vector, found, took = leg.result()
        ranking.query_vector = vector
        if found is not None:
            _note(ranking, "vector", took)
            ranking.ran["vector"] = found


def vector_contexts(ranking: Ranking, tools: Tools) -> list[str]:
    """Contexts of the scope whose stored vectors come from the embedder we can embed the
    query with."""
    if tools.embedder is None:
        return []
    return [row.id for row in ranking.scope if row.embedding_model == tools.embedder.name]


def _note(ranking: Ranking, leg: str, took: float) -> None:
    """One leg's time, to ``telemetry`` and the ranking's timings (``Server-Timing``:
    ``lexical`` and ``vector`` inside ``legs``; the vector leg's counts from its start, before
    the scope was read)."""
    ranking.timings[leg] = took
    telemetry.recall_leg(leg, took)
