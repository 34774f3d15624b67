"""``recall``: hybrid search (BM25 + vectors), fusion, re-rank, confidence (docs/concepts.md).

The ranking itself is a pipeline of named stages (``service/ranking/pipeline.py``); this
service scopes a request, runs the pipeline, optionally hands the head to the model
reranker, loads the results, judges the set's confidence and lets the graph learn from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kioku.embeddings.base import Embedder
from kioku.models import (
    PendingVectorsReport,
    RecallHit,
    RecallRequest,
    RecallResult,
    SearchConfig,
)
from kioku.search.confidence import gather_evidence, is_calibrated, judge_confidence, meets
from kioku.service import telemetry
from kioku.service.contexts import ContextService
from kioku.service.filters import memory_filter
from kioku.service.graph import Associations, Recalled
from kioku.service.guard import operation
from kioku.service.model_rerank import ModelReranking
from kioku.service.principal import Principal
from kioku.service.ranking import pipeline, results
from kioku.service.ranking.state import Query, Ranking, Tools
from kioku.service.ranking.vector_leg import VectorLeg
from kioku.storage.ports import RecallPort
from kioku.storage.records import ContextRow

MIN_LEG_DEPTH = 40
RELATED_MIN_WEIGHT = 0.05


class RecallService:
    """Finds the memories that answer a query."""

    def __init__(
        self,
        store: RecallPort,
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
        self.tools = Tools(store, embedder, self.graph)

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
        ablate: frozenset[str] = frozenset(),
    ) -> RecallResult:
        """Search one context (plus ``filters.context_ids``); deterministic for the same data.

        ``legs`` exists for the benchmark's single-leg arms, ``rerank=False`` (the fused
        order, every factor 1.0, no thread neighbours) for the eval gate's plain-hybrid arm
        and ``ablate`` (stage names, ``pipeline.ABLATABLE``) for the benchmark's ablation;
        surfaces always use the defaults.
        """
        disabled = ablate | (frozenset() if rerank else pipeline.RERANKING)
        ws = principal.workspace_id
        with self.store.reads_together(ws):
            ranking = self._rank(principal, context_ref, request, legs, disabled)
        if not ranking.ranked:
            return _answer(ranking, RecallResult(results=[], confidence="none",
                                                 legs=list(ranking.ran)))  # fmt: skip
        model = None
        if self.model_rerank is not None and rerank and set(legs) == {"lexical", "vector"}:
            # Outside any transaction: the reranker is a remote call.
            with _timed(ranking, "model_rerank"):
                model = self.model_rerank.apply(self.store, ws, request.query, ranking.ranked)
            ranking.ranked = model.ranked
        with self.store.reads_together(ws):
            with _timed(ranking, "hits"):
                hits = results.hits(ranking, self.store, ranking.ranked[: request.k])
            if model is not None:
                model.annotate(hits)
            evidence = gather_evidence(
                ranking.query.terms,
                (hits[0].id, f"{hits[0].summary}\n{hits[0].content}") if hits else None,
                [score for score, _ in ranking.ranked[:2]],
                ranking.ran.get("lexical"),
                ranking.closest() if is_calibrated(self.embedder) else None,
                crossed=ranking.crossed,
            )
            confidence = judge_confidence(evidence)
            withheld = 0 if meets(confidence, request.min_confidence) else len(hits)
            if withheld:  # nothing rather than noise: no results, no related, nothing learnt
                hits = []
            recalled = [recalled_as(hit) for hit in hits]
            related = []
            if request.include_related and hits:
                with _timed(ranking, "related"):
                    related = self.graph.related(
                        ws, recalled, ranking.flt, min_weight=RELATED_MIN_WEIGHT, limit=request.k
                    )
        with _timed(ranking, "learn"):
            self.graph.learn_from_recall(ws, recalled, confidence)
        return _answer(
            ranking,
            RecallResult(
                results=hits,
                confidence=confidence,
                legs=list(ranking.ran),
                related=related,
                reranker=model.report if model is not None else None,
                withheld=withheld,
            ),
        )

    def ranking(
        self,
        principal: Principal,
        context_ref: str,
        request: RecallRequest,
        *,
        ablate: frozenset[str] = frozenset(),
    ) -> Ranking:
        """Recall's whole ranking for ``request`` (every candidate, not cut at ``k``), with no
        side effect: nothing is learnt from it. ``forget_by_query`` matches with it; the
        ablation (``scripts/ablation.py``) turns stages off with ``ablate``."""
        with self.store.reads_together(principal.workspace_id):
            return self._rank(principal, context_ref, request, ("lexical", "vector"), ablate)

    def _rank(
        self,
        principal: Principal,
        context_ref: str,
        request: RecallRequest,
        legs: tuple[str, ...],
        disabled: frozenset[str],
    ) -> Ranking:
        """The whole ranking. Its callers hold ``reads_together``: the reads on this thread
        (the context, the lexical leg, every stage's reads) share one transaction; the vector
        leg runs on its own thread and connection (``legs.VectorLeg``), started here before the
        scope is read."""
        vector_leg = None
        if "vector" in legs and self.embedder is not None:  # the query embedding starts now
            vector_leg = VectorLeg(self.embedder, request.query)
        try:
            with _timed_alone("scope") as took:
                scope = self._scope(principal, context_ref, request)
            ranking = Ranking(
                ws=principal.workspace_id,
                scope=scope,
                flt=memory_filter(request.filters),
                depth=max(request.k * self.fetch_factor, MIN_LEG_DEPTH),
                config=SearchConfig.model_validate(scope[0].search_config),
                query=Query(request.query),
                legs=legs,
                disabled=disabled,
                vector_leg=vector_leg,
            )
            ranking.timings["scope"] = took()
        except BaseException:
            if vector_leg is not None:
                vector_leg.skip()
            raise
        return pipeline.rank(ranking, self.tools)


@contextmanager
def _timed_alone(step: str) -> Iterator[Callable[[], float]]:
    """Time a step of recall outside the pipeline like a stage (metrics); the block is
    handed a function that says how long it took, once it is over."""
    took = 0.0
    began = time.perf_counter()
    try:
        yield lambda: took
    finally:
        took = time.perf_counter() - began
        telemetry.recall_stage(step, took)


@contextmanager
def _timed(ranking: Ranking, step: str) -> Iterator[None]:
    """``_timed_alone``, noted in the ranking's timings too (``Server-Timing``)."""
    with _timed_alone(step) as took:
        yield
    ranking.timings[step] = took()


def _answer(ranking: Ranking, result: RecallResult) -> RecallResult:
    """``result`` with what only this recall knows: the candidates still waiting for their
    vector, and where the time went (``RecallResult.timings``, not serialised)."""
    if ranking.pending is not None:
        result.pending_vectors = PendingVectorsReport(
            embedded=ranking.pending.embedded, lexical_only=ranking.pending.lexical_only
        )
    result.set_timings(ranking.timings)
    return result


def recalled_as(hit: RecallHit) -> Recalled:
    """A result as the graph reads it: where it lives, its score and each leg's rank of it."""
    ranks = hit.score_breakdown
    return Recalled(hit.id, hit.context_id, hit.score, ranks.lexical_rank, ranks.vector_rank)
