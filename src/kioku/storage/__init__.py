"""Storage backends behind the ``Store`` protocol, opened by URL."""

from __future__ import annotations

from pathlib import Path

from kioku.storage.base import Store


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///path`` URL."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or len(url) == len(prefix):
        raise ValueError(f"not a sqlite file URL: {url!r}")
    return Path(url[len(prefix) :]).expanduser()


def open_store(url: str) -> Store:
    """Open (and migrate) the database at ``url``."""
    if url.startswith("sqlite:"):
        from kioku.storage.sqlite import SQLiteStore

        return SQLiteStore(sqlite_path(url))
    if url.startswith(("postgresql:", "postgresql+psycopg:", "postgres:")):
        # Imported lazily: psycopg is only needed by deployments that use PostgreSQL.
        from kioku.storage.postgres import PostgresStore

        return PostgresStore(url)
    raise ValueError(
        f"unsupported database URL {url.split(':', 1)[0]!r}: kioku supports sqlite:///path "
        "and postgresql://user@host/db"
    )


__all__ = ["Store", "open_store", "sqlite_path"]
