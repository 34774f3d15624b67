"""The ``Store`` protocol: the primitives a backend offers. Policy lives above it, in ``service/``.

Every method takes ``workspace_id`` first and every query a backend runs filters by it, so a
caller can never reach another tenant's rows by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import numpy as np

from kioku.storage.records import (
    EdgeChange,
    EdgeRow,
    EmbeddingJob,
    EmbeddingQueue,
    MemoryFilter,
    ScoredId,
    VersionSignals,
)
from kioku.storage.shared.candidates import CandidateStore
from kioku.storage.shared.connectors import ConnectorStore
from kioku.storage.shared.contexts import ContextStore
from kioku.storage.shared.delivery import DeliveryStore
from kioku.storage.shared.feedback import FeedbackStore
from kioku.storage.shared.jobs import JobStore
from kioku.storage.shared.keys import KeyStore
from kioku.storage.shared.memories import MemoryStore
from kioku.storage.shared.oauth import OAuthStore
from kioku.storage.shared.state import StateStore
from kioku.storage.shared.threads import ThreadStore
from kioku.storage.shared.transfer import TransferStore
from kioku.storage.sleep_store import SleepStore


class Store(
    ContextStore,
    MemoryStore,
    CandidateStore,
    TransferStore,
    SleepStore,
    ConnectorStore,
    KeyStore,
    OAuthStore,
    DeliveryStore,
    FeedbackStore,
    StateStore,
    JobStore,
    ThreadStore,
    Protocol,
):
    """A storage backend (SQLite or PostgreSQL): one protocol per area, composed, plus the
    primitives below (recall's version signals, search, embeddings, graph)
    that have no area protocol yet. See the contract tests."""

    url: str

    def close(self) -> None:
        """Release connections and persist caches."""
        ...

    # -- memories
    def version_signals(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, VersionSignals]:
        """Context, creation time, summary and stored vector of a few top candidates (the
        newer-fact-first stage of recall); never the content."""
        ...

    # -- search legs
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
        ...

    def vector_search(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        query: np.ndarray,
        flt: MemoryFilter,
        limit: int,
    ) -> list[ScoredId]:
        """Cosine nearest neighbours among live embedded memories; higher is better."""
        ...

    # -- embeddings
    def pending_embeddings(self, model: str, limit: int) -> list[EmbeddingJob]:
        """Memories waiting for a vector, in contexts that use ``model`` (or none yet)."""
        ...

    def store_embeddings(
        self,
        workspace_id: str,
        context_id: str,
        model: str,
        items: Sequence[tuple[str, np.ndarray]],
    ) -> int:
        """Save vectors (the source of truth) and update the index; returns how many landed."""
        ...

    def mark_embedding_failed(self, workspace_id: str, memory_ids: Sequence[str]) -> None: ...

    def reset_embeddings(self, workspace_id: str, context_id: str) -> int:
        """Drop every vector of a context and its model; mark its memories ``pending``."""
        ...

    def pending_count(self) -> int:
        """How many memories (all workspaces) wait for a vector: the embedding queue length."""
        ...

    def embedding_queue(self) -> EmbeddingQueue:
        """The embedding queue (all workspaces) in one query: how many memories wait for a
        vector and when the longest-waiting one was last written (for ``/metrics``)."""
        ...

    # -- association graph (SQLite and PostgreSQL share the write rules: storage/graph.py).
    # An edge joins two memories of one context of one workspace; a write whose ends are not
    # (or, for Hebbian and declared writes, are not live) is dropped for that pair. Every write
    # returns what it changed, pair by pair, so it can be undone (storage.graph.undo).
    def strengthen_edges(
        self,
        workspace_id: str,
        context_id: str,
        pairs: Sequence[tuple[str, str]],
        rate: float,
        now: datetime,
        *,
        origin: str = "hebbian",
    ) -> list[EdgeChange]:
        """``w ← w + η·(1 − w)`` on each pair of live memories (either order); a new edge
        starts at ``η`` with ``origin``, an existing one keeps its origin."""
        ...

    def weaken_edges(
        self,
        workspace_id: str,
        context_id: str,
        pairs: Sequence[tuple[str, str]],
        rate: float,
        floor: float,
        now: datetime,
    ) -> list[EdgeChange]:
        """``w ← w·(1 − η)`` on existing edges; below ``floor`` an edge is deleted."""
        ...

    def declare_edges(
        self,
        workspace_id: str,
        context_id: str,
        pairs: Sequence[tuple[str, str]],
        weight: float,
        now: datetime,
    ) -> list[EdgeChange]:
        """Upsert ``declared`` edges (an existing edge keeps the larger weight)."""
        ...

    def set_edges(self, workspace_id: str, rows: Sequence[EdgeRow]) -> list[EdgeChange]:
        """Write exact rows (Sleep and its rollback); ends may be soft-deleted."""
        ...

    def delete_edges(
        self, workspace_id: str, pairs: Sequence[tuple[str, str]]
    ) -> list[EdgeChange]: ...

    def move_edges(
        self, workspace_id: str, from_id: str, to_id: str, now: datetime
    ) -> list[EdgeChange]:
        """A merge: ``from_id``'s edges go to ``to_id`` (max weight; the pair itself dropped)."""
        ...

    def list_edges(
        self,
        workspace_id: str,
        context_id: str,
        *,
        after: tuple[str, str] | None = None,
        limit: int | None = None,
    ) -> list[EdgeRow]:
        """A context's edges by (source_id, target_id), keyset-paginated after ``after``."""
        ...

    def edges_touching(
        self,
        workspace_id: str,
        memory_ids: Sequence[str],
        min_weight: float = 0.0,
        *,
        live_only: bool = True,
    ) -> list[EdgeRow]:
        """Edges with an end in ``memory_ids`` and ``weight >= min_weight``, by pair;
        ``live_only``: both ends not deleted. ``trust_tier`` is the ends' current tier."""
        ...

    def feedback_memory_ids(
        self, workspace_id: str, context_id: str, query: str, *, helpful: bool, limit: int
    ) -> list[str]:
        """Memories with (un)helpful feedback for exactly ``query`` in a context, most
        recently judged first: who was co-helpful for one question."""
        ...
