"""The gate's ranking metrics on rankings small enough to compute by hand."""

from __future__ import annotations

import math

import pytest

from kioku.eval.metrics import (
    is_newer_first,
    mean_rows,
    ndcg_at_k,
    precision_at_k,
    ranking_scores,
)


def test_precision_counts_relevant_results_over_k() -> None:
    ranked = ["a", "x", "b", "y", "z"]
    assert precision_at_k(ranked, ["a", "b"], 1) == 1.0
    assert precision_at_k(ranked, ["a", "b"], 5) == pytest.approx(2 / 5)
    # A short list is not padded: 1 relevant in 2 results is still 1/5 at k=5.
    assert precision_at_k(["a", "x"], ["a"], 5) == pytest.approx(1 / 5)


def test_ndcg_of_a_perfect_ranking_is_one_and_of_a_miss_zero() -> None:
    assert ndcg_at_k(["a", "b", "x"], ["a", "b"], 10) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "y"], ["a"], 10) == 0.0
    assert ndcg_at_k(["a"], [], 10) == 0.0


def test_ndcg_by_hand() -> None:
    # Relevant at ranks 2 and 4 of two relevant: DCG = 1/log2(3) + 1/log2(5),
    # IDCG = 1/log2(2) + 1/log2(3).
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(["x", "a", "y", "b"], ["a", "b"], 10) == pytest.approx(expected)
    # Only the top k count: with k=2 the hit at rank 4 is gone.
    assert ndcg_at_k(["x", "a", "y", "b"], ["a", "b"], 2) == pytest.approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    )


def test_ranking_scores_of_one_query() -> None:
    scores = ranking_scores(["x", "a", "y", "z", "w", "b"], ["a", "b"])
    assert scores["p@1"] == 0.0
    assert scores["p@5"] == pytest.approx(1 / 5)
    assert scores["recall@5"] == pytest.approx(0.5)
    assert scores["recall@10"] == pytest.approx(1.0)
    assert scores["mrr@10"] == pytest.approx(0.5)


def test_newer_first_needs_the_newer_fact_above_every_outdated_one() -> None:
    assert is_newer_first(["new", "old"], ["new"], ["old"])
    assert not is_newer_first(["old", "new"], ["new"], ["old"])
    assert is_newer_first(["new", "x"], ["new"], ["old"])  # the old one is not even found
    assert not is_newer_first(["old", "x"], ["new"], ["old"])  # the new one is missing


def test_means_are_micro_averages_with_a_count() -> None:
    means = mean_rows([{"m": 1.0}, {"m": 0.0}, {"m": 0.5}])
    assert means == {"n": 3, "m": 0.5}
    assert mean_rows([]) == {"n": 0}
