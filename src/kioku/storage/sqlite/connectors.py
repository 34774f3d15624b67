"""Connectors on SQLite: ``shared/connectors.py``, plus the vector cache a purge invalidates."""

from __future__ import annotations

from collections.abc import Sequence

from kioku.storage.shared.connectors import ConnectorStore
from kioku.storage.vector_index import VectorIndexCache


class SQLiteConnectorLane(ConnectorStore):
    """``ConnectorStore`` on SQLite (``sync_memories`` is the memory lane's)."""

    index: VectorIndexCache

    def _vectors_changed(self, context_ids: Sequence[str]) -> None:
        for context_id in context_ids:
            self.index.forget(context_id)
