"""Stage ``pending``: read-your-writes. A memory acknowledged before a recall ranks in it as
it will once its vector is stored.

Until the embedding worker stores its vector, a new memory can only be found by the lexical
leg, and weighted fusion would count the vector leg's silence as a vote of 0 against it: a
memory with three times the lexical score of another would rank below it. So the lexical
leg's candidates that still wait for a vector are embedded here, best lexical first, and
join the vector leg with the score the stored vector will give them (same embedder, same
cosine). The work is bounded: at most ``MAX_EMBEDDED`` of them, in batches of ``BATCH``,
no new batch once ``BUDGET_SECONDS`` have gone. Those left over (a backlog of thousands after
a bulk import) are ranked by the lexical leg alone, the vector leg abstaining on them as on
a memory it cannot read; the result says how many (``pending_vectors``).

Nothing is written: the worker stores the vectors, as for every memory.
"""

from __future__ import annotations

import time

import numpy as np

from kioku.service.ranking.state import PendingVectors, Ranking, Tools
from kioku.storage.records import ScoredId

MAX_EMBEDDED = 8
"""At most this many waiting candidates are embedded for one recall (about 8 × 7 ms of CPU
with the bundled model for short memories)."""
BATCH = 4
BUDGET_SECONDS = 0.05
"""No further batch starts once this much time has gone on this stage."""


def run(ranking: Ranking, tools: Tools) -> None:
    embedder = tools.embedder
    lexical = ranking.ran.get("lexical")
    if embedder is None or not lexical or "vector" not in ranking.legs:
        return
    contexts = {
        row.id for row in ranking.scope if row.embedding_model in (None, embedder.name)
    }  # a context whose vectors come from another model has its own lane (`kioku reembed`)
    signals = ranking.signals
    if not any(signals[hit.memory_id].pending for hit in lexical if hit.memory_id in signals):
        return  # the usual case: every candidate has its vector, nothing more is read
    waiting = tools.store.pending_texts(ranking.ws, [hit.memory_id for hit in lexical])
    order = [
        hit.memory_id
        for hit in lexical
        if hit.memory_id in waiting and waiting[hit.memory_id][0] in contexts
    ]
    if not order:
        return
    began = time.perf_counter()
    if ranking.query_vector is None:
        ranking.query_vector = embedder.embed_query(ranking.query.text)
    query = np.asarray(ranking.query_vector, dtype=np.float32)
    scored: list[ScoredId] = []
    for start in range(0, min(len(order), MAX_EMBEDDED), BATCH):
        if scored and time.perf_counter() - began > BUDGET_SECONDS:
            break
        batch = order[start : min(start + BATCH, MAX_EMBEDDED)]
        vectors = embedder.embed_documents([waiting[memory_id][1] for memory_id in batch])
        for memory_id, vector in zip(batch, vectors, strict=True):
            ranking.fresh_vectors[memory_id] = np.asarray(vector, np.float32)
            scored.append(ScoredId(memory_id, float(ranking.fresh_vectors[memory_id] @ query)))
    fresh = {hit.memory_id for hit in scored}
    merged = [hit for hit in ranking.ran.get("vector", []) if hit.memory_id not in fresh]
    merged += scored
    merged.sort(key=lambda hit: (-hit.score, hit.memory_id))
    ranking.ran["vector"] = merged[: ranking.depth]
    left = order[len(scored) :]
    if left:
        ranking.blind.setdefault("vector", set()).update(left)
    ranking.pending = PendingVectors(embedded=len(scored), lexical_only=len(left))
