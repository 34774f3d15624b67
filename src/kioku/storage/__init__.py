"""Storage backends behind the ``Store`` protocol, opened by URL."""

from __future__ import annotations

from pathlib import Path

from kioku.storage.base import Store
from kioku.storage.urls import display_url


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///path`` URL."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise ValueError(f"not a sqlite file URL: {url!r}")
    return Path(url[len(prefix) :]).expanduser()


class DatabaseUnreachableError(ValueError):
    """The database server did not answer, or refused the connection: one line saying what was
    tried and what to check, in place of the driver's traceback."""


def open_store(url: str, *, pool_size: int = 10, lexical_index_min: int | None = None) -> Store:
    """Open (and migrate) the database at ``url``; ``pool_size``: PostgreSQL's connections;
    ``lexical_index_min``: PostgreSQL's scope size for the lexical index (``None``: the
    default, 0: never)."""
    if url.startswith("sqlite:"):
        from kioku.storage.sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(url))
    if url.startswith(("postgresql:", "postgresql+psycopg:", "postgres:")):
        # Imported lazily: psycopg is only needed by deployments that use PostgreSQL.
        from kioku.storage.postgres import PostgresStore, unreachable_reason

        try:
            index = {} if lexical_index_min is None else {"lexical_index_min": lexical_index_min}
            return PostgresStore(url, max_connections=pool_size, **index)
        except Exception as exc:
            reason = unreachable_reason(exc)
            if reason is None:
                raise
            raise DatabaseUnreachableError(
                f"cannot reach PostgreSQL at {display_url(url)}: {reason}. Check that the server "
                "is running and reachable from here, and the host, port, user, password and "
                "database name in KIOKU_DATABASE_URL (or --database-url)."
            ) from None
    raise ValueError(
        f"unsupported database URL {url.split(':', 1)[0]!r}: kioku supports sqlite:///path "
        "and postgresql://user@host/db"
    )


__all__ = ["DatabaseUnreachableError", "Store", "open_store", "sqlite_path"]
