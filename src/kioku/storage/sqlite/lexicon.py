"""Where SQLite keeps a memory's tokens: the workspace's FTS5 table (``rowid = seq``); a
change to them is stamped on the memory for the lexical index (migration 0020)."""

from __future__ import annotations

import sqlite3

from kioku.storage.shared.database import Transaction
from kioku.storage.shared.memories import Lexicon, MemoryBatch
from kioku.storage.sqlite.dialect import SQLiteTransaction, native
from kioku.storage.sqlite.lexical import ensure_lexical_table


def _connection(tx: Transaction) -> sqlite3.Connection:
    assert isinstance(tx, SQLiteTransaction)
    return tx.conn


class SQLiteLexicon(Lexicon):
    """``shared.memories.Lexicon`` on SQLite (see sqlite/lexical.py): beside the row."""

    def insert(self, tx: Transaction, workspace_id: str, rows: MemoryBatch) -> None:
        if not rows:
            return
        conn = _connection(tx)
        table = ensure_lexical_table(conn, workspace_id)
        columns = list(rows[0][0])
        # One stamp for the batch (migration 0020: this is the one place SQLite inserts
        # memories, and an insert trigger would cost a bulk load a third of its speed).
        change = _tick(conn)
        statement = (
            f"INSERT INTO memories ({', '.join(columns)}, lexical_change) "
            f"VALUES ({', '.join('%s' for _ in columns)}, %s)"
        )
        for values, tokens in rows:
            cursor = conn.execute(
                native(statement), [*(values[column] for column in columns), change]
            )
            conn.execute(
                f"INSERT INTO {table} (rowid, tokens) VALUES (?, ?)", (cursor.lastrowid, tokens)
            )

    def update(self, tx: Transaction, workspace_id: str, seq: int, tokens: str) -> None:
        conn = _connection(tx)
        conn.execute(
            f"UPDATE {ensure_lexical_table(conn, workspace_id)} SET tokens = ? WHERE rowid = ?",
            (tokens, seq),
        )
        # The FTS5 table has no trigger (migration 0020): the lexical index's sync must see
        # the new tokens, so the change is stamped here, in the same transaction.
        conn.execute("UPDATE memories SET lexical_change = ? WHERE seq = ?", (_tick(conn), seq))


def _tick(conn: sqlite3.Connection) -> int:
    """Move the lexical clock on (migration 0020), inside the writing transaction: the stamp
    of what this transaction changes."""
    return conn.execute(
        "UPDATE lexical_clock SET value = value + 1 WHERE id = 1 RETURNING value"
    ).fetchone()[0]
