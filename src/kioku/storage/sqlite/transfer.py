"""Moving a workspace on SQLite: dump every row from one snapshot, restore rows as they were.

The vectors' source of truth is ``memories.embedding``; the file cache beside the database is
keyed by context and ``vector_generation``. A restore bumps the generation of every context it
writes and drops their cache files, so recall rebuilds the index from the restored rows.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from kioku.errors import ConflictError
from kioku.storage.records import ConnectorRow, ContextRow, EdgeRow, FeedbackRow, StateRow
from kioku.storage.shared.connectors import connector_from_row
from kioku.storage.shared.feedback import feedback_from_row
from kioku.storage.shared.graph import edge_from_row
from kioku.storage.shared.state import state_from_row
from kioku.storage.sqlite.codec import (
    MEMORY_COLUMNS,
    context_from_row,
    decode_vector,
    encode_optional_time,
    encode_time,
    encode_vector,
    memory_from_row,
)
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.dialect import SQLiteDialect
from kioku.storage.sqlite.filters import chunked, placeholders
from kioku.storage.sqlite.lexical import ensure_lexical_table
from kioku.storage.transfer import IdKind, MemoryDump, TransferRow
from kioku.storage.vector_index import VectorIndexCache

_DIALECT = SQLiteDialect()
_ID_TABLES: dict[IdKind, str] = {
    "connector": "connectors",
    "context": "contexts",
    "memory": "memories",
    "feedback": "retrieval_feedback",
}


class SQLiteTransferLane:
    """Mixed into ``SQLiteStore``: ``dump_workspace``, ``restore_workspace``, ``existing_ids``."""

    db: SQLiteDatabase
    index: VectorIndexCache

    def dump_workspace(self, workspace_id: str, now: datetime) -> Iterator[TransferRow]:
        with self.db.read() as conn:  # one snapshot: a concurrent write is wholly in or out
            for row in conn.execute(
                "SELECT * FROM connectors WHERE workspace_id = ? ORDER BY id", (workspace_id,)
            ):
                yield connector_from_row(_DIALECT, row)
            for row in conn.execute(
                "SELECT * FROM contexts WHERE workspace_id = ? ORDER BY id", (workspace_id,)
            ):
                yield context_from_row(row)
            for row in conn.execute(
                f"SELECT {MEMORY_COLUMNS}, embedding, embedding_model FROM memories "
                "WHERE workspace_id = ? ORDER BY context_id, created_at, id",
                (workspace_id,),
            ):
                blob = row["embedding"]
                vector = None if blob is None else decode_vector(blob)
                yield MemoryDump(memory_from_row(row), row["embedding_model"], vector)
            for row in conn.execute(
                "SELECT workspace_id, context_id, source_id, target_id, weight, origin, "
                "trust_tier, created_at, updated_at FROM memory_edges WHERE workspace_id = ? "
                "ORDER BY context_id, source_id, target_id",
                (workspace_id,),
            ):
                yield edge_from_row(_DIALECT, row)
            for row in conn.execute(
                "SELECT id, seq, workspace_id, context_id, memory_id, helpful, query, note, "
                "actor, channel, created_at FROM retrieval_feedback "
                "WHERE workspace_id = ? ORDER BY seq",
                (workspace_id,),
            ):
                yield feedback_from_row(_DIALECT, row)
            for row in conn.execute(
                "SELECT context_id, key, value, expires_at, created_at, updated_at "
                "FROM agent_states WHERE workspace_id = ? "
                "AND (expires_at IS NULL OR expires_at > ?) ORDER BY context_id, key",
                (workspace_id, encode_time(now)),
            ):
                yield state_from_row(_DIALECT, row)

    def restore_workspace(self, workspace_id: str, rows: Iterable[TransferRow]) -> None:
        contexts: list[str] = []
        try:
            with self.db.write() as conn:
                table = ensure_lexical_table(conn, workspace_id)
                for row in rows:
                    if isinstance(row, ConnectorRow):
                        _insert_connector(conn, workspace_id, row)
                    elif isinstance(row, ContextRow):
                        _insert_context(conn, workspace_id, row)
                        contexts.append(row.id)
                    elif isinstance(row, MemoryDump):
                        _insert_memory(conn, workspace_id, table, row)
                    elif isinstance(row, EdgeRow):
                        _insert_edge(conn, workspace_id, row)
                    elif isinstance(row, FeedbackRow):
                        _insert_feedback(conn, workspace_id, row)
                    else:
                        _insert_state(conn, workspace_id, row)
                for chunk in chunked(contexts):
                    # A new generation: no cached index (in memory or on disk) can match it.
                    conn.execute(
                        "UPDATE contexts SET vector_generation = vector_generation + 1 "
                        f"WHERE workspace_id = ? AND id IN ({placeholders(chunk)})",
                        (workspace_id, *chunk),
                    )
        except sqlite3.IntegrityError as exc:
            raise ConflictError(f"import refused, nothing was written: {exc}") from exc
        for context_id in contexts:
            self.index.forget(context_id)

    def existing_ids(self, kind: IdKind, ids: Sequence[str]) -> set[str]:
        table = _ID_TABLES[kind]
        found: set[str] = set()
        conn = self.db.connection()
        for chunk in chunked(list(ids)):
            found.update(
                row[0]
                for row in conn.execute(
                    f"SELECT id FROM {table} WHERE id IN ({placeholders(chunk)})", chunk
                )
            )
        return found


def _insert_context(conn: sqlite3.Connection, workspace_id: str, row: ContextRow) -> None:
    conn.execute(
        "INSERT INTO contexts (id, workspace_id, name, description, trust_tier, sleep_mode, "
        "search_config, embedding_model, embedding_dim, created_at, updated_at, connector_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row.id, workspace_id, row.name, row.description, row.trust_tier, row.sleep_mode,
            json.dumps(row.search_config, ensure_ascii=False), row.embedding_model,
            row.embedding_dim, encode_time(row.created_at), encode_time(row.updated_at),
            row.connector_id,
        ),
    )  # fmt: skip


def _insert_connector(conn: sqlite3.Connection, workspace_id: str, row: ConnectorRow) -> None:
    conn.execute(
        "INSERT INTO connectors (id, workspace_id, kind, name, config, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            row.id, workspace_id, row.kind, row.name,
            json.dumps(row.config, ensure_ascii=False, sort_keys=True),
            encode_time(row.created_at), encode_time(row.updated_at),
        ),
    )  # fmt: skip


def _insert_memory(
    conn: sqlite3.Connection, workspace_id: str, table: str, dump: MemoryDump
) -> None:
    m = dump.row
    cursor = conn.execute(
        "INSERT INTO memories (id, workspace_id, context_id, summary, content, type, tags, "
        "importance, delivery_mode, trigger_from, trigger_until, source_type, source_uri, "
        "trust_tier, embedding_status, embedding, embedding_model, access_count, "
        "last_accessed_at, superseded_by, created_at, updated_at, deleted_at, instruction_like, "
        "external_id, external_owner, tainted, thread, thread_position) "
        f"VALUES ({', '.join('?' * 29)})",
        (
            m.id, workspace_id, m.context_id, m.summary, m.content, m.type,
            json.dumps(m.tags, ensure_ascii=False), m.importance, m.delivery_mode,
            encode_optional_time(m.trigger_from), encode_optional_time(m.trigger_until),
            m.source_type, m.source_uri, m.trust_tier, m.embedding_status,
            None if dump.vector is None else encode_vector(dump.vector), dump.embedding_model,
            m.access_count, encode_optional_time(m.last_accessed_at), m.superseded_by,
            encode_time(m.created_at), encode_time(m.updated_at),
            encode_optional_time(m.deleted_at),
            None if m.instruction_like is None else int(m.instruction_like), m.external_id,
            m.external_owner, int(m.tainted), m.thread, m.thread_position,
        ),
    )  # fmt: skip
    conn.execute(
        f"INSERT INTO {table} (rowid, tokens) VALUES (?, ?)",
        (cursor.lastrowid, dump.lexical_tokens),
    )


def _insert_edge(conn: sqlite3.Connection, workspace_id: str, row: EdgeRow) -> None:
    conn.execute(
        "INSERT INTO memory_edges (workspace_id, context_id, source_id, target_id, weight, "
        "origin, trust_tier, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            workspace_id, row.context_id, row.source_id, row.target_id, row.weight, row.origin,
            row.trust_tier, encode_time(row.created_at), encode_time(row.updated_at),
        ),
    )  # fmt: skip


def _insert_feedback(conn: sqlite3.Connection, workspace_id: str, row: FeedbackRow) -> None:
    # seq is assigned anew: events are restored in their original order, so it stays ordered.
    conn.execute(
        "INSERT INTO retrieval_feedback (id, workspace_id, context_id, memory_id, helpful, "
        "query, note, actor, channel, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row.id, workspace_id, row.context_id, row.memory_id, int(row.helpful), row.query,
            row.note, row.actor, row.channel, encode_time(row.created_at),
        ),
    )  # fmt: skip


def _insert_state(conn: sqlite3.Connection, workspace_id: str, row: StateRow) -> None:
    conn.execute(
        "INSERT INTO agent_states (workspace_id, context_id, key, value, expires_at, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            workspace_id, row.context_id, row.key, row.value,
            encode_optional_time(row.expires_at), encode_time(row.created_at),
            encode_time(row.updated_at),
        ),
    )  # fmt: skip
