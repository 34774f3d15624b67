"""The PostgreSQL backend (psycopg 3, a connection pool, pgvector, tsvector BM25)."""

from kioku.storage.postgres.reachability import refusal_reason, unreachable_reason
from kioku.storage.postgres.store import PostgresStore

__all__ = ["PostgresStore", "refusal_reason", "unreachable_reason"]
