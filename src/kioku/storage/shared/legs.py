"""The two search legs recall ranks with: their entry points written once, the legs each
engine's own (FTS5 or tsvector, the vector cache or pgvector).

``lexical_search`` and ``vector_search`` answer an empty scope (no context, no token, no room
for a hit) at once; an engine supplies ``_lexical_leg`` and ``_vector_leg`` over one
``LegScope`` that is never empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

import numpy as np

from kioku.storage.records import MemoryFilter, ScoredId


class LegScope(NamedTuple):
    """What a leg searches: the memories of ``context_ids`` (at least one) of one workspace
    that ``flt`` passes, for at most ``limit`` (at least 1) hits."""

    workspace_id: str
    context_ids: Sequence[str]
    flt: MemoryFilter
    limit: int


class SearchLegs(Protocol):
    """The search legs of a backend (see the module docstring)."""

    def lexical_search(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        tokens: Sequence[str],
        flt: MemoryFilter,
        limit: int,
    ) -> list[ScoredId]:
        """BM25 over the pre-tokenized text; higher score is better. The corpus statistics
        (N, avgdl, df) are this workspace's own: nothing another workspace stores may move a
        score (``test_lexical_scores_never_move_with_another_workspace``)."""
        if not tokens or not context_ids or limit <= 0:
            return []
        return self._lexical_leg(LegScope(workspace_id, context_ids, flt, limit), tokens)

    def vector_search(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        query: np.ndarray,
        flt: MemoryFilter,
        limit: int,
    ) -> list[ScoredId]:
        """Cosine nearest neighbours among live embedded memories; higher is better."""
        if not context_ids or limit <= 0:
            return []
        return self._vector_leg(LegScope(workspace_id, context_ids, flt, limit), query)

    def _lexical_leg(self, scope: LegScope, tokens: Sequence[str]) -> list[ScoredId]:
        """The engine's lexical leg: at most ``scope.limit`` hits, best first."""
        ...

    def _vector_leg(self, scope: LegScope, query: np.ndarray) -> list[ScoredId]:
        """The engine's vector leg: at most ``scope.limit`` hits, best first."""
        ...
