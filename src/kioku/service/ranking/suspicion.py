"""Stage ``suspicion``: external text that reads like orders to an AI (the injection
tripwire's stored verdict) keeps ``SUSPICIOUS_FACTOR`` of its score (``search/rerank.py``):
still returned and flagged, but memory scoring at least half as much ranks above it.
A safety rule, not a quality one: no ablation turns it off (``rerank=False`` does).
"""

from __future__ import annotations

from kioku.search.rerank import suspicion_factor
from kioku.service.ranking.state import Ranking, Tools


def run(ranking: Ranking, tools: Tools) -> None:
    demoted = {
        memory_id: factor
        for _, memory_id in ranking.ranked
        if (factor := suspicion_factor(ranking.signals[memory_id])) != 1.0
    }
    if demoted:
        ranking.record("suspicious", demoted)
        ranking.order(
            {memory_id: score * demoted.get(memory_id, 1.0) for score, memory_id in ranking.ranked}
        )
