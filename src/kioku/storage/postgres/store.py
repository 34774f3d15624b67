"""``PostgresStore``: the ``Store`` protocol on PostgreSQL (psycopg 3 pool, pgvector, tsvector).

Semantics mirror ``SQLiteStore`` exactly (the contract suite in tests/storage defines them).
Text that SQLite orders with its BINARY collation is ordered ``COLLATE "C"`` here (code point
order), so ids, names and keys sort the same whatever the database's default collation is.
"""

from __future__ import annotations

from kioku.storage.migrations import upgrade_database
from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.postgres.dialect import PostgresSql
from kioku.storage.postgres.embeddings import PostgresEmbeddingArea
from kioku.storage.postgres.jobs import PostgresJobArea
from kioku.storage.postgres.lexical_sidecar import MIN_MEMORIES, LexicalSidecar
from kioku.storage.postgres.lexicon import PostgresLexicon
from kioku.storage.postgres.search import PostgresSearchArea
from kioku.storage.postgres.sleep import PostgresSleepArea
from kioku.storage.records import LexicalIndexStatistics, PoolStatistics
from kioku.storage.shared.areas import SharedAreas
from kioku.storage.shared.database import Database
from kioku.storage.shared.graph import GraphStore
from kioku.storage.shared.memories import Lexicon
from kioku.storage.urls import libpq_url, sqlalchemy_url


class PostgresStore(
    SharedAreas,
    PostgresSearchArea,
    PostgresEmbeddingArea,
    PostgresJobArea,
    GraphStore,
    PostgresSleepArea,
):
    """The server backend. Safe to share between threads (the pool hands out connections)."""

    sql: Database  # the shared areas' view of ``db``
    lexicon: Lexicon

    def __init__(
        self, url: str, *, max_connections: int = 10, lexical_index_min: int = MIN_MEMORIES
    ) -> None:
        """``lexical_index_min``: the scope size from which the lexical leg takes its
        candidates from this replica's tantivy index (``lexical_sidecar``; 0: never)."""
        self.url = libpq_url(url)
        upgrade_database(sqlalchemy_url(url))
        self.db = PostgresDatabase(self.url, max_size=max_connections)
        self.lexical_sidecar = LexicalSidecar(self.db, lexical_index_min)
        self.sql = PostgresSql(self.db)
        self.lexicon = PostgresLexicon()

    def close(self) -> None:
        self.lexical_sidecar.close()
        self.db.close()

    def pool_statistics(self) -> PoolStatistics:
        stats = self.db.pool.get_stats()  # a counter still at 0 is left out
        return PoolStatistics(
            size=stats.get("pool_size", 0),
            max=stats.get("pool_max", 0),
            waiting=stats.get("requests_waiting", 0),
            queued=stats.get("requests_queued", 0),
            wait_seconds=stats.get("requests_wait_ms", 0) / 1000,
        )

    def lexical_index_statistics(self) -> LexicalIndexStatistics:
        return self.lexical_sidecar.statistics()
