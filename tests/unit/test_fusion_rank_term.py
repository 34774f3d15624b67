"""The rank term of weighted fusion (``kioku.search.fusion.add_rank_term``): pure functions."""

from __future__ import annotations

import pytest

from kioku.models import SearchConfig
from kioku.search.fusion import add_rank_term, fuse_weighted, rank_weights_for
from kioku.search.language import language_of
from kioku.storage.records import ScoredId


def leg(*pairs: tuple[str, float]) -> list[ScoredId]:
    return [ScoredId(memory_id, score) for memory_id, score in pairs]


LEGS = {
    "lexical": leg(("a", 10.0), ("b", 9.9), ("c", 2.0)),
    "vector": leg(("c", 0.90), ("b", 0.89), ("a", 0.80)),
}
WEIGHTS = {"lexical": 1.0, "vector": 1.0}


def test_rank_weights_zero_are_the_fusion_as_it_was() -> None:
    fused = fuse_weighted(LEGS, WEIGHTS)
    assert add_rank_term(fused, LEGS, WEIGHTS, {"lexical": 0.0, "vector": 0.0}) == fused
    assert add_rank_term(fused, LEGS, WEIGHTS, {}) == fused


def test_the_defaults_chosen_for_issue_17() -> None:
    config = SearchConfig()
    assert (config.lexical_rank_weight, config.vector_rank_weight) == (1.0, 0.5)


def test_each_leg_adds_its_rank_weight_times_its_weight_over_the_rank() -> None:
    fused = fuse_weighted(LEGS, WEIGHTS)
    weights = {"lexical": 1.5, "vector": 1.0}  # e.g. leg trust raised the lexical leg's
    ranked = add_rank_term(fused, LEGS, weights, {"lexical": 1.0, "vector": 0.5})
    assert ranked["a"] == pytest.approx(fused["a"] + 1.5 / 1 + 0.5 / 3)
    assert ranked["b"] == pytest.approx(fused["b"] + 1.5 / 2 + 0.5 / 2)
    assert ranked["c"] == pytest.approx(fused["c"] + 1.5 / 3 + 0.5 / 1)


def test_a_narrow_score_lead_does_not_outvote_both_legs_order() -> None:
    # Both legs rank "a" above "b", yet how their scores are spread gives "b" a narrow lead.
    legs = {
        "lexical": leg(("a", 9.0), ("b", 8.0)),
        "vector": leg(("c", 0.9), ("a", 0.8), ("b", 0.7)),
    }
    fused = {"a": 1.50, "b": 1.55, "c": 1.0}
    ranked = add_rank_term(fused, legs, WEIGHTS, {"lexical": 0.25, "vector": 0.25})
    assert ranked["a"] == pytest.approx(1.50 + 0.25 * (1 + 1 / 2))
    assert ranked["b"] == pytest.approx(1.55 + 0.25 * (1 / 2 + 1 / 3))
    assert max(ranked, key=ranked.__getitem__) == "a"


def test_equal_scores_share_a_rank() -> None:
    legs = {"lexical": leg(("x", 3.0), ("y", 3.0), ("z", 1.0)), "vector": leg(("w", 0.5))}
    ranked = add_rank_term({"x": 0.0, "y": 0.0, "z": 0.0}, legs, WEIGHTS, {"lexical": 1.0})
    assert ranked == {"x": 1.0, "y": 1.0, "z": pytest.approx(1 / 3)}


def test_one_leg_alone_is_left_as_it_was() -> None:
    weights = {"lexical": 1.0, "vector": 0.5}
    lexical = {"lexical": leg(("x", 3.0), ("y", 1.0))}
    fused = fuse_weighted(lexical, weights)
    assert add_rank_term(fused, lexical, weights, {"lexical": 1.0, "vector": 0.5}) == fused
    empty = {**lexical, "vector": []}  # the vector leg ran and found nothing
    assert add_rank_term(fused, empty, weights, {"lexical": 1.0, "vector": 0.5}) == fused


def test_a_blind_leg_abstains_on_the_term_too() -> None:
    legs = {
        "lexical": leg(("en", 5.0), ("ja", 1.0)),
        "vector": leg(("ja", 0.9), ("en", 0.8), ("ja2", 0.7)),
    }
    blind = {"lexical": {"ja2"}}
    fused = fuse_weighted(legs, WEIGHTS, blind)
    ranked = add_rank_term(fused, legs, WEIGHTS, {"lexical": 0.3, "vector": 0.3}, blind)
    # Only the vector leg could see "ja2": its term is scaled up to both legs' weight, as
    # fuse_weighted scales the score.
    assert ranked["ja2"] - fused["ja2"] == pytest.approx(0.3 * (1.0 / 3) * 2)
    assert ranked["en"] - fused["en"] == pytest.approx(0.3 * (1.0 + 1.0 / 2))


def test_a_query_in_japanese_is_fused_by_scores_alone() -> None:
    # The lexical leg reads Japanese as Sudachi short units: its order there is not what the
    # term should push (measured: docs/benchmarks.md, the rank term, 2026-12-04).
    for query in ("会社の所在地を教えて", "東京本社", "Storybookのバージョンは？"):
        assert rank_weights_for(language_of(query), 1.0, 0.5) == {}, query
    fused = fuse_weighted(LEGS, WEIGHTS)
    none = rank_weights_for(language_of("会社の所在地"), 1.0, 0.5)
    assert add_rank_term(fused, LEGS, WEIGHTS, none) == fused


def test_any_other_query_gets_the_contexts_rank_weights() -> None:
    for query in ("When is the year-end party?", "Oncorhynchus ketaを日本語で", "회의는 언제?"):
        assert rank_weights_for(language_of(query), 1.0, 0.5) == {"lexical": 1.0, "vector": 0.5}, (
            query
        )
    assert rank_weights_for(language_of("Where is HQ?"), 0.0, 0.0) == {
        "lexical": 0.0,
        "vector": 0.0,
    }
