"""The association graph (docs/graph.md): Hebbian learning from use, declared links, ``explore``.

Learning rules (all bounded, weights stay in (0, 1]):

- **co-recall**: after each ``recall`` the top ``co_recall_top`` results (default 3) of each
  context strengthen their pairwise edges, ``w ← w + η·(1 − w)`` with ``η = recall_rate``
  (0.1): a new edge starts at 0.1, ten co-recalls take it to 0.65. Only results the ranking
  stood behind take part (``stood_behind``): none when the recall's confidence is ``low`` or
  ``none``, and otherwise the top result, those scoring at least ``co_recall_floor`` (0.5) of
  its score (``search/standing.py``) and those both legs rank in their top
  ``co_recall_legs_top`` (3), so a filler result that merely completes the top 3 (one leg
  found it, far below the top) is never linked. The rule was chosen by measurement
  (docs/graph.md, ``lab/hebbian_study.py``).
- **feedback**: helpful feedback on memory *m* for query *q* strengthens *m*'s edges to the
  other memories found helpful for exactly *q* in that context (``η = feedback_rate``, 0.2);
  unhelpful feedback on *m* for *q* weakens those same edges, ``w ← w·(1 − η)``
  (``η = weaken_rate``, 0.2) and deletes an edge that falls below ``floor`` (0.05, Sleep's).
  Feedback without a query changes no edge (there is nothing to be co-helpful with).
- **declared**: ``remember(linked_memory_ids=...)`` writes ``declared`` edges of weight
  ``declared_weight`` (0.5) to live memories of the same context.

Spreading activation (``explore``, ``recall(include_related=true)``): the start has activation
1; a memory reached over a path of edges has activation ``∏ w`` over the path, and keeps the
best path of at most ``depth`` hops (ties: the lexicographically smaller path). Edges below
``min_weight`` are not followed. With ``filters={"trust_tier": "trusted"}`` no edge with an
external end is followed at all, so an external memory is neither returned nor passed through.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

from kioku.clock import Clock, system_clock
from kioku.errors import InvalidInputError, NotFoundError
from kioku.models import ExploreResult, MemoryEdge, Neighbour, RecallFilters
from kioku.search.standing import FLOOR as STANDING_FLOOR
from kioku.search.standing import stands
from kioku.service.contexts import ContextService
from kioku.service.filters import memory_filter
from kioku.service.guard import operation
from kioku.service.hebbian import declare_edges, strengthen_edges, weaken_edges
from kioku.service.principal import Principal
from kioku.service.views import memory_view
from kioku.storage.ports import AssociationPort, GraphPort
from kioku.storage.records import ContextRow, MemoryFilter, MemoryRow
from kioku.storage.shared.graph import GraphStore

log = logging.getLogger(__name__)

MAX_DEPTH = 3
MAX_LIMIT = 100
MAX_EDGES_SHOWN = 100
FRONTIER_CAP = 200
BOOST_SEEDS = 3
"""Per hop, only the strongest this many memories spread further (bounds the work)."""


@dataclass(frozen=True)
class GraphSettings:
    """The learning rates; see the module docstring."""

    learn: bool = True
    co_recall_top: int = 3
    co_recall_floor: float | None = STANDING_FLOOR
    """A result stands at this share of the top result's score or more (None: never by score)."""
    co_recall_legs_top: int | None = 3
    """A result stands when both legs rank it within this many (None: never by rank); the
    ranks come from ``Recalled``, which the recall fills from ``score_breakdown``."""
    co_recall_every: bool = False
    """Stand only by every criterion set above, not by any one of them."""
    co_recall_confident: bool = True
    """Co-recall learns nothing from a recall whose confidence is ``low`` or ``none``."""
    recall_rate: float = 0.1
    feedback_rate: float = 0.2
    weaken_rate: float = 0.2
    floor: float = 0.05
    declared_weight: float = 0.5
    co_helpful_limit: int = 20


@dataclass(frozen=True)
class Recalled:
    """One result of a recall, as co-recall learning reads it."""

    memory_id: str
    context_id: str
    score: float
    lexical_rank: int | None = None
    vector_rank: int | None = None
    """Each leg's rank of it (``score_breakdown``); None where that leg did not find it."""


def stood_behind(ranked: Sequence[Recalled], settings: GraphSettings) -> list[Recalled]:
    """The results (best first) the ranking stands behind, by ``settings``' criteria: at
    ``co_recall_floor`` of the top score or more (``search/standing.py``), ranked within
    ``co_recall_legs_top`` by both legs; any one of those set, or every one."""
    if not ranked:
        return []
    top = ranked[0].score
    return [result for result in ranked if _stands(result, top, settings)]


