"""Sleep's run log on SQLite: the transaction handle of ``kioku.storage.sleep``."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from kioku.storage.records import EdgeRow, MemoryRow, NewMemory
from kioku.storage.sleep import (
    EdgeHandle,
    SleepActionRow,
    SleepRunRow,
    SleepWrites,
    dumps,
    edges_on,
)
from kioku.storage.sqlite.codec import (
    MEMORY_COLUMNS,
    decode_required_time,
    decode_time,
    decode_vector,
    encode_optional_time,
    encode_time,
    memory_from_row,
)
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.graph import _SQLiteEdgeTransaction
from kioku.storage.sqlite.lexical import ensure_lexical_table
from kioku.storage.vector_index import VectorIndexCache

_RUN_COLUMNS = (
    "id, workspace_id, context_id, status, trigger, started_at, finished_at, rolled_back_at, "
    "summary, error"
)


class _VectorKeeper(Protocol):
    index: VectorIndexCache

    def _bump_generation(self, conn: sqlite3.Connection, context_id: str) -> int: ...


def _run_from_row(row: sqlite3.Row) -> SleepRunRow:
    return SleepRunRow(
        id=row["id"],
        workspace_id=row["workspace_id"],
        context_id=row["context_id"],
        status=row["status"],
        trigger=row["trigger"],
        started_at=decode_required_time(row["started_at"]),
        finished_at=decode_time(row["finished_at"]),
        rolled_back_at=decode_time(row["rolled_back_at"]),
        summary=json.loads(row["summary"]),
        error=row["error"],
    )


def _action_from_row(row: sqlite3.Row) -> SleepActionRow:
    return SleepActionRow(
        row["run_id"], row["seq"], row["phase"], row["kind"], row["target"],
        None if row["before"] is None else json.loads(row["before"]),
        None if row["after"] is None else json.loads(row["after"]),
        row["note"], decode_required_time(row["at"]),
    )  # fmt: skip


def _encode(column: str, value: Any) -> Any:
    if column in ("tags", "summary"):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, datetime):
        return encode_time(value)
    return value


class _SQLiteSleepTransaction:
    def __init__(self, store: _VectorKeeper, conn: sqlite3.Connection, workspace_id: str):
        self.store = store
        self.conn = conn
        self.workspace_id = workspace_id
        self._fts_table: str | None = None

    def lock_context(self, context_id: str) -> bool:
        # BEGIN IMMEDIATE has serialized every writer already.
        return (
            self.conn.execute(
                "SELECT 1 FROM contexts WHERE workspace_id = ? AND id = ?",
                (self.workspace_id, context_id),
            ).fetchone()
            is not None
        )

    def runs(self, context_id: str) -> list[SleepRunRow]:
        rows = self.conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM sleep_runs WHERE workspace_id = ? AND context_id = ? "
            "ORDER BY started_at, id",
            (self.workspace_id, context_id),
        ).fetchall()
        return [_run_from_row(row) for row in rows]

    def run(self, run_id: str) -> SleepRunRow | None:
        row = self.conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM sleep_runs WHERE workspace_id = ? AND id = ?",
            (self.workspace_id, run_id),
        ).fetchone()
        return None if row is None else _run_from_row(row)

    def insert_run(self, row: SleepRunRow) -> None:
        self.conn.execute(
            f"INSERT INTO sleep_runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.id, self.workspace_id, row.context_id, row.status, row.trigger,
                encode_time(row.started_at), encode_optional_time(row.finished_at),
                encode_optional_time(row.rolled_back_at), dumps(row.summary), row.error,
            ),
        )  # fmt: skip

    def update_run(self, run_id: str, values: dict[str, Any]) -> None:
        sets = ", ".join(f"{column} = ?" for column in values)
        self.conn.execute(
            f"UPDATE sleep_runs SET {sets} WHERE workspace_id = ? AND id = ?",
            (*(_encode(c, v) for c, v in values.items()), self.workspace_id, run_id),
        )

    def actions(self, run_id: str) -> list[SleepActionRow]:
        rows = self.conn.execute(
            "SELECT run_id, seq, phase, kind, target, before, after, note, at FROM sleep_actions "
            "WHERE workspace_id = ? AND run_id = ? ORDER BY seq",
            (self.workspace_id, run_id),
        ).fetchall()
        return [_action_from_row(row) for row in rows]

    def append(self, action: SleepActionRow) -> None:
        self.conn.execute(
            "INSERT INTO sleep_actions (workspace_id, run_id, seq, phase, kind, target, before, "
            "after, note, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self.workspace_id, action.run_id, action.seq, action.phase, action.kind,
                action.target, None if action.before is None else dumps(action.before),
                None if action.after is None else dumps(action.after), action.note,
                encode_time(action.at),
            ),
        )  # fmt: skip

    def memory(self, memory_id: str) -> MemoryRow | None:
        row = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace_id = ? AND id = ?",
            (self.workspace_id, memory_id),
        ).fetchone()
        return None if row is None else memory_from_row(row)

    def set_memory(self, row: MemoryRow, values: dict[str, Any], tokens: str | None) -> None:
        sets = ", ".join(f"{column} = ?" for column in values)
        seq = self.conn.execute(
            f"UPDATE memories SET {sets} WHERE workspace_id = ? AND id = ? RETURNING seq",
            (*(_encode(c, v) for c, v in values.items()), self.workspace_id, row.id),
        ).fetchone()[0]
        if tokens is not None:
            self.conn.execute(
                f"UPDATE {self._lexical_table()} SET tokens = ? WHERE rowid = ?", (tokens, seq)
            )
        superseded = values.get("superseded_by", row.superseded_by)
        searchable = row.embedding_status == "ready" and row.deleted_at is None
        if superseded == row.superseded_by or not searchable:
            return
        # The vector cache holds live, unsuperseded memories: keep it in step.
        generation = self.store._bump_generation(self.conn, row.context_id)
        if superseded is not None:
            self.store.index.apply(row.context_id, generation, removals=[row.id])
            return
        blob = self.conn.execute("SELECT embedding FROM memories WHERE seq = ?", (seq,)).fetchone()
        vector: np.ndarray = decode_vector(blob[0])
        self.store.index.apply(row.context_id, generation, upserts=[(row.id, vector)])

    def insert_memory(self, row: NewMemory) -> None:
        created = encode_time(row.created_at)
        cursor = self.conn.execute(
            "INSERT INTO memories (id, workspace_id, context_id, summary, content, type, tags, "
            "importance, delivery_mode, trigger_from, trigger_until, source_type, source_uri, "
            "trust_tier, created_at, updated_at, instruction_like, tainted) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.id, self.workspace_id, row.context_id, row.summary, row.content, row.type,
                json.dumps(row.tags, ensure_ascii=False), row.importance, row.delivery_mode,
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
        row = self.conn.execute(
            "DELETE FROM memories WHERE workspace_id = ? AND id = ? "
            "RETURNING context_id, embedding_status, deleted_at, superseded_by",
            (self.workspace_id, memory_id),
        ).fetchone()
        if row is not None and row[1] == "ready" and row[2] is None and row[3] is None:
            generation = self.store._bump_generation(self.conn, row[0])
            self.store.index.apply(row[0], generation, removals=[memory_id])

    def edges(self) -> EdgeHandle:
        return edges_on(_SQLiteEdgeTransaction(self.conn, self.workspace_id))

    def edge(self, source_id: str, target_id: str) -> EdgeRow | None:
        found = _SQLiteEdgeTransaction(self.conn, self.workspace_id).edges_of_pairs(
            [(source_id, target_id)]
        )
        return found.get((source_id, target_id))

    def logged(self, context_id: str, kind: str) -> list[SleepActionRow]:
        rows = self.conn.execute(
            "SELECT a.run_id, a.seq, a.phase, a.kind, a.target, a.before, a.after, a.note, a.at "
            "FROM sleep_actions a JOIN sleep_runs r ON r.workspace_id = a.workspace_id "
            "AND r.id = a.run_id WHERE a.workspace_id = ? AND r.context_id = ? "
            "AND r.status <> 'rolled_back' AND a.kind = ? "
            "ORDER BY r.started_at, r.id, a.seq",
            (self.workspace_id, context_id, kind),
        ).fetchall()
        return [_action_from_row(row) for row in rows]

    def candidates(self, context_id: str, limit: int) -> list[tuple[MemoryRow, np.ndarray]]:
        rows = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS}, embedding FROM memories WHERE workspace_id = ? "
            "AND context_id = ? AND deleted_at IS NULL AND superseded_by IS NULL "
            "AND embedding_status = 'ready' ORDER BY created_at DESC, id DESC LIMIT ?",
            (self.workspace_id, context_id, limit),
        ).fetchall()
        return [(memory_from_row(row), decode_vector(row["embedding"])) for row in rows]


class SQLiteSleepLane(SleepWrites):
    """Mixed into ``SQLiteStore``: Sleep's log and its logged changes."""

    db: SQLiteDatabase
    index: VectorIndexCache

    @contextmanager
    def sleep_transaction(self, workspace_id: str) -> Iterator[_SQLiteSleepTransaction]:
        with self.db.write() as conn:
            yield _SQLiteSleepTransaction(self, conn, workspace_id)  # type: ignore[arg-type]
