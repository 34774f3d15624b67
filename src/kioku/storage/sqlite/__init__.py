"""The embedded SQLite backend: one WAL file, FTS5 for BM25, an in-process vector index."""

from kioku.storage.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
