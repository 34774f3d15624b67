"""What the stages of a ranking share: the query (read once), the tools, the ranking so far."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from kioku.embeddings.base import Embedder
from kioku.models import SearchConfig
from kioku.search.fusion import leg_ranks
from kioku.search.language import Language, language_of, readable_languages
from kioku.search.past import Tense, query_tense
from kioku.search.tokenize import tokenize
from kioku.service.graph import Associations
from kioku.service.ranking.vector_leg import VectorLeg
from kioku.storage.ports import RankingPort
from kioku.storage.records import ContextRow, MemoryFilter, RankingSignals, ScoredId


@dataclass
class Query:
    """The query text and what the stages read from it, each worked out once."""

    text: str

    @cached_property
    def terms(self) -> list[str]:
        """The lexical leg's tokens."""
        return tokenize(self.text)

    @cached_property
    def language(self) -> Language:
        return language_of(self.text)

    @cached_property
    def readable(self) -> set[Language]:
        """The languages whose words the lexical leg can match for this query."""
        return readable_languages(self.text)

    @cached_property
    def tense(self) -> Tense:
        return query_tense(self.text)


@dataclass(frozen=True)
class Tools:
    """What stages may call besides the ranking: the store, the embedder, the graph."""

    store: RankingPort
    embedder: Embedder | None
    graph: Associations


@dataclass
class PendingVectors:
    """Candidates the lexical leg found that were still waiting for their vector."""

    embedded: int = 0
    """Embedded for this recall and scored by the vector leg as they will be once stored."""
    lexical_only: int = 0
    """Beyond the stage's bound (``pending.MAX_EMBEDDED``, ``pending.BUDGET_SECONDS``):
    ranked by the lexical leg alone, the vector leg abstaining on them."""


ReadAhead = Callable[["Ranking", Tools, list[str]], None]
"""A stage's read of what it will need about some candidates, done ahead of the stage."""


@dataclass
class Ranking:
    """Every candidate of one search, best first, and how each score was made."""

    ws: str
    scope: list[ContextRow]
    flt: MemoryFilter
    depth: int
    """How deep each leg looked: a leg that returned this many may have had more."""
    config: SearchConfig
    query: Query
    legs: tuple[str, ...] = ("lexical", "vector")
    """The legs asked for (the benchmark's single-leg arms ask for one)."""
    disabled: frozenset[str] = frozenset()
    """Stages not to run (``rerank=False`` and the ablation turn some off)."""
    ran: dict[str, list[ScoredId]] = field(default_factory=dict)
    """Each leg's candidates, best first, as fusion reads them."""
    query_vector: np.ndarray | None = None
    vector_leg: VectorLeg | None = None
    """The vector leg, started before the scope was read (``legs.VectorLeg``)."""
    blind: dict[str, set[str]] = field(default_factory=dict)
    """Per leg, the memories it could not have found (``fuse_weighted`` lets it abstain)."""
    weight_scale: dict[str, float] = field(default_factory=dict)
    """Per leg, a factor on its fusion weight (the language stage's)."""
    crossed: bool = False
    """The legs disagree across languages (``languages``): no ``high`` confidence."""
    raw_vector: list[ScoredId] | None = None
    """The vector leg's hits with their raw cosines, kept by ``languages`` before it puts them
    on one scale across languages: ``confidence`` reads how close the nearest memory is."""
    pending: PendingVectors | None = None
    fresh_vectors: dict[str, np.ndarray] = field(default_factory=dict)
    """Vectors the ``pending`` stage made for candidates not embedded yet (later stages read
    them where they would read a stored vector)."""
    signals: dict[str, RankingSignals] = field(default_factory=dict)
    neighbours: dict[str, list[str]] = field(default_factory=dict)
    """Each candidate's thread neighbours, once read (``[]``: none); ``thread_neighbours``
    reads them, the lexical candidates' possibly ahead, while the query embedding runs."""
    read_ahead: tuple[ReadAhead, ...] = ()
    """The reads the enabled stages want done on the lexical candidates while the query
    embedding runs (``pipeline.Stage.read_ahead``), in pipeline order."""
    fused: dict[str, float] = field(default_factory=dict)
    ranked: list[tuple[float, str]] = field(default_factory=list)
    effects: dict[str, dict[str, float]] = field(default_factory=dict)
    """Per breakdown field, what a stage did to each memory it touched."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds each stage that ran took, in pipeline order."""

    @property
    def context_ids(self) -> list[str]:
        return [row.id for row in self.scope]

    def record(self, breakdown: str, values: dict[str, float], *, add: bool = False) -> None:
        """Note what a stage did under its ``breakdown`` field (``add``: summed with what
        another stage put there)."""
        found = self.effects.setdefault(breakdown, {})
        for memory_id, value in values.items():
            found[memory_id] = found.get(memory_id, 0.0) + value if add else value

    def order(self, scores: dict[str, float]) -> None:
        """Make ``ranked`` the candidates of ``scores``, best first; a tie goes to the newer
        memory, then to the id (like ``leg_ranks``: the order of equal scores must not depend
        on which uuid each memory happened to draw)."""
        signals = self.signals
        self.ranked = sorted(
            ((score, memory_id) for memory_id, score in scores.items()),
            key=lambda pair: (-pair[0], -signals[pair[1]].created_at.timestamp(), pair[1]),
        )

    def closest(self) -> float | None:
        """The vector leg's best raw cosine (``None``: it did not run or found nothing)."""
        hits = self.raw_vector if self.raw_vector is not None else self.ran.get("vector")
        return max((hit.score for hit in hits), default=None) if hits else None

    def leg_rank(self, leg: str) -> dict[str, tuple[int, float]]:
        """A leg's (rank, raw score) of each memory it found."""
        leg_hits = self.ran.get(leg, [])
        rank = leg_ranks(leg_hits)
        return {hit.memory_id: (rank[hit.memory_id], hit.score) for hit in leg_hits}
