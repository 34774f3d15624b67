"""What ``/health`` and ``/metrics`` say about the database: which engine, the embedding queue
(read from the database, so every replica reports the shared queue), and this process's
connection pool and lexical indexes. No caller and no tenant: the figures are the whole
database's or the process's, never a workspace's rows."""

from __future__ import annotations

from dataclasses import dataclass

from kioku.storage.ports import HealthPort
from kioku.storage.records import EmbeddingQueue, LexicalIndexStatistics, PoolStatistics


@dataclass(frozen=True)
class DatabaseHealth:
    """The engine (``sqlite`` or ``postgresql``) and how many memories wait for a vector."""

    backend: str
    embedding_queue: int


class HealthService:
    """The database's and this process's status, for liveness checks and metrics scrapes."""

    def __init__(self, database: HealthPort) -> None:
        self.database = database

    def database_health(self) -> DatabaseHealth:
        """The engine (the URL's scheme, never more of it) and the embedding queue's length
        (all workspaces)."""
        return DatabaseHealth(
            backend=self.database.url.split(":", 1)[0],
            embedding_queue=self.database.pending_count(),
        )

    def embedding_queue(self) -> EmbeddingQueue:
        """How many memories (all workspaces) wait for a vector, and the oldest one's last
        write: one query."""
        return self.database.embedding_queue()

    def pool_statistics(self) -> PoolStatistics | None:
        """This process's PostgreSQL connection pool; ``None`` on SQLite (no pool)."""
        return self.database.pool_statistics()

    def lexical_index_statistics(self) -> LexicalIndexStatistics | None:
        """This process's lexical indexes of large scopes (both backends)."""
        return self.database.lexical_index_statistics()
