"""Where SQLite keeps a memory's tokens: the workspace's FTS5 table (``rowid = seq``)."""

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
        statement = (
            f"INSERT INTO memories ({', '.join(columns)}) "
            f"VALUES ({', '.join('%s' for _ in columns)})"
        )
        for values, tokens in rows:
            cursor = conn.execute(native(statement), [values[column] for column in columns])
            conn.execute(
                f"INSERT INTO {table} (rowid, tokens) VALUES (?, ?)", (cursor.lastrowid, tokens)
            )

    def update(self, tx: Transaction, workspace_id: str, seq: int, tokens: str) -> None:
        conn = _connection(tx)
        conn.execute(
            f"UPDATE {ensure_lexical_table(conn, workspace_id)} SET tokens = ? WHERE rowid = ?",
            (tokens, seq),
        )
