"""Moving a workspace on PostgreSQL: dump every row, restore rows as they were.

Both run in one transaction scoped to the workspace (row-level security shows it that tenant's
rows only); the dump streams through server-side cursors, the restore inserts in batches.
Vectors leave as pgvector's binary form (exact float32) and come back as its text form, which
``encode_vector`` writes with enough digits to round-trip every float32.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, LiteralString

import numpy as np
from psycopg import Connection, Cursor, errors
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from kioku.errors import ConflictError
from kioku.storage.postgres.codec import (
    MEMORY_COLUMNS,
    context_from_row,
    encode_tokens,
    encode_vector,
    memory_from_row,
)
from kioku.storage.postgres.connection import ALL_WORKSPACES, PostgresDatabase
from kioku.storage.records import ConnectorRow, ContextRow, EdgeRow, FeedbackRow, StateRow
from kioku.storage.transfer import IdKind, MemoryDump, TransferRow

_BATCH = 500
_EXISTING: dict[IdKind, LiteralString] = {
    "connector": "SELECT id FROM connectors WHERE id = ANY(%s)",
    "context": "SELECT id FROM contexts WHERE id = ANY(%s)",
    "memory": "SELECT id FROM memories WHERE id = ANY(%s)",
    "feedback": "SELECT id FROM retrieval_feedback WHERE id = ANY(%s)",
}
_INSERT: dict[type, LiteralString] = {
    ConnectorRow: "INSERT INTO connectors (id, workspace_id, kind, name, config, created_at, "
    "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
    ContextRow: "INSERT INTO contexts (id, workspace_id, name, description, trust_tier, "
    "sleep_mode, search_config, embedding_model, embedding_dim, created_at, updated_at, "
    "connector_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
    # A batch of memories is one statement (its columns as arrays, unnested): the statistics
    # trigger (migration 0013) then folds the batch into one upsert per distinct term.
    MemoryDump: "INSERT INTO memories (id, workspace_id, context_id, summary, content, type, "
    "tags, importance, delivery_mode, trigger_from, trigger_until, source_type, source_uri, "
    "trust_tier, embedding_status, embedding, embedding_model, lexical_tokens, lexical_length, "
    "access_count, last_accessed_at, superseded_by, created_at, updated_at, deleted_at, "
    "instruction_like, external_id, external_owner, tainted, thread, thread_position) "
    "SELECT c1, %s, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16::vector, c17, "
    "c18::tsvector, c19, c20, c21, c22, c23, c24, c25, c26, c27, c28, c29, c30, c31 "
    "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
    "%s::jsonb[], %s::float8[], %s::text[], %s::timestamptz[], %s::timestamptz[], %s::text[], "
    "%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::integer[], "
    "%s::bigint[], %s::timestamptz[], %s::text[], %s::timestamptz[], %s::timestamptz[], "
    "%s::timestamptz[], %s::boolean[], %s::text[], %s::text[], %s::boolean[], %s::text[], "
    "%s::bigint[]) WITH ORDINALITY AS r(c1, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, "
    "c14, c15, c16, c17, c18, c19, c20, c21, c22, c23, c24, c25, c26, c27, c28, c29, c30, c31, "
    "ord) ORDER BY ord",
    EdgeRow: "INSERT INTO memory_edges (workspace_id, context_id, source_id, target_id, weight, "
    "origin, trust_tier, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
    # seq is assigned anew: events are restored in their original order, so it stays ordered.
    FeedbackRow: "INSERT INTO retrieval_feedback (id, workspace_id, context_id, memory_id, "
    "helpful, query, note, actor, channel, created_at) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
    StateRow: "INSERT INTO agent_states (workspace_id, context_id, key, value, expires_at, "
    "created_at, updated_at) VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s)",
}


def _decode_vector(sent: bytes) -> np.ndarray:
    # vector_send: int16 dimension, int16 unused, then big-endian float4s.
    return np.frombuffer(sent, dtype=">f4", offset=4).astype(np.float32)


def _insert(cursor: Cursor[DictRow], kind: type, batch: list[tuple[Any, ...]]) -> None:
    """Write a batch of rows of one kind: memories as one statement of column arrays."""
    if kind is MemoryDump:
        # The workspace is one parameter, not an array: the statement names its tenant.
        first, workspace, *rest = (list(column) for column in zip(*batch, strict=True))
        cursor.execute(_INSERT[kind], [workspace[0], first, *rest])
    else:
        cursor.executemany(_INSERT[kind], batch)


def _params(workspace_id: str, row: TransferRow) -> tuple[Any, ...]:
    if isinstance(row, ConnectorRow):
        return (
            row.id, workspace_id, row.kind, row.name, Jsonb(row.config), row.created_at,
            row.updated_at,
        )  # fmt: skip
    if isinstance(row, ContextRow):
        return (
            row.id, workspace_id, row.name, row.description, row.trust_tier, row.sleep_mode,
            Jsonb(row.search_config), row.embedding_model, row.embedding_dim, row.created_at,
            row.updated_at, row.connector_id,
        )  # fmt: skip
    if isinstance(row, MemoryDump):
        m = row.row
        tokens, length = encode_tokens(row.lexical_tokens)
        return (
            m.id, workspace_id, m.context_id, m.summary, m.content, m.type, Jsonb(m.tags),
            m.importance, m.delivery_mode, m.trigger_from, m.trigger_until, m.source_type,
            m.source_uri, m.trust_tier, m.embedding_status,
            None if row.vector is None else encode_vector(row.vector), row.embedding_model,
            tokens, length, m.access_count, m.last_accessed_at, m.superseded_by, m.created_at,
            m.updated_at, m.deleted_at, m.instruction_like, m.external_id, m.external_owner,
            m.tainted, m.thread, m.thread_position,
        )  # fmt: skip
    if isinstance(row, EdgeRow):
        return (
            workspace_id, row.context_id, row.source_id, row.target_id, row.weight, row.origin,
            row.trust_tier, row.created_at, row.updated_at,
        )  # fmt: skip
    if isinstance(row, FeedbackRow):
        return (
            row.id, workspace_id, row.context_id, row.memory_id, row.helpful, row.query,
            row.note, row.actor, row.channel, row.created_at,
        )  # fmt: skip
    return (
        workspace_id, row.context_id, row.key, row.value, row.expires_at, row.created_at,
        row.updated_at,
    )  # fmt: skip


class PostgresTransferLane:
    """Mixed into ``PostgresStore``: ``dump_workspace``, ``restore_workspace``, ``existing_ids``."""

    db: PostgresDatabase

    def dump_workspace(self, workspace_id: str, now: datetime) -> Iterator[TransferRow]:
        # One REPEATABLE READ transaction: every kind of row is read from the same snapshot,
        # so writes landing during the export never make an inconsistent file.
        with self.db.transaction(workspace_id, snapshot=True) as conn:
            for row in _stream(
                conn,
                "SELECT id, workspace_id, kind, name, config, created_at, updated_at "
                'FROM connectors WHERE workspace_id = %s ORDER BY id COLLATE "C"',
                (workspace_id,),
            ):
                yield ConnectorRow(**row)
            for row in _stream(
                conn,
                'SELECT * FROM contexts WHERE workspace_id = %s ORDER BY id COLLATE "C"',
                (workspace_id,),
            ):
                yield context_from_row(row)
            for row in _stream(
                conn,
                f"SELECT {MEMORY_COLUMNS}, embedding_model, vector_send(embedding) AS vector "
                "FROM memories WHERE workspace_id = %s "
                'ORDER BY context_id COLLATE "C", created_at, id COLLATE "C"',
                (workspace_id,),
            ):
                vector = None if row["vector"] is None else _decode_vector(row["vector"])
                yield MemoryDump(memory_from_row(row), row["embedding_model"], vector)
            for row in _stream(
                conn,
                "SELECT workspace_id, context_id, source_id, target_id, weight, origin, "
                "trust_tier, created_at, updated_at FROM memory_edges WHERE workspace_id = %s "
                'ORDER BY context_id COLLATE "C", source_id COLLATE "C", target_id COLLATE "C"',
                (workspace_id,),
            ):
                yield EdgeRow(**row)
            for row in _stream(
                conn,
                "SELECT id, seq, workspace_id, context_id, memory_id, helpful, query, note, "
                "actor, channel, created_at FROM retrieval_feedback WHERE workspace_id = %s "
                "ORDER BY seq",
                (workspace_id,),
            ):
                yield FeedbackRow(**row)
            for row in _stream(
                conn,
                "SELECT context_id, key, value::text AS value, expires_at, created_at, "
                "updated_at FROM agent_states WHERE workspace_id = %s "
                "AND (expires_at IS NULL OR expires_at > %s) "
                'ORDER BY context_id COLLATE "C", key COLLATE "C"',
                (workspace_id, now),
            ):
                yield StateRow(**row)

    def restore_workspace(self, workspace_id: str, rows: Iterable[TransferRow]) -> None:
        contexts: list[str] = []
        try:
            with self.db.transaction(workspace_id) as conn, conn.cursor() as cursor:
                batch: list[tuple[Any, ...]] = []
                kind: type | None = None
                for row in rows:
                    if type(row) is not kind or len(batch) >= _BATCH:
                        if kind is not None:
                            _insert(cursor, kind, batch)
                        batch, kind = [], type(row)
                    if isinstance(row, ContextRow):
                        contexts.append(row.id)
                    batch.append(_params(workspace_id, row))
                if kind is not None:
                    _insert(cursor, kind, batch)
                # Nothing caches vectors on PostgreSQL yet; the generation still says they
                # changed, as every other vector write does.
                cursor.execute(
                    "UPDATE contexts SET vector_generation = vector_generation + 1 "
                    "WHERE workspace_id = %s AND id = ANY(%s)",
                    (workspace_id, contexts),
                )
        except errors.IntegrityError as exc:
            raise ConflictError(f"import refused, nothing was written: {exc}") from exc

    def existing_ids(self, kind: IdKind, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        # Ids are kept on import, and they must stay unique across tenants: a lookup over all.
        with self.db.transaction(ALL_WORKSPACES) as conn:
            for start in range(0, len(ids), 10_000):
                chunk = list(ids[start : start + 10_000])
                found.update(row["id"] for row in conn.execute(_EXISTING[kind], (chunk,)))
        return found


def _stream(
    conn: Connection[DictRow], query: LiteralString, params: Sequence[Any]
) -> Iterator[DictRow]:
    """Rows of one query through a server-side cursor: a big workspace never sits in memory."""
    with conn.cursor(name="kioku_dump") as cursor:
        cursor.itersize = _BATCH
        cursor.execute(query, params)
        yield from cursor
