"""Sleep's run log in SQL, written once: the part of ``sleep_log.SleepTransaction`` both engines
run alike (a memory's tokens go through the backend's ``Lexicon``, as every write's do). A
backend subclasses ``SleepSql`` with what keeps its vector index in step: ``set_memory`` and
``purge_memory``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from kioku.storage.records import EdgeRow, MemoryRow, NewMemory
from kioku.storage.shared.database import Database, Transaction, record
from kioku.storage.shared.graph import EdgeSql
from kioku.storage.shared.memories import Lexicon
from kioku.storage.shared.rows import MEMORY_COLUMNS, memory_from_row, memory_insert
from kioku.storage.sleep_log import MEMORY_FIELDS, SleepActionRow, SleepRunRow

_RUN_COLUMNS = (
    "id, workspace_id, context_id, status, trigger, started_at, finished_at, rolled_back_at, "
    "summary, error"
)
_RUN_FIELDS = ("status", "finished_at", "rolled_back_at", "summary", "error")
_ACTION_COLUMNS = "run_id, seq, phase, kind, target, before, after, note, at"
_JSON_COLUMNS = ("tags", "summary", "before", "after")


class SleepSql:
    """The shared half of a backend's ``SleepTransaction`` (one open write transaction)."""

    def __init__(self, sql: Database, lexicon: Lexicon, tx: Transaction, workspace_id: str) -> None:
        self.sql = sql
        self.d = sql.dialect
        self.lexicon = lexicon
        self.tx = tx
        self.workspace_id = workspace_id

    def _run(self, row: Any) -> SleepRunRow:
        return record(
            self.d, SleepRunRow, row, times=("started_at",),
            optional_times=("finished_at", "rolled_back_at"), json=("summary",),
        )  # fmt: skip

    def _action(self, row: Any) -> SleepActionRow:
        return record(self.d, SleepActionRow, row, times=("at",), json=("before", "after"))

    def _value(self, column: str, value: Any) -> Any:
        """A run's or a memory's column value as the engine stores it."""
        if column in _JSON_COLUMNS:  # the log's JSON is canonical: sorted keys
            return None if value is None else self.d.json(value, sort_keys=True)
        return self.d.time(value) if isinstance(value, datetime) else value

    def _sets(self, values: dict[str, Any]) -> tuple[list[str], list[Any]]:
        return (
            [f"{column} = %s" for column in values],
            [self._value(column, value) for column, value in values.items()],
        )

    def lock_context(self, context_id: str) -> bool:
        # SQLite: BEGIN IMMEDIATE has serialized every writer already.
        row = self.tx.execute(
            "SELECT 1 FROM contexts WHERE workspace_id = %s AND id = %s" + self.d.for_no_key_update,
            (self.workspace_id, context_id),
        ).fetchone()
        return row is not None

    def runs(self, context_id: str) -> list[SleepRunRow]:
        rows = self.tx.execute(
            f"SELECT {_RUN_COLUMNS} FROM sleep_runs WHERE workspace_id = %s AND context_id = %s "
            f"ORDER BY started_at, id{self.d.binary}",
            (self.workspace_id, context_id),
        ).fetchall()
        return [self._run(row) for row in rows]

    def run(self, run_id: str) -> SleepRunRow | None:
        row = self.tx.execute(
            f"SELECT {_RUN_COLUMNS} FROM sleep_runs WHERE workspace_id = %s AND id = %s",
            (self.workspace_id, run_id),
        ).fetchone()
        return None if row is None else self._run(row)

    def insert_run(self, row: SleepRunRow) -> None:
        self._insert("sleep_runs", {**vars(row), "workspace_id": self.workspace_id})

    def update_run(self, run_id: str, values: dict[str, Any]) -> None:
        assert set(values) <= set(_RUN_FIELDS), values
        sets, params = self._sets(values)
        self.tx.execute(
            f"UPDATE sleep_runs SET {', '.join(sets)} WHERE workspace_id = %s AND id = %s",
            (*params, self.workspace_id, run_id),
        )

    def actions(self, run_id: str) -> list[SleepActionRow]:
        rows = self.tx.execute(
            f"SELECT {_ACTION_COLUMNS} FROM sleep_actions "
            "WHERE workspace_id = %s AND run_id = %s ORDER BY seq",
            (self.workspace_id, run_id),
        ).fetchall()
        return [self._action(row) for row in rows]

    def append(self, action: SleepActionRow) -> None:
        self._insert("sleep_actions", {"workspace_id": self.workspace_id, **vars(action)})

    def _insert(self, table: str, values: dict[str, Any]) -> None:
        self.tx.execute(
            f"INSERT INTO {table} ({', '.join(values)}) VALUES ({', '.join('%s' for _ in values)})",
            [self._value(column, value) for column, value in values.items()],
        )

    def memory(self, memory_id: str) -> MemoryRow | None:
        row = self.tx.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace_id = %s AND id = %s"
            + self.d.for_no_key_update,
            (self.workspace_id, memory_id),
        ).fetchone()
        return None if row is None else memory_from_row(self.d, row)

    def _write_memory(self, row: MemoryRow, values: dict[str, Any], tokens: str | None) -> int:
        """UPDATE ``values`` (``MEMORY_FIELDS`` only) on a memory and, if given, its new
        lexical ``tokens`` (where the engine's ``Lexicon`` keeps them); returns its ``seq``."""
        assert set(values) <= set(MEMORY_FIELDS), values
        sets, params = self._sets(values)
        if tokens is not None:
            token_sets, token_params = self.lexicon.sets(tokens)
            sets, params = [*sets, *token_sets], [*params, *token_params]
        seq = self.tx.execute(
            f"UPDATE memories SET {', '.join(sets)} "
            "WHERE workspace_id = %s AND id = %s RETURNING seq",
            (*params, self.workspace_id, row.id),
        ).fetchone()["seq"]
        if tokens is not None:
            self.lexicon.update(self.tx, self.workspace_id, seq, tokens)
        return seq

    def insert_memory(self, row: NewMemory) -> None:
        insert = memory_insert(self.d, self.workspace_id, row)
        self.lexicon.insert(self.tx, self.workspace_id, [(insert, row.lexical_tokens)])

    def _delete_memory(self, memory_id: str) -> Any:
        """Delete a memory: its row's context_id, embedding_status, deleted_at and
        superseded_by (``None``: no such memory)."""
        return self.tx.execute(
            "DELETE FROM memories WHERE workspace_id = %s AND id = %s "
            "RETURNING context_id, embedding_status, deleted_at, superseded_by",
            (self.workspace_id, memory_id),
        ).fetchone()

    def edges(self) -> EdgeSql:
        return EdgeSql(self.tx, self.d, self.workspace_id)

    def edge(self, source_id: str, target_id: str) -> EdgeRow | None:
        found = EdgeSql(self.tx, self.d, self.workspace_id).edges_of_pairs([(source_id, target_id)])
        return found.get((source_id, target_id))

    def logged(self, context_id: str, kind: str) -> list[SleepActionRow]:
        columns = ", ".join(f"a.{column}" for column in _ACTION_COLUMNS.split(", "))
        rows = self.tx.execute(
            f"SELECT {columns} FROM sleep_actions a JOIN sleep_runs r "
            "ON r.workspace_id = a.workspace_id AND r.id = a.run_id "
            "WHERE a.workspace_id = %s AND r.context_id = %s "
            "AND r.status <> 'rolled_back' AND a.kind = %s "
            f"ORDER BY r.started_at, r.id{self.d.binary}, a.seq",
            (self.workspace_id, context_id, kind),
        ).fetchall()
        return [self._action(row) for row in rows]

    def candidates(self, context_id: str, limit: int) -> list[tuple[MemoryRow, np.ndarray]]:
        d = self.d
        rows = self.tx.execute(
            f"SELECT {MEMORY_COLUMNS}, {d.vector} FROM memories "
            "WHERE workspace_id = %s AND context_id = %s AND deleted_at IS NULL "
            "AND superseded_by IS NULL AND embedding_status = 'ready' "
            f"ORDER BY created_at DESC, id{d.binary} DESC LIMIT %s",
            (self.workspace_id, context_id, limit),
        ).fetchall()
        return [(memory_from_row(self.d, row), d.read_vector(row["vector"])) for row in rows]