def _stands(result: Recalled, top: float, settings: GraphSettings) -> bool:
    verdicts: list[bool] = []
    if settings.co_recall_floor is not None:
        verdicts.append(stands(result.score, top, settings.co_recall_floor))
    if settings.co_recall_legs_top is not None:
        within = settings.co_recall_legs_top
        ranks = (result.lexical_rank, result.vector_rank)
        verdicts.append(all(rank is not None and rank <= within for rank in ranks))
    return all(verdicts) if settings.co_recall_every else any(verdicts)


@dataclass(frozen=True)
class Reached:
    """A memory spreading activation got to."""

    activation: float
    path: tuple[str, ...]


def spread(
    store: GraphStore,
    workspace_id: str,
    seeds: Sequence[str],
    *,
    depth: int,
    min_weight: float,
    trusted_only: bool,
) -> dict[str, Reached]:
    """Best-path spreading activation from ``seeds`` (activation 1 each), ``depth`` hops.

    Layered relaxation (Bellman-Ford limited to ``depth`` rounds): each round extends only the
    memories improved in the previous round, from their previous-round values, so a path is
    never longer than ``depth`` edges. Seeds are in the answer too.
    """
    best = {seed: Reached(1.0, (seed,)) for seed in seeds}
    frontier = sorted(best)
    for _ in range(depth):
        if not frontier:
            break
        previous = dict(best)
        spreading = set(frontier)
        improved: set[str] = set()
        for edge in store.edges_touching(workspace_id, frontier, min_weight):
            if trusted_only and edge.trust_tier != "trusted":
                continue  # never reach, never pass through an external memory
            for here in (edge.source_id, edge.target_id):
                if here not in spreading:
                    continue
                there = edge.other(here)
                origin = previous[here]
                candidate = Reached(origin.activation * edge.weight, (*origin.path, there))
                if _better(candidate, best.get(there)):
                    best[there] = candidate
                    improved.add(there)
        frontier = sorted(improved, key=lambda m: (-best[m].activation, m))[:FRONTIER_CAP]
    return best


def _better(candidate: Reached, current: Reached | None) -> bool:
    """Higher activation wins; on a tie the shorter, then the smaller path (determinism)."""
    if current is None or candidate.activation > current.activation:
        return True
    if candidate.activation < current.activation:
        return False
    return (len(candidate.path), candidate.path) < (len(current.path), current.path)


def matches(row: MemoryRow, flt: MemoryFilter) -> bool:
    """Whether a live memory passes the filters (the SQL filters, evaluated in Python)."""
    checks = [
        flt.types is None or row.type in flt.types,
        flt.tags_any is None or any(tag in row.tags for tag in flt.tags_any),
        flt.tags_all is None or all(tag in row.tags for tag in flt.tags_all),
        flt.importance_min is None or row.importance >= flt.importance_min,
        flt.importance_max is None or row.importance <= flt.importance_max,
        flt.created_after is None or row.created_at > flt.created_after,
        flt.created_before is None or row.created_at < flt.created_before,
        flt.source_types is None or row.source_type in flt.source_types,
        flt.trust_tier is None or row.trust_tier == flt.trust_tier,
        flt.delivery_modes is None or row.delivery_mode in flt.delivery_modes,
    ]
    return all(checks) and row.deleted_at is None


