"""Stage ``fusion``: the legs' lists made one score per candidate.

The context's leg weights, scaled by the language stage's share and, with
``leg_trust: sharpness``, by how sharply the lexical leg's best hit stands out
(``search/leg_trust.py``); then weighted fusion of min-max scores plus the rank term
(``search/fusion.py``; no rank term for a question in Japanese), or RRF.
"""

from __future__ import annotations

from kioku.search.fusion import add_rank_term, fuse_rrf, fuse_weighted, rank_weights_for
from kioku.search.leg_trust import trusted_weights
from kioku.service.ranking.state import Ranking, Tools


def run(ranking: Ranking, tools: Tools) -> None:
    config = ranking.config
    ran = ranking.ran
    weights = {
        "lexical": config.lexical_weight * ranking.weight_scale.get("lexical", 1.0),
        "vector": config.vector_weight * ranking.weight_scale.get("vector", 1.0),
    }
    if config.leg_trust == "sharpness":
        weights = trusted_weights(ran, weights)
    if config.fusion == "weighted":
        fused = fuse_weighted(ran, weights, ranking.blind)
        rank_weights = rank_weights_for(
            ranking.query.language, config.lexical_rank_weight, config.vector_rank_weight
        )
        fused = add_rank_term(fused, ran, weights, rank_weights, ranking.blind)
    else:
        fused = fuse_rrf(ran, weights, config.rrf_k)
    ranking.fused = fused
    ranking.record("fused", fused)
    # Only candidates still there (``signals``): one purged since the legs ran leaves here.
    ranking.order({m: score for m, score in fused.items() if m in ranking.signals})
