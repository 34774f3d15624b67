"""``kioku eval retrieval``: every golden query through ``recall`` once per search arm, scored.

Each query is asked in the primary context with every golden context in
``filters.context_ids``, so the external decoys are always in reach; ``trusted-only`` queries
add ``trust_tier: trusted``. Per bucket, besides the ranking metrics:

- ``exact``: ``confident``, the share answered with confidence ``high`` or ``moderate`` (a
  quoted phrase must be recognised as a sure match: this is what notices a dead lexical leg,
  which the vector leg alone would otherwise hide on a corpus this small);
- ``negative``: ``abstain``, the share of queries answered with confidence ``low`` or ``none``
  (they have no relevant document, so they are left out of every ranking average);
- ``absent``: questions about what the corpus talks of whose answer it does not hold (issue
  32's abstention set): ``abstain`` as for ``negative``, and ``not_high``, the share not
  answered ``high`` (``high`` promises a relevant first result);
- ``trusted-only``: ``clean``, the share whose results hold no external memory at all;
- ``temporal``: ``newer_first``, the share where the newer fact ranks above every outdated one;
- ``mixed-language``: ``over_distractor``, the share where the answer (in the other language)
  ranks above the same-language distractor (the ``newer_first`` rule with the distractor as
  the one that must lose), and ``calibrated``, the share where confidence is not ``high``
  unless the top result is relevant;
- ``newer-first``: ``wanted_first``, the share where the version of a fact the query asks for
  (the newer one, or the older one when it asks about the past) ranks above the other version;
- ``pinned-vs-recall``: ``pinned_lane``, the share whose relevant ``always`` documents are all
  in ``load_pinned(trust_tier=trusted)`` and whose ``on_recall`` ones are not.

``overall`` averages the ranking metrics over every query that has a relevant document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kioku.eval.corpus import GoldenRuntime
from kioku.eval.golden import BUCKETS, UNANSWERABLE, GoldenQuery, GoldenSet
from kioku.eval.metrics import DEPTH, is_newer_first, mean_rows, ranking_scores
from kioku.models import RecallFilters, RecallRequest


@dataclass(frozen=True)
class Arm:
    """One way of running recall: which legs, and whether the bounded re-ranker applies."""

    legs: tuple[str, ...]
    rerank: bool
    ablate: frozenset[str] = frozenset()
    """Stages of recall's pipeline turned off (``scripts/ablation.py``)."""


ARMS: dict[str, Arm] = {
    # Single legs run without the re-ranker, so each measures its leg alone.
    "lexical": Arm(("lexical",), rerank=False),
    "vector": Arm(("vector",), rerank=False),
    "hybrid": Arm(("lexical", "vector"), rerank=False),
    "hybrid+rerank": Arm(("lexical", "vector"), rerank=True),  # what every surface runs
}
ABSTAINING = frozenset({"low", "none"})
CONFIDENT = frozenset({"high", "moderate"})
OVERALL = "overall"


@dataclass(frozen=True)
class Outcome:
    """What one arm returned for one query: document ids best first, confidence, trust tiers."""

    query_id: str
    ranked: tuple[str, ...]
    confidence: str
    trust_tiers: tuple[str, ...]


@dataclass
class RetrievalReport:
    """Mean metrics ``arm → bucket → metric`` (with ``n``) and every outcome behind them."""

    metrics: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the metrics, and per arm each query's ranking and confidence."""
        return {
            "metrics": self.metrics,
            "queries": {
                arm: [
                    {"id": o.query_id, "ranked": list(o.ranked), "confidence": o.confidence}
                    for o in outcomes
                ]
                for arm, outcomes in self.outcomes.items()
            },
        }


