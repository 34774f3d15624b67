"""The part of the ``Store`` protocol connectors need: their rows, external ids, idempotent
ingestion, and purge (erasing every trace of a context's contents or of a source)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from kioku.storage.records import (
    ConnectorRow,
    MemoryChanges,
    MemoryRow,
    NewMemory,
    PurgeCounts,
    PurgeScope,
)


class ConnectorStore(Protocol):
    """Connector primitives; ``Store`` inherits them. See tests/storage/test_connector_contract."""

    def upsert_connector(
        self,
        workspace_id: str,
        kind: str,
        name: str,
        config: dict[str, Any] | None,
        now: datetime,
    ) -> ConnectorRow:
        """The connector ``(kind, name)``, created if missing; ``config`` replaces the old one
        (``None``: keep it). A config equal to the stored one changes nothing, not even
        ``updated_at``."""
        ...

    def list_connectors(self, workspace_id: str) -> list[ConnectorRow]:
        """Every connector of the workspace, by (kind, name)."""
        ...

    def bind_context(self, workspace_id: str, context_id: str, connector_id: str) -> None:
        """Bind a context to a connector (the service makes sure it is ``external``)."""
        ...

    def sync_memories(
        self,
        workspace_id: str,
        context_id: str,
        inserts: Sequence[NewMemory],
        updates: Sequence[tuple[str, MemoryChanges]],
        deletes: Sequence[str],
        now: datetime,
    ) -> list[MemoryRow]:
        """Insert, update and soft-delete memories of one context in one transaction: all or
        nothing (a connector's batch is never half-written). Returns the updated rows."""
        ...

    def external_memories(
        self,
        workspace_id: str,
        context_id: str,
        owner: str,
        external_ids: Sequence[str] | None = None,
    ) -> dict[str, MemoryRow]:
        """Live memories of a context by external id (all that have one when ``None``), among
        those ``owner`` wrote: another channel's external ids are invisible here."""
        ...

    def get_ingest_request(
        self, workspace_id: str, context_id: str, key: str
    ) -> tuple[str, dict[str, Any]] | None:
        """(request hash, response) stored for an idempotency key, if any."""
        ...

    def save_ingest_request(
        self,
        workspace_id: str,
        context_id: str,
        key: str,
        request_hash: str,
        response: dict[str, Any],
        now: datetime,
    ) -> None:
        """Remember the answer to an idempotency key (the first answer wins a race)."""
        ...

    def purge(self, workspace_id: str, scope: PurgeScope) -> PurgeCounts:
        """Erase, in one transaction, the memories in ``scope`` with their vectors, index
        entries, edges, feedback and the Sleep actions naming them; for a whole context also
        its state keys, its Sleep runs and its idempotency records. Vector caches of the
        contexts touched are invalidated. Returns what was removed."""
        ...
