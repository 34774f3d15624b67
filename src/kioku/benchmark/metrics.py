"""Retrieval metrics and latency percentiles: pure functions over rankings of document keys."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from kioku.benchmark.data import Question

LOCOMO_KS = (5, 10, 20)
JSQUAD_KS = (1, 5, 10)
MRR_K = 10


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """Fraction of the gold keys found in the top ``k`` (0 when there is no gold)."""
    wanted = set(gold)
    if not wanted:
        return 0.0
    return len(wanted.intersection(ranked[:k])) / len(wanted)


def hit_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    """1.0 if any gold key is in the top ``k``, else 0.0."""
    wanted = set(gold)
    return 1.0 if any(key in wanted for key in ranked[:k]) else 0.0


def mrr_at_k(ranked: Sequence[str], gold: Iterable[str], k: int = MRR_K) -> float:
    """Reciprocal rank of the first gold key within the top ``k`` (0 if none)."""
    wanted = set(gold)
    for rank, key in enumerate(ranked[:k], start=1):
        if key in wanted:
            return 1.0 / rank
    return 0.0


def question_scores(
    ranked: Sequence[str], gold: Sequence[str], ks: Sequence[int]
) -> dict[str, float]:
    """recall@k and hit@k for each k, plus mrr@10, for one question."""
    scores: dict[str, float] = {}
    for k in ks:
        scores[f"recall@{k}"] = recall_at_k(ranked, gold, k)
        scores[f"hit@{k}"] = hit_at_k(ranked, gold, k)
    scores[f"mrr@{MRR_K}"] = mrr_at_k(ranked, gold, MRR_K)
    return scores


def mean_scores(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Average each metric over questions (micro), with ``n`` the number of questions."""
    if not rows:
        return {"n": 0}
    means: dict[str, float] = {"n": len(rows)}
    for name in rows[0]:
        means[name] = round(float(np.mean([row[name] for row in rows])), 4)
    return means


def evaluate(
    questions: Sequence[Question], rankings: Mapping[str, Sequence[str]], ks: Sequence[int]
) -> dict[str, dict[str, float]]:
    """Mean scores ``{"all": ..., "cat1": ...}``; per-category rows only if categories are set."""
    overall: list[dict[str, float]] = []
    by_category: dict[int, list[dict[str, float]]] = defaultdict(list)
    for question in questions:
        scores = question_scores(rankings.get(question.qid, []), question.gold, ks)
        overall.append(scores)
        if question.category:
            by_category[question.category].append(scores)
    result = {"all": mean_scores(overall)}
    for category in sorted(by_category):
        result[f"cat{category}"] = mean_scores(by_category[category])
    return result


def latency_summary(samples_ms: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99/mean/max of per-query wall times in milliseconds, with ``n``."""
    if not samples_ms:
        return {"n": 0}
    values = np.asarray(samples_ms, dtype=np.float64)
    summary = {f"p{q}": round(float(np.percentile(values, q)), 2) for q in (50, 95, 99)}
    summary.update(
        mean=round(float(values.mean()), 2), max=round(float(values.max()), 2), n=len(values)
    )
    return summary
