"""The PostgreSQL backend (psycopg 3, a connection pool, pgvector, tsvector BM25)."""

from kioku.storage.postgres.reachability import unreachable_reason
from kioku.storage.postgres.store import PostgresStore

__all__ = ["PostgresStore", "unreachable_reason"]
