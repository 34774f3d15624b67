"""PostgreSQL connections: a ``psycopg_pool.ConnectionPool``, one transaction per block.

Every transaction names the workspace it works for: ``kioku.workspace_id`` is set for that
transaction only, and the row-level security policies (migration 0005) show it that tenant's
rows and nothing else. ``ALL_WORKSPACES`` is for the few lookups made before a tenant is known
(a key by its hash, a workspace by name) and for cross-tenant upkeep (the embedding queue).

Transaction-local settings (the scope, a search's ``hnsw.*`` settings) hold only inside a real
transaction: on a connection in autocommit mode each statement is its own transaction, and a
``set_config(..., true)`` is gone before the next statement runs. So every block runs with
autocommit off, whatever a borrower of the pool left behind (a pooled connection once left in
autocommit by a benchmark script silently searched with pgvector's defaults: issue 21), and the
pool puts autocommit back off when a connection is returned.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from psycopg import Connection, sql
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from kioku.storage.shared.database import ALL_WORKSPACES
from kioku.storage.urls import libpq_url

__all__ = ["ALL_WORKSPACES", "SCOPE_SETTING", "PostgresDatabase", "scope_statement"]

SCOPE_SETTING = "kioku.workspace_id"


def scope_statement(
    workspace_id: str, settings: Mapping[str, str] | None = None
) -> tuple[sql.Composed, list[str]]:
    """One statement setting the scope, then ``settings``, for the current transaction only."""
    pairs = [(SCOPE_SETTING, workspace_id), *(settings or {}).items()]
    calls = sql.SQL(", ").join(sql.SQL("set_config(%s, %s, true)") for _ in pairs)
    return sql.SQL("SELECT {}").format(calls), [value for pair in pairs for value in pair]


def _in_transactions(conn: Connection[Any]) -> None:
    """The pool's reset: a connection goes back with autocommit off (see the module doc)."""
    if conn.autocommit:
        conn.autocommit = False


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
            reset=_in_transactions,
            open=True,
        )
        self._local = threading.local()

    @contextmanager
    def transaction(
        self,
        workspace_id: str,
        *,
        snapshot: bool = False,
        settings: Mapping[str, str] | None = None,
    ) -> Iterator[Connection[DictRow]]:
        """One transaction for ``workspace_id``: committed when the block ends, rolled back if
        it raises. Row-level security limits it to that workspace's rows. ``snapshot``: a
        read-only REPEATABLE READ transaction, whose statements all see the same data.
        ``settings``: more transaction-local settings (name -> value), set by the same
        statement as the scope (no extra round trip).

        Used for reads too: several statements in one block then see one snapshot's worth of
        committed work (READ COMMITTED per statement, as the SQLite read path is close enough).
        """
        joined = getattr(self._local, "session", None)
        if joined is not None and not snapshot:
            conn, scope = joined
            if scope != workspace_id:
                raise RuntimeError("a session works for one workspace")
            if settings:  # local to the session's transaction: they outlive this block
                conn.execute(*scope_statement(workspace_id, settings))
            yield conn  # part of the session's transaction: it commits or rolls back
            return
        with self.pool.connection() as conn:
            _in_transactions(conn)  # borrowed and changed behind the pool's back
            # is_local=true: the scope ends with the transaction, so a pooled connection
            # never carries one tenant's scope into the next borrower's work.
            if snapshot:
                # Must come first: every statement of the block then reads one snapshot.
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            conn.execute(*scope_statement(workspace_id, settings))
            yield conn

    @contextmanager
    def session(self, workspace_id: str) -> Iterator[Connection[DictRow]]:
        """One transaction for several store calls on this thread: each call's own
        ``transaction`` joins it, so they land together or not at all. Inside another
        session of this thread it joins that one (and leaves it open)."""
        joined = getattr(self._local, "session", None)
        if joined is not None:
            conn, scope = joined
            if scope != workspace_id:
                raise RuntimeError("a session works for one workspace")
            yield conn
            return
        with self.transaction(workspace_id) as conn:
            self._local.session = (conn, workspace_id)
            try:
                yield conn
            finally:
                self._local.session = None

    def close(self) -> None:
        self.pool.close()
