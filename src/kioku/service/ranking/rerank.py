"""Stage ``rerank``: the bounded feature re-ranker. Each score is multiplied by
``rerank_factor`` (importance, recency against the newest candidate, accesses, feedback:
within ±``MAX_SHIFT``, ``search/rerank.py``), so the legs decide and the features break
near-ties. Off (``rerank=False``, the eval gate's plain-hybrid arm): every factor is 1.0.
"""

from __future__ import annotations

from kioku.search.rerank import rerank_factor
from kioku.service.ranking.state import Ranking, Tools


def run(ranking: Ranking, tools: Tools) -> None:
    signals = ranking.signals
    if not ranking.ranked:
        return
    newest = max(signals[memory_id].created_at for _, memory_id in ranking.ranked)
    factors = {
        memory_id: rerank_factor(signals[memory_id], newest) for _, memory_id in ranking.ranked
    }
    ranking.record("rerank", factors)
    ranking.order({memory_id: score * factors[memory_id] for score, memory_id in ranking.ranked})
