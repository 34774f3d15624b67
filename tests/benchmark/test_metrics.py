"""Metric functions on hand-made rankings."""

from __future__ import annotations

import pytest

from kioku.benchmark.data import Question
from kioku.benchmark.metrics import (
    evaluate,
    hit_at_k,
    latency_summary,
    mrr_at_k,
    question_scores,
    recall_at_k,
)

RANKED = ["a", "x", "b", "y", "z", "c"]


def test_recall_is_the_fraction_of_gold_in_the_top_k() -> None:
    assert recall_at_k(RANKED, ["a", "b", "c"], 1) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, ["a", "b", "c"], 5) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, ["a", "b", "c"], 20) == 1.0
    assert recall_at_k(RANKED, [], 5) == 0.0
    assert recall_at_k(RANKED, ["a", "a"], 1) == 1.0  # gold is a set


def test_hit_and_mrr_use_the_first_gold_item() -> None:
    assert hit_at_k(RANKED, ["b"], 2) == 0.0
    assert hit_at_k(RANKED, ["b"], 3) == 1.0
    assert mrr_at_k(RANKED, ["b", "c"]) == pytest.approx(1 / 3)
    assert mrr_at_k(RANKED, ["c"], k=5) == 0.0
    assert mrr_at_k([], ["c"]) == 0.0


def test_question_scores_names() -> None:
    scores = question_scores(RANKED, ["x"], (1, 5))
    assert scores == {"recall@1": 0.0, "hit@1": 0.0, "recall@5": 1.0, "hit@5": 1.0, "mrr@10": 0.5}


def test_evaluate_micro_averages_overall_and_per_category() -> None:
    questions = [
        Question("q1", "?", ("a",), 1),
        Question("q2", "?", ("b", "c"), 2),
        Question("q3", "?", ("zz",), 2),
    ]
    rankings = {"q1": RANKED, "q2": RANKED}  # q3 never answered: scores 0
    result = evaluate(questions, rankings, (5,))
    assert result["all"]["n"] == 3
    assert result["all"]["recall@5"] == pytest.approx((1 + 0.5 + 0) / 3, abs=1e-4)
    assert result["cat1"] == {"n": 1, "recall@5": 1.0, "hit@5": 1.0, "mrr@10": 1.0}
    assert result["cat2"]["mrr@10"] == pytest.approx(1 / 6, abs=1e-4)


def test_evaluate_without_categories_has_only_overall() -> None:
    result = evaluate([Question("q", "?", ("a",))], {"q": ["a"]}, (1,))
    assert list(result) == ["all"]


def test_latency_summary_percentiles() -> None:
    summary = latency_summary([float(i) for i in range(1, 101)])
    assert summary["n"] == 100
    assert summary["p50"] == pytest.approx(50.5)
    assert summary["p99"] == pytest.approx(99.01)
    assert latency_summary([]) == {"n": 0}