def ask(loaded: GoldenRuntime, golden: GoldenSet, query: GoldenQuery, arm: Arm) -> Outcome:
    """Run one query through the real ``recall`` service with one arm's settings."""
    filters = RecallFilters(
        context_ids=[context.name for context in golden.contexts],
        trust_tier="trusted" if query.bucket == "trusted-only" else None,
    )
    request = RecallRequest(query=query.query, k=DEPTH, filters=filters)
    result = loaded.runtime.recall.recall(
        loaded.principal, golden.primary, request, legs=arm.legs, rerank=arm.rerank,
        ablate=arm.ablate,
    )  # fmt: skip
    # A memory that is not a golden document would be a leak; it keeps its id, marked.
    ranked = tuple(loaded.doc_ids.get(hit.id, f"?{hit.id}") for hit in result.results)
    tiers = tuple(hit.trust_tier for hit in result.results)
    return Outcome(query.id, ranked, result.confidence, tiers)


def pinned_lane_holds(loaded: GoldenRuntime, golden: GoldenSet, query: GoldenQuery) -> bool:
    """The relevant ``always`` documents are delivered by ``load_pinned`` (trusted), the
    ``on_recall`` ones are not, and nothing external is."""
    trusted = RecallFilters(trust_tier="trusted")
    for doc_id in query.relevant:
        doc = golden.doc(doc_id)
        pinned = loaded.runtime.delivery.load_pinned(loaded.principal, doc.context, filters=trusted)
        delivered = {item.id for item in pinned.items}
        if (loaded.memory_ids[doc_id] in delivered) != (doc.delivery_mode == "always"):
            return False
        if any(item.trust_tier != "trusted" for item in pinned.items):
            return False
    return True


def score_query(query: GoldenQuery, outcome: Outcome, pinned_lane: bool | None) -> dict[str, float]:
    """The metrics of one query in its bucket (see the module docstring)."""
    if query.bucket == "negative":
        return {"abstain": float(outcome.confidence in ABSTAINING)}
    if query.bucket == "absent":
        return {
            "abstain": float(outcome.confidence in ABSTAINING),
            "not_high": float(outcome.confidence != "high"),
        }
    scores = ranking_scores(outcome.ranked, query.relevant)
    if query.bucket == "exact":
        scores["confident"] = float(outcome.confidence in CONFIDENT)
    elif query.bucket == "trusted-only":
        scores["clean"] = float(all(tier == "trusted" for tier in outcome.trust_tiers))
    elif query.bucket == "temporal":
        newer_first = is_newer_first(outcome.ranked, query.relevant, query.tempting)
        scores["newer_first"] = float(newer_first)
    elif query.bucket == "newer-first":
        wanted_first = is_newer_first(outcome.ranked, query.relevant, query.tempting)
        scores["wanted_first"] = float(wanted_first)
    elif query.bucket == "pinned-vs-recall":
        scores["pinned_lane"] = float(bool(pinned_lane))
    elif query.bucket == "mixed-language":
        scores["over_distractor"] = float(
            is_newer_first(outcome.ranked, query.relevant, query.tempting)
        )
        scores["calibrated"] = float(outcome.confidence != "high" or scores["p@1"] == 1.0)
    return scores


def run_retrieval(
    loaded: GoldenRuntime, golden: GoldenSet, arms: dict[str, Arm] | None = None
) -> RetrievalReport:
    """Every query through every arm; means per bucket and ``overall``, per arm."""
    arms = arms if arms is not None else ARMS
    pinned = {
        q.id: pinned_lane_holds(loaded, golden, q)
        for q in golden.queries
        if q.bucket == "pinned-vs-recall"
    }
    report = RetrievalReport()
    for name, arm in arms.items():
        outcomes = [ask(loaded, golden, query, arm) for query in golden.queries]
        by_bucket: dict[str, list[dict[str, float]]] = {}
        overall: list[dict[str, float]] = []
        for query, outcome in zip(golden.queries, outcomes, strict=True):
            scores = score_query(query, outcome, pinned.get(query.id))
            by_bucket.setdefault(query.bucket, []).append(scores)
            if query.bucket not in UNANSWERABLE:
                overall.append(ranking_scores(outcome.ranked, query.relevant))
        means = {bucket: mean_rows(by_bucket[bucket]) for bucket in BUCKETS if bucket in by_bucket}
        means[OVERALL] = mean_rows(overall)
        report.metrics[name] = means
        report.outcomes[name] = outcomes
    return report
