"""The ports: the narrow views of the store that the services take.

``Store`` (``storage/base.py``) is every area composed, some ninety methods; a service names only
the part it calls, so its constructor says what it can read and write. A port composes the area
protocols a service uses whole (``storage/shared/``, ``storage/sleep.py``) with the few methods
it borrows from other areas, declared here once by their signature. Every backend satisfies
every port structurally: ``runtime.py`` hands each service the one store, and pyright checks
that it fits. A port has at most 20 methods (``tests/service/test_ports.py``); a port a few
functions share is named for what it offers, one service's for that service.

Every service with ``guard.operation`` methods takes a port that includes ``AuditTrail``: the
guard writes its audit lines through ``service.store``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

from kioku.storage.base import SearchLegs
from kioku.storage.records import (
    AuditEvent,
    ContextCounts,
    ContextRow,
    EmbeddingQueue,
    MemoryChanges,
    MemoryFilter,
    MemoryRow,
    NewMemory,
    RankingSignals,
    VersionSignals,
    WorkspaceRow,
)
from kioku.storage.shared.candidates import CandidateStore
from kioku.storage.shared.connectors import ConnectorStore
from kioku.storage.shared.contexts import ContextStore
from kioku.storage.shared.delivery import DeliveryStore
from kioku.storage.shared.embeddings import EmbeddingStore, Vectors
from kioku.storage.shared.feedback import FeedbackStore
from kioku.storage.shared.graph import GraphStore
from kioku.storage.shared.jobs import JobStore
from kioku.storage.shared.keys import KeyStore
from kioku.storage.shared.state import StateStore
from kioku.storage.shared.threads import ThreadStore
from kioku.storage.shared.transfer import TransferStore
from kioku.storage.sleep import SleepStore
from kioku.storage.status import StatusStore

# -- shared by several services


class ContextLookup(Protocol):
    """A context of a workspace by id or by name (``service/lookup.py``)."""

    def get_context(self, workspace_id: str, context_id: str) -> ContextRow | None: ...

    def get_context_by_name(self, workspace_id: str, name: str) -> ContextRow | None: ...


class AuditTrail(ContextLookup, Protocol):
    """What ``guard.operation`` writes with: an audit line, naming its context by id."""

    def append_audit(self, event: AuditEvent) -> None: ...


class MemoryReads(Protocol):
    """Memories by id, and a context's memories a page at a time."""

    def get_memory(self, workspace_id: str, memory_id: str) -> MemoryRow | None: ...

    def get_memories(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, MemoryRow]: ...

    def list_memories(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        flt: MemoryFilter,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[MemoryRow]: ...


class AssociationPort(GraphStore, MemoryReads, Protocol):
    """The graph as the services learn on it and spread over it (``Associations``): its edges
    and the memories at their ends."""


class Workspaces(Protocol):
    """Workspaces by name, and each one's contexts."""

    def get_workspace_by_name(self, name: str) -> WorkspaceRow | None: ...

    def ensure_workspace(self, name: str) -> WorkspaceRow: ...

    def list_workspaces(self) -> list[WorkspaceRow]: ...

    def list_contexts(self, workspace_id: str) -> list[ContextRow]: ...


class RankingPort(SearchLegs, CandidateStore, ThreadStore, Protocol):
    """What recall's ranking stages read (``service/ranking/``): the legs, the candidates'
    signals, thread neighbours, and the few top candidates' vectors."""

    def version_signals(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, VersionSignals]: ...


# -- one service's each


class ContextPort(ContextStore, AuditTrail, Protocol):
    """``ContextService``: contexts, and whether one still holds memories."""

    def count_memories(self, workspace_id: str, context_id: str) -> int: ...


class MemoryPort(AssociationPort, ThreadStore, AuditTrail, Protocol):
    """``MemoryService`` (and ``import_batch``): memories written one at a time or by batch,
    threads, and the graph it learns links on."""

    def insert_memories(self, workspace_id: str, rows: Sequence[NewMemory]) -> None: ...

    def update_memory(
        self, workspace_id: str, memory_id: str, changes: MemoryChanges, now: datetime
    ) -> MemoryRow | None: ...

    def soft_delete_memory(self, workspace_id: str, memory_id: str, now: datetime) -> bool: ...

    def purge_memory(self, workspace_id: str, memory_id: str) -> bool: ...

    def record_access(self, workspace_id: str, memory_id: str, now: datetime) -> None: ...

    def pending_count(self) -> int: ...

    def external_memories(
        self,
        workspace_id: str,
        context_id: str,
        owner: str,
        external_ids: Sequence[str] | None = None,
    ) -> dict[str, MemoryRow]: ...


class RecallPort(RankingPort, AssociationPort, AuditTrail, Protocol):
    """``RecallService``: the ranking's reads, the hits loaded, the graph it learns on."""


class ForgetPort(MemoryReads, AuditTrail, Protocol):
    """``ForgetService``: the memories a query matched, forgotten together."""

    def soft_delete_memories(
        self,
        workspace_id: str,
        context_id: str,
        versions: Mapping[str, datetime],
        now: datetime,
    ) -> bool: ...


class ConnectorPort(ConnectorStore, AuditTrail, Protocol):
    """``ConnectorService``: connectors, their contexts and requests, and a context's
    memories synced by external id."""

    def sync_memories(
        self,
        workspace_id: str,
        context_id: str,
        inserts: Sequence[NewMemory],
        updates: Sequence[tuple[str, MemoryChanges]],
        deletes: Sequence[str],
        now: datetime,
    ) -> list[MemoryRow]: ...


class PurgePort(ConnectorStore, AuditTrail, Protocol):
    """``PurgeService``: erasure of a context's contents or of a source."""


class FeedbackPort(FeedbackStore, AssociationPort, AuditTrail, Protocol):
    """``FeedbackService``: feedback events, and the graph they teach."""


class DeliveryPort(DeliveryStore, AuditTrail, Protocol):
    """``DeliveryService``: pinned and upcoming memories."""


class StatePort(StateStore, AuditTrail, Protocol):
    """``StateService``: agent state by key."""


class KeyPort(KeyStore, AuditTrail, Protocol):
    """``KeyService`` and ``AuditService``: API keys and the audit log."""


class GraphPort(MemoryReads, AuditTrail, Protocol):
    """``GraphService``: the memory a graph question starts from (the rest is
    ``Associations``')."""


class StatsPort(SleepStore, AuditTrail, Protocol):
    """``StatsService``: a context's counts and its Sleep runs."""

    def context_counts(
        self, workspace_id: str, context_id: str, now: datetime
    ) -> ContextCounts: ...


class EmbeddingPort(EmbeddingStore, JobStore, Protocol):
    """``EmbeddingScheduler``: the embedding queue, its leases, the vectors it stores."""


class SleepPort(SleepStore, GraphStore, MemoryReads, AuditTrail, Protocol):
    """``SleepService`` and its phases (``service/sleep/``): the run log, the edges, the
    memories and their ranking signals, expired state."""

    def ranking_signals(
        self, workspace_id: str, memory_ids: Sequence[str], head_chars: int = 0
    ) -> dict[str, RankingSignals]: ...

    def sweep_state(
        self, workspace_id: str | None, context_id: str | None, now: datetime
    ) -> int: ...


class SleepSchedule(JobStore, Workspaces, Protocol):
    """``sleep_job``: every context of every workspace, a period claimed at a time."""


class TransferPort(TransferStore, Workspaces, Protocol):
    """``service/transfer.py``: a whole workspace dumped or restored, found or made by name."""


class BenchPort(MemoryReads, Protocol):
    """``BenchService``: what ``kioku bench`` and ``kioku eval`` read and write beneath the
    operations: vectors stored as given, a context's live count, memories read by id without
    an access counted."""

    def store_embeddings(
        self, workspace_id: str, context_id: str, model: str, items: Vectors
    ) -> int: ...

    def count_memories(self, workspace_id: str, context_id: str) -> int: ...


class HealthPort(StatusStore, Protocol):
    """``HealthService``: the backend's own status, and the embedding queue (all workspaces)."""

    def pending_count(self) -> int: ...

    def embedding_queue(self) -> EmbeddingQueue: ...
