from datetime import UTC, datetime, timedelta

import pytest

from kioku.search.fusion import fuse_rrf, fuse_weighted, leg_ranks
from kioku.search.rerank import MAX_SHIFT, net_helpfulness, rerank_factor
from kioku.storage.records import RankingSignals, ScoredId


def ids(*names: str) -> list[ScoredId]:
    return [ScoredId(name, 1.0 / (i + 1)) for i, name in enumerate(names)]


def test_rrf_rewards_agreement_between_legs() -> None:
    fused = fuse_rrf({"lexical": ids("a", "b", "c"), "vector": ids("b", "d")}, {}, k=60)
    assert max(fused, key=fused.__getitem__) == "b"
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)


def test_rrf_gives_equal_scores_equal_ranks() -> None:
    tied = [ScoredId("z", 5.0), ScoredId("a", 5.0), ScoredId("m", 4.0)]
    assert leg_ranks(tied) == {"z": 1, "a": 1, "m": 3}
    fused = fuse_rrf({"lexical": tied}, {}, k=60)
    assert fused["z"] == fused["a"] > fused["m"]


def test_rrf_weights_scale_a_leg() -> None:
    fused = fuse_rrf({"lexical": ids("a"), "vector": ids("b")}, {"lexical": 2.0}, k=60)
    assert fused["a"] == pytest.approx(2 * fused["b"])


def test_weighted_fusion_normalises_each_leg() -> None:
    legs = {
        "lexical": [ScoredId("a", 30.0), ScoredId("b", 10.0)],
        "vector": [ScoredId("b", 0.9), ScoredId("a", 0.1)],
    }
    fused = fuse_weighted(legs, {"lexical": 1.0, "vector": 1.0})
    assert fused == {"a": 1.0, "b": 1.0}


def test_rerank_factor_is_bounded_whatever_the_features() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    extremes = [
        RankingSignals(1.0, now, 10**9),
        RankingSignals(0.0, now - timedelta(days=10_000), 0),
        RankingSignals(1.0, now, 10**9, helpful=10**9, unhelpful=0),
        RankingSignals(0.0, now - timedelta(days=10_000), 0, helpful=0, unhelpful=10**9),
    ]
    for features in extremes:
        assert 1 - MAX_SHIFT <= rerank_factor(features, now) <= 1 + MAX_SHIFT


def test_net_helpfulness_is_a_damped_vote_count() -> None:
    assert net_helpfulness(0, 0) == 0.0
    assert net_helpfulness(1, 0) == 0.5 and net_helpfulness(0, 1) == -0.5
    assert net_helpfulness(3, 3) == 0.0  # contradictory events cancel
    assert net_helpfulness(10, 0) == pytest.approx(10 / 11)


def test_feedback_moves_the_factor_both_ways_and_nothing_without_it() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    plain = rerank_factor(RankingSignals(0.5, now, 0), now)
    liked = rerank_factor(RankingSignals(0.5, now, 0, helpful=4), now)
    disliked = rerank_factor(RankingSignals(0.5, now, 0, unhelpful=4), now)
    assert disliked < plain < liked
    assert rerank_factor(RankingSignals(0.5, now, 0, helpful=2, unhelpful=2), now) == plain


def test_rerank_prefers_important_recent_memories_between_equals() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    important = rerank_factor(RankingSignals(0.9, now, 0), now)
    minor = rerank_factor(RankingSignals(0.1, now, 0), now)
    old = rerank_factor(RankingSignals(0.9, now - timedelta(days=365), 0), now)
    assert important > minor and important > old
