"""The ``Store`` protocol: the primitives a backend offers. Policy lives above it, in ``service/``.

Every method takes ``workspace_id`` first and every query a backend runs filters by it, so a
caller can never reach another tenant's rows by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from kioku.storage.records import MemoryFilter, ScoredId
from kioku.storage.shared.candidates import CandidateStore
from kioku.storage.shared.connectors import ConnectorStore
from kioku.storage.shared.contexts import ContextStore
from kioku.storage.shared.delivery import DeliveryStore
from kioku.storage.shared.embeddings import EmbeddingStore
from kioku.storage.shared.feedback import FeedbackStore
from kioku.storage.shared.graph import GraphStore
from kioku.storage.shared.jobs import JobStore
from kioku.storage.shared.keys import KeyStore
from kioku.storage.shared.memories import MemoryStore
from kioku.storage.shared.oauth import OAuthStore
from kioku.storage.shared.state import StateStore
from kioku.storage.shared.threads import ThreadStore
from kioku.storage.shared.transfer import TransferStore
from kioku.storage.sleep import SleepStore


class Store(
    ContextStore,
    MemoryStore,
    CandidateStore,
    TransferStore,
    SleepStore,
    GraphStore,
    EmbeddingStore,
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
    search legs below (each engine's own: FTS5 or tsvector, the vector cache or pgvector).
    See the contract tests."""

    url: str

    def close(self) -> None:
        """Release connections and persist caches."""
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
