"""Sleep's run log on SQLite: the memory writes of a ``SleepTransaction`` (the rest is
``shared/sleep.py``), which keep the workspace's FTS5 table and the vector cache in step."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from kioku.storage.records import MemoryRow, NewMemory
from kioku.storage.shared.database import Database
from kioku.storage.shared.embeddings import bump_generation
from kioku.storage.shared.sleep import SleepSql
from kioku.storage.sleep import SleepStore
from kioku.storage.sqlite.codec import decode_vector, encode_optional_time, encode_time
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.dialect import SQLiteTransaction
from kioku.storage.sqlite.lexical import ensure_lexical_table
from kioku.storage.vector_index import VectorIndexCache


class _SQLiteSleepTransaction(SleepSql):
    def __init__(self, index: VectorIndexCache, sql: Database, conn: sqlite3.Connection, ws: str):
        super().__init__(sql, SQLiteTransaction(conn), ws)
        self.index = index
        self.conn = conn
        self._fts_table: str | None = None

    def set_memory(self, row: MemoryRow, values: dict[str, Any], tokens: str | None) -> None:
        seq = self._write_memory(row, values, returning=" RETURNING seq").fetchone()[0]
        if tokens is not None:
            self.conn.execute(
                f"UPDATE {self._lexical_table()} SET tokens = ? WHERE rowid = ?", (tokens, seq)
            )
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

    def insert_memory(self, row: NewMemory) -> None:
        created = encode_time(row.created_at)
        cursor = self.conn.execute(
            "INSERT INTO memories (id, workspace_id, context_id, summary, content, type, tags, "
            "importance, delivery_mode, trigger_from, trigger_until, source_type, source_uri, "
            "trust_tier, created_at, updated_at, instruction_like, tainted) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.id, self.workspace_id, row.context_id, row.summary, row.content, row.type,
                self.d.json(row.tags), row.importance, row.delivery_mode,
                encode_optional_time(row.trigger_from), encode_optional_time(row.trigger_until),
                row.source_type, row.source_uri, row.trust_tier, created, created,
                None if row.instruction_like is None else int(row.instruction_like),
                int(row.tainted),
            ),
        )  # fmt: skip
        self.conn.execute(
            f"INSERT INTO {self._lexical_table()} (rowid, tokens) VALUES (?, ?)",
            (cursor.lastrowid, row.lexical_tokens),
        )

    def _lexical_table(self) -> str:
        """The workspace's FTS5 table, made sure of once per transaction."""
        if self._fts_table is None:
            self._fts_table = ensure_lexical_table(self.conn, self.workspace_id)
        return self._fts_table

    def purge_memory(self, memory_id: str) -> None:
        row = self._delete_memory(memory_id)
        if row is None or row["embedding_status"] != "ready":
            return
        if row["deleted_at"] is None and row["superseded_by"] is None:
            generation = bump_generation(self.tx, self.workspace_id, row["context_id"])
            self.index.apply(row["context_id"], generation, removals=[memory_id])


class SQLiteSleepLane(SleepStore):
    """Mixed into ``SQLiteStore``: Sleep's log and its logged changes."""

    db: SQLiteDatabase
    sql: Database
    index: VectorIndexCache

    @contextmanager
    def sleep_transaction(self, workspace_id: str) -> Iterator[_SQLiteSleepTransaction]:
        with self.db.write() as conn:
            yield _SQLiteSleepTransaction(self.index, self.sql, conn, workspace_id)
