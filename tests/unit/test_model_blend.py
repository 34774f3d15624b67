"""The rank blend between the fused order and a model reranker's order (pure functions)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kioku.rerankers.blend import blend_head, model_ranks
from kioku.settings.sections import RerankerSettings


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


DEFAULT = RerankerSettings.model_fields["weight"].default


def test_a_reranker_that_reverses_the_fused_order_cannot_bury_the_fused_top() -> None:
    """Without the blend, a hostile reranker (every fused rank reversed) would put the fused
    first candidate last; at the default weight it stays first."""
    reversed_scores = [float(i) for i in range(30)]  # the fused last scores highest
    assert blend_head(reversed_scores, DEFAULT).index(0) == 0
    assert blend_head(reversed_scores, 1.0).index(0) == 29


@given(st.permutations(list(range(30))))
def test_no_reranker_can_push_the_fused_first_below_third_place(scores: list[int]) -> None:
    """The worst case at the default weight, whatever order the reranker gives (the bound
    docs/concepts.md states)."""
    assert blend_head([float(s) for s in scores], DEFAULT).index(0) <= 2


def test_the_third_place_bound_is_reached() -> None:
    # the fused first ranked last, the fused third ranked first and the second second
    ranks = [30, 2, 1, *range(3, 30)]
    assert blend_head([-float(rank) for rank in ranks], DEFAULT).index(0) == 2
