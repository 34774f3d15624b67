"""Moving a workspace: dump every row from one snapshot, restore rows as they were.

Both run in one transaction scoped to the workspace; the dump streams (PostgreSQL: a
server-side cursor), the restore inserts in batches (memories through the backend's
``Lexicon``, which stores their tokens). A vector travels in its stored form: the dialect's
``vector``, ``read_vector`` and ``write_vector``. The records and their order:
``storage/transfer.py``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from datetime import datetime
from itertools import groupby, islice
from typing import Any, Protocol

from kioku.errors import ConflictError
from kioku.storage.records import ConnectorRow, ContextRow, EdgeRow, FeedbackRow, StateRow
from kioku.storage.shared.connectors import connector_from_row
from kioku.storage.shared.database import (
    ALL_WORKSPACES,
    Database,
    Dialect,
    Transaction,
    record,
    select_among,
)
from kioku.storage.shared.embeddings import bump_generation
from kioku.storage.shared.feedback import feedback_from_row
from kioku.storage.shared.memories import Lexicon
from kioku.storage.shared.rows import (
    MEMORY_COLUMNS,
    context_from_row,
    encode_column,
    memory_from_row,
    memory_insert,
)
from kioku.storage.shared.state import state_from_row
from kioku.storage.transfer import IdKind, MemoryDump, TransferRow

_BATCH = 500
_ID_TABLES: dict[IdKind, str] = {
    "connector": "connectors",
    "context": "contexts",
    "memory": "memories",
    "feedback": "retrieval_feedback",
}
_TABLES: dict[type, tuple[str, tuple[str, ...]]] = {
    ConnectorRow: ("connectors", ("id", "workspace_id", "kind", "name", "config", "created_at",
                                  "updated_at")),
    ContextRow: ("contexts", ("id", "workspace_id", "name", "description", "trust_tier",
                              "sleep_mode", "search_config", "embedding_model", "embedding_dim",
                              "created_at", "updated_at", "connector_id")),
    EdgeRow: ("memory_edges", ("workspace_id", "context_id", "source_id", "target_id", "weight",
                               "origin", "trust_tier", "created_at", "updated_at")),
    # seq is assigned anew: events are restored in their original order, so it stays ordered.
    FeedbackRow: ("retrieval_feedback", ("id", "workspace_id", "context_id", "memory_id",
                                         "helpful", "query", "note", "actor", "channel",
                                         "created_at")),
    StateRow: ("agent_states", ("workspace_id", "context_id", "key", "value", "expires_at",
                                "created_at", "updated_at")),
}  # fmt: skip
"""Each restored record's table and columns (its ``workspace_id`` is the target's)."""
_HOLDS = (
    "SELECT 1 AS held WHERE EXISTS (SELECT 1 FROM memories WHERE workspace_id = %s AND "
    "context_id = %s) OR EXISTS (SELECT 1 FROM agent_states WHERE workspace_id = %s AND "
    "context_id = %s)"
)


def _value(d: Dialect, workspace_id: str, row: Any, column: str) -> Any:
    if column == "workspace_id":
        return workspace_id
    value = getattr(row, column)
    return d.json(value, sort_keys=True) if column == "config" else encode_column(d, column, value)


def _insert(d: Dialect, table: str, columns: Sequence[str]) -> str:
    marks = [d.json_param if (table, c) == ("agent_states", "value") else "%s" for c in columns]
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(marks)})"


class TransferStore(Protocol):
    """Workspace transfer primitives (``kioku export`` / ``kioku import``), written once."""

    sql: Database
    lexicon: Lexicon

    def _vectors_changed(self, context_ids: Sequence[str]) -> None:
        """A vector cache of these contexts may be stale: drop it (the backend defines it)."""

    def dump_workspace(self, workspace_id: str, now: datetime) -> Iterator[TransferRow]:
        """Every row of a workspace, streamed in export order: contexts by id, memories by
        (context, created_at, id) with their vectors (deleted and superseded ones too),
        feedback by sequence, live state keys by (context, key).

        Consume it before other store calls on the same thread (it holds a read transaction).
        """
        d, b = self.sql.dialect, self.sql.dialect.binary
        ws = (workspace_id,)
        # One snapshot: a write landing during the export is wholly in the file or out of it.
        with self.sql.snapshot(workspace_id) as tx:
            for row in tx.stream(
                "SELECT id, workspace_id, kind, name, config, created_at, updated_at "
                f"FROM connectors WHERE workspace_id = %s ORDER BY id{b}",
                ws,
            ):
                yield connector_from_row(d, row)
            for row in tx.stream(
                f"SELECT * FROM contexts WHERE workspace_id = %s ORDER BY id{b}", ws
            ):
                yield context_from_row(d, row)
            for row in tx.stream(
                f"SELECT {MEMORY_COLUMNS}, embedding_model, {d.vector} "
                f"FROM memories WHERE workspace_id = %s "
                f"ORDER BY context_id{b}, created_at, id{b}",
                ws,
            ):
                vector = None if row["vector"] is None else d.read_vector(row["vector"])
                yield MemoryDump(memory_from_row(d, row), row["embedding_model"], vector)
            for row in tx.stream(
                "SELECT workspace_id, context_id, source_id, target_id, weight, origin, "
                "trust_tier, created_at, updated_at FROM memory_edges WHERE workspace_id = %s "
                f"ORDER BY context_id{b}, source_id{b}, target_id{b}",
                ws,
            ):
                yield record(d, EdgeRow, row, times=("created_at", "updated_at"))
            for row in tx.stream(
                "SELECT id, seq, workspace_id, context_id, memory_id, helpful, query, note, "
                "actor, channel, created_at FROM retrieval_feedback WHERE workspace_id = %s "
                "ORDER BY seq",
                ws,
            ):
                yield feedback_from_row(d, row)
            for row in tx.stream(
                f"SELECT context_id, key, {d.json_text('value')}, expires_at, created_at, "
                "updated_at FROM agent_states WHERE workspace_id = %s "
                f"AND (expires_at IS NULL OR expires_at > %s) ORDER BY context_id{b}, key{b}",
                (workspace_id, d.time(now)),
            ):
                yield state_from_row(d, row)

    def restore_workspace(
        self, workspace_id: str, rows: Iterable[TransferRow], adopt: Collection[str] = ()
    ) -> None:
        """Insert dumped rows as they were (ids, timestamps, counters, vectors), in one
        transaction: all or nothing. Rows come in dependency order; vector caches are
        invalidated for every restored context.

        ``adopt``: ids of contexts the workspace already has, empty (``held_contexts``), whose
        context row is updated to the dumped one (all but its id and name) rather than
        inserted: keys and audit lines naming the id keep naming it. One that has gained a
        memory or a state key since it was checked refuses the whole restore."""
        d = self.sql.dialect
        contexts: list[str] = []
        try:
            with self.sql.write(workspace_id) as tx:
                if held := _held(tx, workspace_id, adopt):
                    raise ConflictError(
                        f"context {min(held)} took a memory or a state key while the import "
                        "ran; nothing was written (run the import again to see why it refuses)"
                    )
                for kind, group in groupby(rows, type):
                    for batch in _batches(group):
                        if kind is MemoryDump:
                            values = [self._dump_values(workspace_id, dump) for dump in batch]
                            self.lexicon.insert(tx, workspace_id, values)
                            continue
                        table, columns = _TABLES[kind]
                        if kind is ContextRow:
                            contexts += [row.id for row in batch]
                            _update_adopted(tx, d, workspace_id, batch, adopt)
                            batch = [row for row in batch if row.id not in adopt]
                        tx.executemany(
                            _insert(d, table, columns),
                            [[_value(d, workspace_id, row, c) for c in columns] for row in batch],
                        )
                for context_id in contexts:
                    bump_generation(tx, workspace_id, context_id)
        except Exception as exc:
            if not d.integrity_error(exc):
                raise
            raise ConflictError(f"import refused, nothing was written: {exc}") from exc
        self._vectors_changed(contexts)

    def held_contexts(self, workspace_id: str, context_ids: Collection[str]) -> set[str]:
        """Which of these contexts hold anything an import could collide with: a memory (live,
        forgotten or superseded) or a state key (even expired). The others are empty."""
        with self.sql.read(workspace_id) as tx:
            return _held(tx, workspace_id, context_ids)

    def existing_ids(self, kind: IdKind, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` are already taken in the whole database (any workspace)."""
        # Ids are kept on import, and they must stay unique across tenants: a lookup over all.
        query = f"SELECT id FROM {_ID_TABLES[kind]} WHERE {{among}}"
        found: set[str] = set()
        with self.sql.read(ALL_WORKSPACES) as tx:
            for start in range(0, len(ids), 10_000):
                chunk = ids[start : start + 10_000]
                found.update(
                    row["id"] for row in select_among(tx, self.sql.dialect, query, "id", chunk)
                )
        return found

    def _dump_values(self, workspace_id: str, dump: MemoryDump) -> tuple[dict[str, Any], str]:
        """A dumped memory's INSERT (every column, its vector too), and its tokens."""
        d = self.sql.dialect
        vector = None if dump.vector is None else d.write_vector(dump.vector)
        values = memory_insert(d, workspace_id, dump.row)
        values.update(embedding=vector, embedding_model=dump.embedding_model)
        return values, dump.lexical_tokens


def _held(tx: Transaction, workspace_id: str, context_ids: Collection[str]) -> set[str]:
    held = set()
    for context_id in context_ids:
        scope = (workspace_id, context_id)
        if tx.execute(_HOLDS, (*scope, *scope)).fetchone() is not None:
            held.add(context_id)
    return held


def _update_adopted(
    tx: Transaction, d: Dialect, workspace_id: str, batch: list[ContextRow], adopt: Collection[str]
) -> None:
    """Give each adopted context the dumped row's columns (its id and name stay)."""
    columns = [c for c in _TABLES[ContextRow][1] if c not in ("id", "workspace_id", "name")]
    sets = ", ".join(f"{column} = %s" for column in columns)
    for row in batch:
        if row.id in adopt:
            values = [_value(d, workspace_id, row, c) for c in columns]
            tx.execute(
                f"UPDATE contexts SET {sets} WHERE workspace_id = %s AND id = %s",
                (*values, workspace_id, row.id),
            )


def _batches(rows: Iterator[TransferRow]) -> Iterator[list[Any]]:
    while batch := list(islice(rows, _BATCH)):
        yield batch