class Associations:
    """The graph as the other services use it: learning from recall, feedback and declared
    links, a memory's edges, neighbours by spreading activation, the ranking boost."""

    def __init__(
        self,
        store: AssociationPort,
        contexts: ContextService,
        *,
        settings: GraphSettings | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self.store = store
        self.contexts = contexts
        self.settings = settings or GraphSettings()
        self.clock = clock

    # ------------------------------------------------------------ learning

    def learn_from_recall(
        self, workspace_id: str, ranked: Sequence[Recalled], confidence: str
    ) -> None:
        """Strengthen the pairwise edges of the top results the ranking stood behind, per
        context.

        ``ranked``: the results best first; ``confidence``: the recall's. A failure here is
        logged, never raised: the recall's answer matters more than what the graph learns.
        """
        if not self.settings.learn:
            return
        if self.settings.co_recall_confident and confidence in ("low", "none"):
            return
        stood = stood_behind(ranked[: self.settings.co_recall_top], self.settings)
        top = [(result.memory_id, result.context_id) for result in stood]
        by_context: dict[str, list[str]] = {}
        for memory_id, context_id in top:
            by_context.setdefault(context_id, []).append(memory_id)
        for context_id, ids in sorted(by_context.items()):
            if len(ids) < 2:
                continue
            try:
                strengthen_edges(
                    self.store, workspace_id, context_id, list(combinations(ids, 2)),
                    self.settings.recall_rate, self.clock(),
                )  # fmt: skip
            except Exception:  # learning is best effort; the recall's answer is not
                log.warning("co-recall edges not written", exc_info=True)

    def learn_from_feedback(
        self, workspace_id: str, context_id: str, memory_id: str, helpful: bool, query: str | None
    ) -> None:
        """Helpful: strengthen edges to the co-helpful memories of ``query``; unhelpful:
        weaken them. Without a query nothing changes."""
        if not self.settings.learn or query is None or not query.strip():
            return
        limit = self.settings.co_helpful_limit
        helpful_ids = self.store.feedback_memory_ids(
            workspace_id, context_id, query, helpful=True, limit=limit + 1
        )
        co_helpful = [other for other in helpful_ids if other != memory_id][:limit]
        pairs = [(memory_id, other) for other in co_helpful]
        if not pairs:
            return
        now = self.clock()
        if helpful:
            strengthen_edges(
                self.store, workspace_id, context_id, pairs, self.settings.feedback_rate, now
            )
        else:
            weaken_edges(
                self.store, workspace_id, context_id, pairs, self.settings.weaken_rate,
                self.settings.floor, now,
            )  # fmt: skip

    def check_links(
        self, principal: Principal, context: ContextRow, memory_ids: Sequence[str], field: str
    ) -> list[str]:
        """The distinct ids to link to; 404 unless each is a live memory of ``context``
        (another workspace's or context's id answers exactly like a missing one)."""
        wanted = list(dict.fromkeys(memory_ids))
        rows = self.store.get_memories(principal.workspace_id, wanted) if wanted else {}
        for memory_id in wanted:
            row = rows.get(memory_id)
            if row is None or row.context_id != context.id or row.deleted_at is not None:
                raise NotFoundError(f"memory {memory_id!r} not found", field=field)
        return wanted

    def link(
        self, workspace_id: str, context_id: str, memory_id: str, linked_ids: Sequence[str]
    ) -> None:
        """Declared edges from a new memory to memories checked by ``check_links``."""
        if linked_ids:
            declare_edges(
                self.store, workspace_id, context_id, [(memory_id, other) for other in linked_ids],
                self.settings.declared_weight, self.clock(),
            )  # fmt: skip

    # ------------------------------------------------------------ ranking

    def boost(
        self,
        workspace_id: str,
        ranked: Sequence[tuple[float, str]],
        beta: float,
        *,
        trusted_only: bool,
        seeds: int = BOOST_SEEDS,
    ) -> tuple[list[tuple[float, str]], dict[str, float]]:
        """Re-rank candidates by their association with the top ``seeds`` results.

        A candidate *c* gets ``score · (1 + β · a(c))`` where ``a(c) = max over seeds s ≠ c
        of w(s, c) · score(s) / score(top)``: only candidates the search legs already found
        move (the graph never adds a memory the filters did not pass), by at most ``1 + β``.
        Returns the new ranking and each candidate's factor.
        """
        if not ranked or ranked[0][0] <= 0:
            return list(ranked), {}
        top = ranked[0][0]
        seed_score = {memory_id: score for score, memory_id in ranked[:seeds]}
        pool = {memory_id for _, memory_id in ranked}
        association: dict[str, float] = {}
        for edge in self.store.edges_touching(workspace_id, list(seed_score)):
            if trusted_only and edge.trust_tier != "trusted":
                continue
            for seed in (edge.source_id, edge.target_id):
                other = edge.other(seed)
                if seed in seed_score and other in pool:
                    strength = edge.weight * seed_score[seed] / top
                    association[other] = max(association.get(other, 0.0), strength)
        factors = {memory_id: 1.0 + beta * association.get(memory_id, 0.0) for memory_id in pool}
        boosted = sorted(
            ((score * factors[memory_id], memory_id) for score, memory_id in ranked),
            key=lambda pair: (-pair[0], pair[1]),
        )
        return boosted, factors

    # ------------------------------------------------------------ reading

    def edges_of(self, workspace_id: str, memory_id: str) -> list[MemoryEdge]:
        """A memory's edges to live memories, strongest first (at most ``MAX_EDGES_SHOWN``)."""
        edges = self.store.edges_touching(workspace_id, [memory_id])
        edges.sort(key=lambda e: (-e.weight, e.other(memory_id)))
        return [
            MemoryEdge(
                memory_id=edge.other(memory_id),
                weight=edge.weight,
                origin=edge.origin,
                trust_tier=edge.trust_tier,
            )
            for edge in edges[:MAX_EDGES_SHOWN]
        ]

    def related(
        self,
        workspace_id: str,
        results: Sequence[Recalled],
        flt: MemoryFilter,
        *,
        min_weight: float,
        limit: int,
    ) -> list[Neighbour]:
        """``recall(include_related=true)``: direct neighbours of the results the ranking stood
        behind (``stood_behind``), never a result itself. A filler result (one leg found it,
        far below the top) brings no neighbours of its own topic into the answer."""
        seeds = [r.memory_id for r in stood_behind(results, self.settings)]
        if not seeds:
            return []
        others = [r.memory_id for r in results if r.memory_id not in seeds]
        return self.neighbours(
            workspace_id, seeds, flt, depth=1, min_weight=min_weight, limit=limit,
            exclude=others,
        )  # fmt: skip

    def neighbours(
        self,
        workspace_id: str,
        seeds: Sequence[str],
        flt: MemoryFilter,
        *,
        depth: int,
        min_weight: float,
        limit: int,
        exclude: Iterable[str] = (),
    ) -> list[Neighbour]:
        """Memories reached from ``seeds`` (not the seeds, not ``exclude``), strongest first,
        passing ``flt``; with ``flt.trust_tier == "trusted"`` external ones are never crossed."""
        trusted_only = flt.trust_tier == "trusted"
        reached = spread(
            self.store, workspace_id, seeds, depth=depth, min_weight=min_weight,
            trusted_only=trusted_only,
        )  # fmt: skip
        skip = set(seeds) | set(exclude)
        order = sorted(
            (m for m in reached if m not in skip),
            key=lambda m: (-reached[m].activation, len(reached[m].path), m),
        )
        found: list[Neighbour] = []
        for start in range(0, len(order), max(limit, 20)):
            chunk = order[start : start + max(limit, 20)]
            rows = self.store.get_memories(workspace_id, chunk)
            for memory_id in chunk:
                row = rows.get(memory_id)
                if row is None or not matches(row, flt):
                    continue
                if trusted_only and row.trust_tier != "trusted":
                    continue  # defence in depth: the edge filter already excluded it
                hit = reached[memory_id]
                found.append(
                    Neighbour(
                        **memory_view(row).model_dump(),
                        activation=round(hit.activation, 6),
                        hops=len(hit.path) - 1,
                        path=list(hit.path),
                    )
                )
                if len(found) == limit:
                    return found
        return found


class GraphService:
    """``explore``: the graph's one operation of its own (docs/graph.md)."""

    def __init__(self, store: GraphPort, contexts: ContextService, associations: Associations):
        self.store = store
        self.contexts = contexts
        self.associations = associations

    @operation("read")
    def explore(
        self,
        principal: Principal,
        context_ref: str,
        memory_id: str,
        *,
        depth: int = 2,
        min_weight: float = 0.05,
        limit: int = 20,
        filters: RecallFilters | None = None,
    ) -> ExploreResult:
        """Spreading activation from one live memory of a context: its neighbours up to
        ``depth`` hops (≤ 3), each with its activation and the path that reached it."""
        if not 1 <= depth <= MAX_DEPTH:
            raise InvalidInputError(f"depth must be between 1 and {MAX_DEPTH}", field="depth")
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidInputError(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
        if not 0.0 <= min_weight <= 1.0:
            raise InvalidInputError("min_weight must be between 0 and 1", field="min_weight")
        filters = filters or RecallFilters()
        if filters.context_ids or filters.include_deleted or filters.include_superseded:
            raise InvalidInputError(
                "explore stays in one context among live memories: context_ids, "
                "include_deleted and include_superseded do not apply",
                field="filters",
            )
        flt = memory_filter(filters)
        context = self.contexts.resolve(principal, context_ref)
        start = self.store.get_memory(principal.workspace_id, memory_id)
        if start is None or start.context_id != context.id or start.deleted_at is not None:
            raise NotFoundError(f"memory {memory_id!r} not found", field="memory_id")
        if flt.trust_tier == "trusted" and start.trust_tier != "trusted":
            # Every path starts at an external memory: none may be followed.
            return ExploreResult(memory_id=memory_id, neighbours=[])
        found = self.associations.neighbours(
            principal.workspace_id, [memory_id], flt, depth=depth, min_weight=min_weight,
            limit=limit,
        )  # fmt: skip
        return ExploreResult(memory_id=memory_id, neighbours=found)
