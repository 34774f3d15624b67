"""Storage backends behind the ``Store`` protocol, opened by URL."""

from __future__ import annotations

from kioku.storage.base import Store
from kioku.storage.open_errors import DatabaseOpenError, DatabaseUnreachableError
from kioku.storage.opening import opening
from kioku.storage.sqlite_file import sqlite_path
from kioku.storage.urls import is_postgres_url


def open_store(url: str, *, pool_size: int = 10, lexical_index_min: int | None = None) -> Store:
    """Open (and migrate) the database at ``url``; ``pool_size``: PostgreSQL's connections;
    ``lexical_index_min``: the scope size from which the lexical leg asks a tantivy index
    (``None``: the default, 0: never). A database it cannot open raises a
    ``DatabaseOpenError`` saying why and what to do (``storage/opening.py``)."""
    if url.startswith("sqlite:"):
        with opening(url):
            from kioku.storage.sqlite import SQLiteStore

            if lexical_index_min is None:
                return SQLiteStore(sqlite_path(url))
            return SQLiteStore(sqlite_path(url), lexical_index_min=lexical_index_min)
    if is_postgres_url(url):
        with opening(url):  # imports psycopg first: only PostgreSQL deployments need it
            from kioku.storage.postgres import PostgresStore

            index = {} if lexical_index_min is None else {"lexical_index_min": lexical_index_min}
            return PostgresStore(url, max_connections=pool_size, **index)
    raise ValueError(
        f"unsupported database URL {url.split(':', 1)[0]!r}: kioku supports sqlite:///path "
        "and postgresql://user@host/db"
    )


__all__ = [
    "DatabaseOpenError",
    "DatabaseUnreachableError",
    "Store",
    "open_store",
    "opening",
    "sqlite_path",
]
