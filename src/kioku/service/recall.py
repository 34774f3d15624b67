"""``recall``: hybrid search (BM25 + vectors), fusion, bounded re-rank, confidence (SPEC §5)."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

from kioku.embeddings.base import Embedder
from kioku.models import (
    RecallHit,
    RecallRequest,
    RecallResult,
    ScoreBreakdown,
    SearchConfig,
)
from kioku.search.confidence import judge_confidence
from kioku.search.fusion import fuse_rrf, fuse_weighted, leg_ranks
from kioku.search.rerank import rerank_factor
from kioku.search.tokenize import tokenize
from kioku.service.contexts import ContextService
from kioku.service.filters import memory_filter
from kioku.service.graph import Associations
from kioku.service.guard import operation
from kioku.service.principal import Principal
from kioku.service.views import memory_view
from kioku.storage.base import Store
from kioku.storage.records import ContextRow, MemoryFilter, ScoredId

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
    ) -> None:
        self.store = store
        self.contexts = contexts
        self.embedder = embedder
        self.fetch_factor = fetch_factor
        self.graph = graph or Associations(store, contexts)

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
        order, every factor 1.0) for the eval gate's plain-hybrid arm; surfaces always use the
        defaults.
        """
        scope = self._scope(principal, context_ref, request)
        flt = memory_filter(request.filters)
        ws = principal.workspace_id
        depth = max(request.k * self.fetch_factor, MIN_LEG_DEPTH)
        config = SearchConfig.model_validate(scope[0].search_config)

        ran = self._run_legs(scope, request, flt, depth, legs)
        weights = {"lexical": config.lexical_weight, "vector": config.vector_weight}
        if config.fusion == "weighted":
            fused = fuse_weighted(ran, weights)
        else:
            fused = fuse_rrf(ran, weights, config.rrf_k)
        if not fused:
            return RecallResult(results=[], confidence="none", legs=list(ran))

        signals = self.store.ranking_signals(ws, list(fused))
        if not signals:  # every candidate purged between the legs and now
            return RecallResult(results=[], confidence="none", legs=list(ran))
        newest = max(signal.created_at for signal in signals.values())
        factors = {
            memory_id: rerank_factor(signals[memory_id], newest) if rerank else 1.0
            for memory_id in fused
            if memory_id in signals
        }
        # A tie goes to the newer memory, then to the id: like ``leg_ranks``, so that the order
        # of equal scores does not depend on which uuid each memory happened to draw.
        ranked = sorted(
            ((fused[memory_id] * factor, memory_id) for memory_id, factor in factors.items()),
            key=lambda pair: (-pair[0], -signals[pair[1]].created_at.timestamp(), pair[1]),
        )
        graph_factors: dict[str, float] = {}
        if config.graph_boost > 0:
            ranked, graph_factors = self.graph.boost(
                ws, ranked, config.graph_boost, trusted_only=flt.trust_tier == "trusted"
            )
        ranked = ranked[: request.k]
        # Only the k winners are loaded in full (content can be up to 1 MiB each).
        rows = self.store.get_memories(ws, [memory_id for _, memory_id in ranked])
        ranks: dict[str, dict[str, tuple[int, float]]] = {}
        for leg, leg_hits in ran.items():
            leg_rank = leg_ranks(leg_hits)
            ranks[leg] = {hit.memory_id: (leg_rank[hit.memory_id], hit.score) for hit in leg_hits}
        hits: list[RecallHit] = []
        for score, memory_id in ranked:
            row = rows.get(memory_id)
            if row is None:
                continue
            lexical = ranks.get("lexical", {}).get(memory_id)
            vector = ranks.get("vector", {}).get(memory_id)
            breakdown = ScoreBreakdown(
                lexical=None if lexical is None else round(lexical[1], 6),
                lexical_rank=None if lexical is None else lexical[0],
                vector=None if vector is None else round(vector[1], 6),
                vector_rank=None if vector is None else vector[0],
                fused=round(fused[memory_id], 8),
                rerank=round(factors[memory_id], 6),
                graph=round(graph_factors[memory_id], 6) if graph_factors else None,
            )
            hits.append(
                RecallHit(
                    **memory_view(row).model_dump(),
                    score=round(score, 8),
                    score_breakdown=breakdown,
                )
            )
        top = hits[0].score_breakdown if hits else None
        confidence = judge_confidence(
            top.lexical_rank if top else None, top.vector_rank if top else None, len(ran)
        )
        related = []
        if request.include_related and hits:
            seeds = [hit.id for hit in hits]
            related = self.graph.neighbours(
                ws, seeds, flt, depth=1, min_weight=RELATED_MIN_WEIGHT, limit=request.k
            )
        self.graph.learn_from_recall(ws, [(hit.id, hit.context_id) for hit in hits])
        return RecallResult(results=hits, confidence=confidence, legs=list(ran), related=related)

    def _run_legs(
        self,
        scope: list[ContextRow],
        request: RecallRequest,
        flt: MemoryFilter,
        depth: int,
        legs: tuple[str, ...],
    ) -> dict[str, list[ScoredId]]:
        """Each requested leg's ranked candidates, lexical first."""
        ws = scope[0].workspace_id
        context_ids = [row.id for row in scope]
        ran: dict[str, list[ScoredId]] = {}
        vector_contexts = self._vector_contexts(scope)
        vector_leg: Future[list[ScoredId]] | None = None
        if "vector" in legs and self.embedder is not None and vector_contexts:
            # The vector leg (query embedding + search) runs beside the lexical leg: both
            # spend their time in native code that releases the GIL.
            embedder = self.embedder
            vector_leg = _LEG_POOL.submit(
                lambda: self.store.vector_search(
                    ws, vector_contexts, embedder.embed_query(request.query), flt, depth
                )
            )
        if "lexical" in legs:
            ran["lexical"] = self.store.lexical_search(
                ws, context_ids, tokenize(request.query), flt, depth
            )
        if vector_leg is not None:
            ran["vector"] = vector_leg.result()
        return ran

    def _vector_contexts(self, scope: list[ContextRow]) -> list[str]:
        """Contexts whose stored vectors come from the embedder we can embed the query with."""
        if self.embedder is None:
            return []
        return [row.id for row in scope if row.embedding_model == self.embedder.name]
