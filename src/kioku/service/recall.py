"""``recall``: hybrid search (BM25 + vectors), fusion, re-rank, confidence (docs/concepts.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from kioku.embeddings.base import Embedder
from kioku.models import (
    RecallHit,
    RecallRequest,
    RecallResult,
    ScoreBreakdown,
    SearchConfig,
)
from kioku.search.confidence import judge_confidence
from kioku.search.fusion import (
    add_rank_term,
    fuse_rrf,
    fuse_weighted,
    leg_ranks,
    query_rank_weights,
)
from kioku.search.leg_trust import trusted_weights
from kioku.search.past import query_tense
from kioku.search.rerank import rerank_factor, suspicion_factor
from kioku.search.thread_scores import thread_lift
from kioku.search.threads import thread_bonus, with_bonus
from kioku.search.tokenize import tokenize
from kioku.search.versions import order_versions, version_window
from kioku.service import telemetry
from kioku.service.contexts import ContextService
from kioku.service.filters import memory_filter
from kioku.service.graph import Associations, Recalled
from kioku.service.guard import operation
from kioku.service.model_rerank import ModelReranking
from kioku.service.principal import Principal
from kioku.service.recall_languages import language_view
from kioku.service.views import memory_view
from kioku.storage.base import Store
from kioku.storage.records import ContextRow, MemoryFilter, RankingSignals, ScoredId

MIN_LEG_DEPTH = 40
RELATED_MIN_WEIGHT = 0.05
_LEG_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kioku-recall")


class RecallService:
    """Finds the memories that answer a query."""

    def __init__(
        self,
        store: Store,
        contexts: ContextService,
        embedder: Embedder | None,
        *,
        fetch_factor: int = 4,
        graph: Associations | None = None,
        model_rerank: ModelReranking | None = None,
    ) -> None:
        self.store = store
        self.contexts = contexts
        self.embedder = embedder
        self.fetch_factor = fetch_factor
        self.graph = graph or Associations(store, contexts)
        self.model_rerank = model_rerank
        """The optional model reranker (docs/concepts.md): only full recalls with ``rerank``."""

    def _scope(
        self, principal: Principal, context_ref: str, request: RecallRequest
    ) -> list[ContextRow]:
        scope = [self.contexts.resolve(principal, context_ref)]
        for ref in request.filters.context_ids or []:
            row = self.contexts.resolve(principal, ref)
            if all(row.id != seen.id for seen in scope):
                scope.append(row)
        return scope

    @operation("read")
    def recall(
        self,
        principal: Principal,
        context_ref: str,
        request: RecallRequest,
        *,
        legs: tuple[str, ...] = ("lexical", "vector"),
        rerank: bool = True,
    ) -> RecallResult:
        """Search one context (plus ``filters.context_ids``); deterministic for the same data.

        ``legs`` exists for the benchmark's single-leg arms and ``rerank=False`` (the fused
        order, every factor 1.0, no thread neighbours) for the eval gate's plain-hybrid arm;
        surfaces always use the defaults.
        """
        with self.store.reads_together(principal.workspace_id):
            ranking = self._rank(principal, context_ref, request, legs, rerank)
        if not ranking.ranked:
            return RecallResult(results=[], confidence="none", legs=list(ranking.ran))
        ws = principal.workspace_id
        model = None
        if self.model_rerank is not None and rerank and set(legs) == {"lexical", "vector"}:
            # Outside any transaction: the reranker is a remote call.
            model = self.model_rerank.apply(self.store, ws, request.query, ranking.ranked)
            ranking.ranked = model.ranked
        with self.store.reads_together(ws):
            hits = ranking.hits(self.store, ranking.ranked[: request.k])
            if model is not None:
                model.annotate(hits)
            top = hits[0].score_breakdown if hits else None
            confidence = judge_confidence(
                top.lexical_rank if top else None,
                top.vector_rank if top else None,
                len(ranking.ran),
                crossed=ranking.crossed,
            )
            recalled = [recalled_as(hit) for hit in hits]
            related = []
            if request.include_related and hits:
                related = self.graph.related(
                    ws, recalled, ranking.flt, min_weight=RELATED_MIN_WEIGHT, limit=request.k
                )
        self.graph.learn_from_recall(ws, recalled, confidence)
        return RecallResult(
            results=hits,
            confidence=confidence,
            legs=list(ranking.ran),
            related=related,
            reranker=model.report if model is not None else None,
        )

    def ranking(self, principal: Principal, context_ref: str, request: RecallRequest) -> Ranking:
        """Recall's whole ranking for ``request`` (every candidate, not cut at ``k``), with no
        side effect: nothing is learnt from it. ``forget_by_query`` matches with it."""
        with self.store.reads_together(principal.workspace_id):
            return self._rank(principal, context_ref, request, ("lexical", "vector"), True)

    def _rank(
        self,
        principal: Principal,
        context_ref: str,
        request: RecallRequest,
        legs: tuple[str, ...],
        rerank: bool,
    ) -> Ranking:
        """The whole ranking. Its callers hold ``reads_together``: the reads on this thread
        (the context, the lexical leg, every stage's signals) share one transaction; the
        vector leg runs on its own thread and connection."""
        scope = self._scope(principal, context_ref, request)
        flt = memory_filter(request.filters)
        ws = principal.workspace_id
        depth = max(request.k * self.fetch_factor, MIN_LEG_DEPTH)
        config = SearchConfig.model_validate(scope[0].search_config)

        ran, query_vector = self._run_legs(scope, request, flt, depth, legs)
        view = language_view(
            self.store, self.embedder, ws, request.query, query_vector, ran,
            config.language_calibration,
        )  # fmt: skip
        ran = view.ran
        ranking = Ranking(ws=ws, flt=flt, depth=depth, ran=ran, crossed=view.crossed)
        weights = {
            "lexical": config.lexical_weight * view.scale.get("lexical", 1.0),
            "vector": config.vector_weight * view.scale.get("vector", 1.0),
        }
        if config.leg_trust == "sharpness":
            weights = trusted_weights(ran, weights)
        if config.fusion == "weighted":
            ranking.fused = fuse_weighted(ran, weights, view.blind)
            rank_weights = query_rank_weights(
                request.query, config.lexical_rank_weight, config.vector_rank_weight
            )
            ranking.fused = add_rank_term(ranking.fused, ran, weights, rank_weights, view.blind)
        else:
            ranking.fused = fuse_rrf(ran, weights, config.rrf_k)
        if not ranking.fused:
            return ranking
        fused = ranking.fused
        signals = self.store.ranking_signals(ws, list(fused))
        if not signals:  # every candidate purged between the legs and now
            return ranking
        newest = max(signal.created_at for signal in signals.values())
        ranking.factors = {
            memory_id: rerank_factor(signals[memory_id], newest) if rerank else 1.0
            for memory_id in fused
            if memory_id in signals
        }
        if rerank:  # external text that reads like orders counts half (``search/rerank.py``)
            ranking.suspicion_factors = {
                memory_id: factor
                for memory_id in ranking.factors
                if (factor := suspicion_factor(signals[memory_id])) != 1.0
            }
        demoted = ranking.suspicion_factors
        # A tie goes to the newer memory, then to the id: like ``leg_ranks``, so that the order
        # of equal scores does not depend on which uuid each memory happened to draw.
        ranked = sorted(
            (
                (fused[memory_id] * f * demoted.get(memory_id, 1.0), memory_id)
                for memory_id, f in ranking.factors.items()
            ),
            key=lambda pair: (-pair[0], -signals[pair[1]].created_at.timestamp(), pair[1]),
        )
        if rerank and config.thread_score_weight > 0:  # part of the re-ranking stage
            ranked = _thread_scores(ranking, ranked, signals, config.thread_score_weight)
        if rerank and config.thread_weight > 0:
            ranked = self._thread_neighbours(scope, ranking, ranked, config.thread_weight)
        if config.graph_boost > 0:
            ranked, ranking.graph_factors = self.graph.boost(
                ws, ranked, config.graph_boost, trusted_only=flt.trust_tier == "trusted"
            )
        tense = query_tense(request.query)
        if rerank and tense != "either":  # newer fact first (older, asked about the past)
            versions = self.store.version_signals(ws, version_window(ranked))
            past = tense == "past"
            ranked, ranking.version_factors = order_versions(ranked, versions, past=past)
        ranking.ranked = ranked
        return ranking

    def _thread_neighbours(
        self,
        scope: list[ContextRow],
        ranking: Ranking,
        ranked: list[tuple[float, str]],
        weight: float,
    ) -> list[tuple[float, str]]:
        """``ranked`` with each memory's share of its thread neighbours' scores added."""
        pairs = self.store.thread_neighbours(
            ranking.ws, [row.id for row in scope], [memory_id for _, memory_id in ranked],
            ranking.flt,
        )  # fmt: skip
        bonus = thread_bonus(ranked, pairs, weight)
        for memory_id, gain in bonus.items():
            ranking.thread_bonus[memory_id] = ranking.thread_bonus.get(memory_id, 0.0) + gain
        return with_bonus(ranked, bonus) if bonus else ranked

    def _run_legs(
        self,
        scope: list[ContextRow],
        request: RecallRequest,
        flt: MemoryFilter,
        depth: int,
        legs: tuple[str, ...],
    ) -> tuple[dict[str, list[ScoredId]], np.ndarray | None]:
        """Each requested leg's ranked candidates, lexical first, and the query's vector (when
        the vector leg ran)."""
        ws = scope[0].workspace_id
        context_ids = [row.id for row in scope]
        ran: dict[str, list[ScoredId]] = {}
        vector_contexts = self._vector_contexts(scope)
        vector_leg: Future[list[ScoredId]] | None = None
        query_vector: list[np.ndarray] = []
        if "vector" in legs and self.embedder is not None and vector_contexts:
            # The vector leg (query embedding + search) runs beside the lexical leg: both
            # spend their time in native code that releases the GIL.
            embedder = self.embedder

            def search_vectors() -> list[ScoredId]:
                query_vector.append(embedder.embed_query(request.query))
                return self.store.vector_search(ws, vector_contexts, query_vector[0], flt, depth)

            vector_leg = _LEG_POOL.submit(timed_leg, "vector", search_vectors)
        if "lexical" in legs:
            ran["lexical"] = timed_leg(
                "lexical",
                lambda: self.store.lexical_search(
                    ws, context_ids, tokenize(request.query), flt, depth
                ),
            )
        if vector_leg is not None:
            ran["vector"] = vector_leg.result()
        return ran, query_vector[0] if query_vector else None

    def _vector_contexts(self, scope: list[ContextRow]) -> list[str]:
        """Contexts whose stored vectors come from the embedder we can embed the query with."""
        if self.embedder is None:
            return []
        return [row.id for row in scope if row.embedding_model == self.embedder.name]


def _thread_scores(
    ranking: Ranking,
    ranked: list[tuple[float, str]],
    signals: dict[str, RankingSignals],
    weight: float,
) -> list[tuple[float, str]]:
    """``ranked`` with each memory moved ``weight`` of the way up to its thread's best score
    (``search/thread_scores.py``); what it gained is counted in ``thread_bonus``."""
    threads = {memory_id: signal.thread for memory_id, signal in signals.items() if signal.thread}
    lift = thread_lift(ranked, threads, weight)
    ranking.thread_bonus.update(lift)
    return with_bonus(ranked, lift) if lift else ranked


def _rounded(value: float | None, places: int) -> float | None:
    return None if value is None else round(value, places)


def timed_leg(leg: str, search: Callable[[], list[ScoredId]]) -> list[ScoredId]:
    """Run one leg's search and tell ``telemetry`` how long it took."""
    began = time.perf_counter()
    try:
        return search()
    finally:
        telemetry.recall_leg(leg, time.perf_counter() - began)


@dataclass
class Ranking:
    """Every candidate of one search, best first, and how each score was made."""

    ws: str
    flt: MemoryFilter
    depth: int
    """How deep each leg looked: a leg that returned this many may have had more."""
    ran: dict[str, list[ScoredId]]
    crossed: bool = False
    """The legs disagree across languages (``recall_languages``): no ``high`` confidence."""
    fused: dict[str, float] = field(default_factory=dict)
    factors: dict[str, float] = field(default_factory=dict)
    suspicion_factors: dict[str, float] = field(default_factory=dict)
    """Only the ``suspicious`` results, demoted (``search/rerank.py``)."""
    graph_factors: dict[str, float] = field(default_factory=dict)
    thread_bonus: dict[str, float] = field(default_factory=dict)
    """What its thread added to each score: the share of the thread's best score and of the
    thread neighbours' (a memory no leg found has only the latter)."""
    version_factors: dict[str, float] = field(default_factory=dict)
    """Only the results the newer-fact-first stage moved (``search/versions.py``)."""
    ranked: list[tuple[float, str]] = field(default_factory=list)

    def leg_rank(self, leg: str) -> dict[str, tuple[int, float]]:
        """A leg's (rank, raw score) of each memory it found."""
        leg_hits = self.ran.get(leg, [])
        rank = leg_ranks(leg_hits)
        return {hit.memory_id: (rank[hit.memory_id], hit.score) for hit in leg_hits}

    def hits(self, store: Store, ranked: list[tuple[float, str]]) -> list[RecallHit]:
        """``ranked`` as results; only these rows are loaded in full (content can be up to
        1 MiB each). A memory purged since the legs ran is skipped."""
        rows = store.get_memories(self.ws, [memory_id for _, memory_id in ranked])
        lexical_ranks, vector_ranks = self.leg_rank("lexical"), self.leg_rank("vector")
        hits: list[RecallHit] = []
        for score, memory_id in ranked:
            row = rows.get(memory_id)
            if row is None:
                continue
            lexical = lexical_ranks.get(memory_id)
            vector = vector_ranks.get(memory_id)
            breakdown = ScoreBreakdown(
                lexical=None if lexical is None else round(lexical[1], 6),
                lexical_rank=None if lexical is None else lexical[0],
                vector=None if vector is None else round(vector[1], 6),
                vector_rank=None if vector is None else vector[0],
                fused=round(self.fused.get(memory_id, 0.0), 8),
                rerank=round(self.factors.get(memory_id, 1.0), 6),
                suspicious=self.suspicion_factors.get(memory_id),
                graph=round(self.graph_factors[memory_id], 6) if self.graph_factors else None,
                thread=_rounded(self.thread_bonus.get(memory_id), 8),
                newer_first=_rounded(self.version_factors.get(memory_id), 6),
            )
            hits.append(
                RecallHit(
                    **memory_view(row).model_dump(),
                    score=round(score, 8),
                    score_breakdown=breakdown,
                )
            )
        return hits


def recalled_as(hit: RecallHit) -> Recalled:
    """A result as the graph reads it: where it lives and its score."""
    return Recalled(hit.id, hit.context_id, hit.score)
