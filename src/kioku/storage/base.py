"""The ``Store`` protocol: the primitives a backend offers. Policy lives above it, in ``service/``.

Every method takes ``workspace_id`` first and every query a backend runs filters by it, so a
caller can never reach another tenant's rows by id.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from kioku.storage.records import (
    ContextCounts,
    ContextRow,
    MemoryChanges,
    MemoryFilter,
    MemoryRow,
    NewMemory,
    RankingSignals,
    ScoredId,
    WorkspaceRow,
)
from kioku.storage.shared.connectors import ConnectorStore
from kioku.storage.shared.delivery import DeliveryStore
from kioku.storage.shared.embeddings import EmbeddingStore
from kioku.storage.shared.feedback import FeedbackStore
from kioku.storage.shared.graph import GraphStore
from kioku.storage.shared.jobs import JobStore
from kioku.storage.shared.keys import KeyStore
from kioku.storage.shared.oauth import OAuthStore
from kioku.storage.shared.state import StateStore
from kioku.storage.sleep import SleepStore
from kioku.storage.thread_store import ThreadStore
from kioku.storage.transfer import IdKind, TransferRow


class Store(
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
    primitives below (workspaces, contexts, memories, search, transfer)
    that have no area protocol yet. See the contract tests."""

    url: str

    def close(self) -> None:
        """Release connections and persist caches."""
        ...

    # -- workspaces
    def ensure_workspace(self, name: str) -> WorkspaceRow:
        """Return the workspace called ``name``, creating it if missing."""
        ...

    # -- contexts
    def insert_context(self, workspace_id: str, row: ContextRow) -> ContextRow:
        """Insert a context; raises ``ConflictError`` on a duplicate name."""
        ...

    def get_context(self, workspace_id: str, context_id: str) -> ContextRow | None: ...

    def get_context_by_name(self, workspace_id: str, name: str) -> ContextRow | None: ...

    def list_contexts(self, workspace_id: str) -> list[ContextRow]: ...

    def update_context(
        self, workspace_id: str, context_id: str, values: dict[str, Any], now: datetime
    ) -> ContextRow | None: ...

    def delete_context(self, workspace_id: str, context_id: str) -> bool:
        """Hard-delete a context and everything in it."""
        ...

    # -- memories
    def insert_memories(self, workspace_id: str, rows: Sequence[NewMemory]) -> None:
        """Insert all rows in one transaction: all or nothing."""
        ...

    def get_memory(self, workspace_id: str, memory_id: str) -> MemoryRow | None: ...

    def get_memories(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, MemoryRow]: ...

    def ranking_signals(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, RankingSignals]:
        """Re-ranking inputs for candidates, without loading their text."""
        ...

    def text_heads(
        self, workspace_id: str, memory_ids: Sequence[str], chars: int
    ) -> dict[str, str]:
        """The first ``chars`` characters of each memory's summary and of its content, joined
        by a newline: enough to tell a memory's language without loading up to 1 MiB each."""
        ...

    def update_memory(
        self, workspace_id: str, memory_id: str, changes: MemoryChanges, now: datetime
    ) -> MemoryRow | None:
        """Apply changes; a text change drops the vector and marks the memory ``pending``."""
        ...

    def soft_delete_memory(self, workspace_id: str, memory_id: str, now: datetime) -> bool: ...

    def soft_delete_memories(
        self,
        workspace_id: str,
        context_id: str,
        versions: Mapping[str, datetime],
        now: datetime,
    ) -> bool:
        """Soft-delete every memory of ``versions`` (id → the ``updated_at`` it must still
        have) in one transaction, or none: ``False`` and nothing changed when one of them is
        gone, deleted, in another context or changed since."""
        ...

    def purge_memory(self, workspace_id: str, memory_id: str) -> bool: ...

    def record_access(self, workspace_id: str, memory_id: str, now: datetime) -> None: ...

    def list_memories(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        flt: MemoryFilter,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[MemoryRow]:
        """Newest first, keyset-paginated on ``(created_at, id)``."""
        ...

    def count_memories(self, workspace_id: str, context_id: str) -> int: ...

    def context_counts(self, workspace_id: str, context_id: str, now: datetime) -> ContextCounts:
        """Rows per lane of one context, for ``stats``."""
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

    # -- moving a workspace between databases (kioku export / import)
    def dump_workspace(self, workspace_id: str, now: datetime) -> Iterator[TransferRow]:
        """Every row of a workspace, streamed in export order: contexts by id, memories by
        (context, created_at, id) with their vectors (deleted and superseded ones too),
        feedback by sequence, live state keys by (context, key).

        Consume it before other store calls on the same thread (it holds a read transaction).
        """
        ...

    def restore_workspace(self, workspace_id: str, rows: Iterable[TransferRow]) -> None:
        """Insert dumped rows as they were (ids, timestamps, counters, vectors), in one
        transaction: all or nothing. Rows come in dependency order; vector caches are
        invalidated for every restored context."""
        ...

    def existing_ids(self, kind: IdKind, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are already taken in the whole database (any workspace)."""
        ...
