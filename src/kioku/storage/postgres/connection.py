"""PostgreSQL connections: a ``psycopg_pool.ConnectionPool``, one transaction per block."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg import Connection
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from kioku.storage.urls import libpq_url


class PostgresDatabase:
    """Owns the pool. Every block of work borrows one connection for one transaction."""

    def __init__(self, url: str, *, min_size: int = 1, max_size: int = 10) -> None:
        kwargs: dict[str, Any] = {
            "row_factory": dict_row,
            # Timestamps come back in UTC whatever the server's or role's TimeZone says.
            "options": "-c TimeZone=UTC",
        }
        self.pool: ConnectionPool[Connection[DictRow]] = ConnectionPool(
            libpq_url(url),
            min_size=min_size,
            max_size=max_size,
            kwargs=kwargs,
            connection_class=Connection[DictRow],
            open=True,
        )

    @contextmanager
    def transaction(self) -> Iterator[Connection[DictRow]]:
        """One transaction: committed when the block ends, rolled back if it raises.

        Used for reads too: several statements in one block then see one snapshot's worth of
        committed work (READ COMMITTED per statement, as the SQLite read path is close enough).
        """
        with self.pool.connection() as conn:
            yield conn

    def close(self) -> None:
        self.pool.close()
