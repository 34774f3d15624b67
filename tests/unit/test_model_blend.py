"""The rank blend between the fused order and a model reranker's order (pure functions)."""

from __future__ import annotations

from kioku.rerankers.blend import blend_head, model_ranks


def test_model_ranks_put_unscored_candidates_last_and_keep_the_fused_order_on_ties() -> None:
    assert model_ranks([0.1, None, 0.9, 0.1, None]) == [2, 4, 1, 3, 5]


def test_weight_zero_keeps_the_fused_order_and_one_takes_the_model_order() -> None:
    scores = [0.2, 0.9, None, 0.5]
    assert blend_head(scores, 0.0) == [0, 1, 2, 3]
    assert blend_head(scores, 1.0) == [1, 3, 0, 2]


def test_a_candidate_both_orders_place_first_stays_first() -> None:
    scores = [0.99] + [0.5 - i / 100 for i in range(29)]
    for weight in (0.25, 0.5, 0.75):
        assert blend_head(scores, weight)[0] == 0


def test_a_reranker_that_reverses_the_fused_order_cannot_bury_the_fused_top() -> None:
    """At the default weight a hostile reranker (every fused rank reversed) moves the fused
    first candidate out of the first few places only; without the blend it would be last."""
    n = 30
    reversed_scores = [float(i) for i in range(n)]  # the fused last scores highest
    order = blend_head(reversed_scores, 0.5)
    assert order.index(0) <= 2
    assert blend_head(reversed_scores, 1.0).index(0) == n - 1
