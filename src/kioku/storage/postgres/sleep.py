"""Sleep's run log on PostgreSQL: the transaction handle of ``kioku.storage.sleep``.

Every Sleep transaction takes the workspace's graph lock first (the one graph writes take),
so Sleep and concurrent Hebbian updates always lock in the same order: graph, then rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, LiteralString, cast

import numpy as np
from psycopg import Connection
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from kioku.storage.postgres.codec import MEMORY_COLUMNS, encode_tokens, memory_from_row
from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.postgres.graph import _GRAPH_LOCK, _PostgresEdgeTransaction
from kioku.storage.postgres.transfer import _decode_vector
from kioku.storage.records import EdgeRow, MemoryRow, NewMemory
from kioku.storage.sleep import (
    MEMORY_FIELDS,
    EdgeHandle,
    SleepActionRow,
    SleepRunRow,
    SleepWrites,
    edges_on,
)

_RUN_COLUMNS = (
    "id, workspace_id, context_id, status, trigger, started_at, finished_at, rolled_back_at, "
    "summary, error"
)
_RUN_FIELDS = ("status", "finished_at", "rolled_back_at", "summary", "error")


def _encode(column: str, value: Any) -> Any:
    return Jsonb(value) if column in ("tags", "summary") else value


class _PostgresSleepTransaction:
    def __init__(self, conn: Connection[DictRow], workspace_id: str) -> None:
        self.conn = conn
        self.workspace_id = workspace_id

    def lock_context(self, context_id: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM contexts WHERE workspace_id = %s AND id = %s FOR NO KEY UPDATE",
            (self.workspace_id, context_id),
        ).fetchone()
        return row is not None

    def runs(self, context_id: str) -> list[SleepRunRow]:
        rows = self.conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM sleep_runs WHERE workspace_id = %s AND context_id = %s "
            'ORDER BY started_at, id COLLATE "C"',
            (self.workspace_id, context_id),
        ).fetchall()
        return [SleepRunRow(**row) for row in rows]

    def run(self, run_id: str) -> SleepRunRow | None:
        row = self.conn.execute(
            f"SELECT {_RUN_COLUMNS} FROM sleep_runs WHERE workspace_id = %s AND id = %s",
            (self.workspace_id, run_id),
        ).fetchone()
        return None if row is None else SleepRunRow(**row)

    def insert_run(self, row: SleepRunRow) -> None:
        self.conn.execute(
            f"INSERT INTO sleep_runs ({_RUN_COLUMNS}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                row.id, self.workspace_id, row.context_id, row.status, row.trigger,
                row.started_at, row.finished_at, row.rolled_back_at, Jsonb(row.summary),
                row.error,
            ),
        )  # fmt: skip

    def update_run(self, run_id: str, values: dict[str, Any]) -> None:
        assert set(values) <= set(_RUN_FIELDS), values
        sets = ", ".join(f"{column} = %s" for column in values)
        self.conn.execute(
            cast(
                LiteralString, f"UPDATE sleep_runs SET {sets} WHERE workspace_id = %s AND id = %s"
            ),
            (*(_encode(c, v) for c, v in values.items()), self.workspace_id, run_id),
        )

    def actions(self, run_id: str) -> list[SleepActionRow]:
        rows = self.conn.execute(
            "SELECT run_id, seq, phase, kind, target, before, after, note, at FROM sleep_actions "
            "WHERE workspace_id = %s AND run_id = %s ORDER BY seq",
            (self.workspace_id, run_id),
        ).fetchall()
        return [SleepActionRow(**row) for row in rows]

    def append(self, action: SleepActionRow) -> None:
        self.conn.execute(
            "INSERT INTO sleep_actions (workspace_id, run_id, seq, phase, kind, target, before, "
            "after, note, at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                self.workspace_id, action.run_id, action.seq, action.phase, action.kind,
                action.target, None if action.before is None else Jsonb(action.before),
                None if action.after is None else Jsonb(action.after), action.note, action.at,
            ),
        )  # fmt: skip

    def memory(self, memory_id: str) -> MemoryRow | None:
        row = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace_id = %s AND id = %s "
            "FOR NO KEY UPDATE",
            (self.workspace_id, memory_id),
        ).fetchone()
        return None if row is None else memory_from_row(row)

    def set_memory(self, row: MemoryRow, values: dict[str, Any], tokens: str | None) -> None:
        assert set(values) <= set(MEMORY_FIELDS), values
        sets = [f"{column} = %s" for column in values]
        params = [_encode(c, v) for c, v in values.items()]
        if tokens is not None:
            sets += ["lexical_tokens = %s::tsvector", "lexical_length = %s"]
            params += list(encode_tokens(tokens))
        self.conn.execute(
            cast(
                LiteralString,
                f"UPDATE memories SET {', '.join(sets)} WHERE workspace_id = %s AND id = %s",
            ),
            (*params, self.workspace_id, row.id),
        )
        superseded = values.get("superseded_by", row.superseded_by)
        if superseded != row.superseded_by and row.embedding_status == "ready":
            self._bump_generation(row.context_id)

    def _bump_generation(self, context_id: str) -> None:
        self.conn.execute(
            "UPDATE contexts SET vector_generation = vector_generation + 1 "
            "WHERE workspace_id = %s AND id = %s",
            (self.workspace_id, context_id),
        )

    def insert_memory(self, row: NewMemory) -> None:
        tokens, length = encode_tokens(row.lexical_tokens)
        self.conn.execute(
            "INSERT INTO memories (id, workspace_id, context_id, summary, content, type, "
            "tags, importance, delivery_mode, trigger_from, trigger_until, source_type, "
            "source_uri, trust_tier, created_at, updated_at, instruction_like, "
            "lexical_tokens, lexical_length, tainted) VALUES "
            "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "%s::tsvector, %s, %s)",
            (
                row.id, self.workspace_id, row.context_id, row.summary, row.content, row.type,
                Jsonb(row.tags), row.importance, row.delivery_mode, row.trigger_from,
                row.trigger_until, row.source_type, row.source_uri, row.trust_tier,
                row.created_at, row.created_at, row.instruction_like, tokens, length,
                row.tainted,
            ),
        )  # fmt: skip

    def purge_memory(self, memory_id: str) -> None:
        row = self.conn.execute(
            "DELETE FROM memories WHERE workspace_id = %s AND id = %s "
            "RETURNING context_id, embedding_status, deleted_at",
            (self.workspace_id, memory_id),
        ).fetchone()
        if row is not None and row["embedding_status"] == "ready" and row["deleted_at"] is None:
            self._bump_generation(row["context_id"])

    def edges(self) -> EdgeHandle:
        return edges_on(_PostgresEdgeTransaction(self.conn, self.workspace_id))

    def edge(self, source_id: str, target_id: str) -> EdgeRow | None:
        found = _PostgresEdgeTransaction(self.conn, self.workspace_id).edges_of_pairs(
            [(source_id, target_id)]
        )
        return found.get((source_id, target_id))

    def logged(self, context_id: str, kind: str) -> list[SleepActionRow]:
        rows = self.conn.execute(
            "SELECT a.run_id, a.seq, a.phase, a.kind, a.target, a.before, a.after, a.note, a.at "
            "FROM sleep_actions a JOIN sleep_runs r ON r.workspace_id = a.workspace_id "
            "AND r.id = a.run_id WHERE a.workspace_id = %s AND r.context_id = %s "
            "AND r.status <> 'rolled_back' AND a.kind = %s "
            'ORDER BY r.started_at, r.id COLLATE "C", a.seq',
            (self.workspace_id, context_id, kind),
        ).fetchall()
        return [SleepActionRow(**row) for row in rows]

    def candidates(self, context_id: str, limit: int) -> list[tuple[MemoryRow, np.ndarray]]:
        rows = self.conn.execute(
            f"SELECT {MEMORY_COLUMNS}, vector_send(embedding) AS vector FROM memories "
            "WHERE workspace_id = %s AND context_id = %s AND deleted_at IS NULL "
            "AND superseded_by IS NULL AND embedding_status = 'ready' "
            'ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT %s',
            (self.workspace_id, context_id, limit),
        ).fetchall()
        return [(memory_from_row(row), _decode_vector(row["vector"])) for row in rows]


class PostgresSleepLane(SleepWrites):
    """Mixed into ``PostgresStore``: Sleep's log and its logged changes."""

    db: PostgresDatabase

    @contextmanager
    def sleep_transaction(self, workspace_id: str) -> Iterator[_PostgresSleepTransaction]:
        with self.db.transaction(workspace_id) as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_GRAPH_LOCK, workspace_id)
            )
            yield _PostgresSleepTransaction(conn, workspace_id)
