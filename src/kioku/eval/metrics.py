"""Ranking metrics with binary relevance: pure functions over a ranked list of document ids.

recall@k and MRR are the benchmark's own (``kioku.benchmark.metrics``), so a figure means the
same thing in ``kioku bench`` and in the gate; precision and nDCG are added here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from kioku.benchmark.metrics import mrr_at_k, recall_at_k

RANKING_METRICS = ("p@1", "p@5", "recall@5", "recall@10", "mrr@10", "ndcg@10")
DEPTH = 10
"""How many results each query asks for: the deepest cut-off of any metric."""


def precision_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Relevant results among the top ``k``, divided by ``k`` (a short list is not padded up)."""
    wanted = set(relevant)
    return sum(1 for doc in ranked[:k] if doc in wanted) / k


def ndcg_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    """Binary nDCG: DCG of the top ``k`` over the DCG of a perfect ranking (0 with no gold)."""
    wanted = set(relevant)
    if not wanted:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank, doc in enumerate(ranked[:k], 1) if doc in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


def ranking_scores(ranked: Sequence[str], relevant: Sequence[str]) -> dict[str, float]:
    """Every metric of ``RANKING_METRICS`` for one query."""
    return {
        "p@1": precision_at_k(ranked, relevant, 1),
        "p@5": precision_at_k(ranked, relevant, 5),
        "recall@5": recall_at_k(ranked, relevant, 5),
        "recall@10": recall_at_k(ranked, relevant, 10),
        "mrr@10": mrr_at_k(ranked, relevant, 10),
        "ndcg@10": ndcg_at_k(ranked, relevant, 10),
    }


def is_newer_first(ranked: Sequence[str], newer: Sequence[str], older: Sequence[str]) -> bool:
    """A newer fact is found and ranks above every outdated one (absent counts as below)."""
    positions = {doc: rank for rank, doc in enumerate(ranked)}
    best_new = min((positions[d] for d in newer if d in positions), default=None)
    if best_new is None:
        return False
    return all(positions.get(d, len(ranked)) > best_new for d in older)


def mean_rows(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Average each metric over the rows (micro), rounded to 4 places; ``n`` is the row count."""
    if not rows:
        return {"n": 0}
    means: dict[str, float] = {"n": len(rows)}
    for name in rows[0]:
        means[name] = round(sum(row[name] for row in rows) / len(rows), 4)
    return means
