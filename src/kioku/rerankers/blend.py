"""How a reranker's scores meet the fused order: by rank, never by raw score.

Rerankers score on scales of their own (TEI's probabilities, Cohere's relevance, a raw
logit), so only the order they give is used. Each candidate of the head gets

    (1 - weight) / (BLEND_K + fused_rank) + weight / (BLEND_K + model_rank)

and the head is sorted by that, ties to the fused order. ``weight`` 0 keeps the fused order,
1 takes the reranker's; between, a candidate both orders place high stays high, and a
reranker that is wrong (or hostile) can only pull a candidate as far as the fused order lets
it. docs/benchmarks.md has what a reranker that reverses the fused order costs at the
default weight, and what a good one gains.
"""

from __future__ import annotations

from collections.abc import Sequence

BLEND_K = 5.0
"""Rank offset: small, so that first places count for more than places 20 and 21."""


def model_ranks(scores: Sequence[float | None]) -> list[int]:
    """Each candidate's 1-based rank by the reranker's score; unscored candidates come after
    every scored one, and ties keep the fused order."""
    order = sorted(
        range(len(scores)),
        key=lambda i: (scores[i] is None, -(scores[i] or 0.0), i),
    )
    ranks = [0] * len(scores)
    for rank, position in enumerate(order, start=1):
        ranks[position] = rank
    return ranks


def blend_head(scores: Sequence[float | None], weight: float) -> list[int]:
    """The new order of a head of candidates given in fused order (best first), as positions
    into it, from the reranker's ``scores`` for them and the reranker's ``weight`` in [0, 1]."""
    ranks = model_ranks(scores)
    blended = [
        (1.0 - weight) / (BLEND_K + i + 1) + weight / (BLEND_K + ranks[i])
        for i in range(len(scores))
    ]
    return sorted(range(len(scores)), key=lambda i: (-blended[i], i))
