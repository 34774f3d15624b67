"""Sleep's run log on SQLite: the memory writes of a ``SleepTransaction`` that keep the vector
cache in step (the rest, tokens included, is ``shared/sleep.py``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from kioku.storage.records import MemoryRow
from kioku.storage.shared.database import Database
from kioku.storage.shared.embeddings import bump_generation
from kioku.storage.shared.memories import Lexicon
from kioku.storage.shared.sleep import SleepSql
from kioku.storage.sleep import SleepStore
from kioku.storage.sqlite.codec import decode_vector
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.dialect import SQLiteTransaction
from kioku.storage.vector_index import VectorIndexCache


class _SQLiteSleepTransaction(SleepSql):
    def __init__(
        self,
        index: VectorIndexCache,
        sql: Database,
        lexicon: Lexicon,
        conn: sqlite3.Connection,
        workspace_id: str,
    ) -> None:
        super().__init__(sql, lexicon, SQLiteTransaction(conn), workspace_id)
        self.index = index
        self.conn = conn

    def set_memory(self, row: MemoryRow, values: dict[str, Any], tokens: str | None) -> None:
        seq = self._write_memory(row, values, tokens)
        superseded = values.get("superseded_by", row.superseded_by)
        searchable = row.embedding_status == "ready" and row.deleted_at is None
        if superseded == row.superseded_by or not searchable:
            return
        # The vector cache holds live, unsuperseded memories: keep it in step.
        generation = bump_generation(self.tx, self.workspace_id, row.context_id)
        if superseded is not None:
            self.index.apply(row.context_id, generation, removals=[row.id])
            return
        blob = self.conn.execute("SELECT embedding FROM memories WHERE seq = ?", (seq,)).fetchone()
        vector: np.ndarray = decode_vector(blob[0])
        self.index.apply(row.context_id, generation, upserts=[(row.id, vector)])

    def purge_memory(self, memory_id: str) -> None:
        row = self._delete_memory(memory_id)
        if row is None or row["embedding_status"] != "ready":
            return
        if row["deleted_at"] is None and row["superseded_by"] is None:
            generation = bump_generation(self.tx, self.workspace_id, row["context_id"])
            self.index.apply(row["context_id"], generation, removals=[memory_id])


class SQLiteSleepArea(SleepStore):
    """Mixed into ``SQLiteStore``: Sleep's log and its logged changes."""

    db: SQLiteDatabase
    sql: Database
    lexicon: Lexicon
    index: VectorIndexCache

    @contextmanager
    def sleep_transaction(self, workspace_id: str) -> Iterator[_SQLiteSleepTransaction]:
        with self.db.write() as conn:
            yield _SQLiteSleepTransaction(self.index, self.sql, self.lexicon, conn, workspace_id)
