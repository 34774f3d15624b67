"""SQLite connections: one per thread for reads (WAL), writes serialized behind one lock."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


class SQLiteDatabase:
    """Owns the connections to one SQLite file."""

    def __init__(
        self, path: Path, *, before_commit: Callable[[sqlite3.Connection], None] | None = None
    ) -> None:
        self.path = path
        # Runs at the end of every write transaction, inside it (the store's index upkeep).
        self.before_commit = before_commit
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self.write_lock = threading.RLock()

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.open()
            self._local.conn = conn
        return conn

    def open(self, cache_kib: int = 65536) -> sqlite3.Connection:
        """A new connection (closed with the others by ``close``), with a page cache of at
        most ``cache_kib`` KiB: a connection of its own for work that should not grow a
        thread's cache (the lexical index's reads: ``lexical_sidecar.py``)."""
        conn = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
        with self._all_lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): commits on success, rolls back on error."""
        with self.write_lock:
            conn = self.connection()
            if getattr(self._local, "session", False):
                yield conn  # part of the session's transaction: it commits or rolls back
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                if self.before_commit is not None:
                    self.before_commit(conn)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def session(self) -> Iterator[sqlite3.Connection]:
        """One write transaction for several store calls on this thread: each call's own
        ``write`` joins it, so they land together or not at all."""
        with self.write() as conn:
            self._local.session = True
            try:
                yield conn
            finally:
                self._local.session = False

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot for several reads."""
        conn = self.connection()
        if conn.in_transaction:  # nested inside a write: reuse it
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close every connection this object opened, on every thread."""
        with self._all_lock:
            for conn in self._all:
                with suppress(sqlite3.ProgrammingError):
                    conn.close()
            self._all.clear()
        self._local = threading.local()
