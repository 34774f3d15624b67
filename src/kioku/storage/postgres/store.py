"""``PostgresStore``: the ``Store`` protocol on PostgreSQL (psycopg 3 pool, pgvector, tsvector).

Semantics mirror ``SQLiteStore`` exactly (the contract suite in tests/storage defines them).
Text that SQLite orders with its BINARY collation is ordered ``COLLATE "C"`` here (code point
order), so ids, names and keys sort the same whatever the database's default collation is.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, LiteralString, cast

from psycopg import errors
from psycopg.types.json import Jsonb

from kioku.errors import ConflictError
from kioku.storage.migrations import upgrade_database
from kioku.storage.postgres.codec import (
    MEMORY_COLUMNS,
    context_from_row,
    encode_tokens,
    memory_from_row,
)
from kioku.storage.postgres.connection import ALL_WORKSPACES, PostgresDatabase
from kioku.storage.postgres.dialect import PostgresSql
from kioku.storage.postgres.embeddings import PostgresEmbeddingLane
from kioku.storage.postgres.filters import filter_sql
from kioku.storage.postgres.jobs import PostgresJobLane
from kioku.storage.postgres.search import PostgresSearchLane
from kioku.storage.postgres.sleep import PostgresSleepLane
from kioku.storage.postgres.stats import PostgresStatsLane
from kioku.storage.postgres.threads import PostgresThreadLane
from kioku.storage.postgres.transfer import PostgresTransferLane
from kioku.storage.records import (
    ContextRow,
    MemoryChanges,
    MemoryFilter,
    MemoryRow,
    NewMemory,
    RankingSignals,
    WorkspaceRow,
)
from kioku.storage.shared.connectors import ConnectorStore
from kioku.storage.shared.database import Database
from kioku.storage.shared.delivery import DeliveryStore
from kioku.storage.shared.feedback import FeedbackStore
from kioku.storage.shared.graph import GraphStore
from kioku.storage.shared.keys import KeyStore
from kioku.storage.shared.oauth import OAuthStore
from kioku.storage.shared.state import StateStore
from kioku.storage.urls import libpq_url, sqlalchemy_url

_CONTEXT_COLUMNS = {"name", "description", "trust_tier", "sleep_mode", "search_config"}
_MEMORY_COLUMNS = {
    "summary", "content", "type", "tags", "importance", "delivery_mode",
    "trigger_from", "trigger_until", "source_uri", "instruction_like", "thread",
    "thread_position",
}  # fmt: skip


_TEXT_CHANGED: list[LiteralString] = [
    "embedding = NULL",
    "embedding_model = NULL",
    "embedding_status = 'pending'",
    "embedding_lease_until = NULL",
]
"""A new text: the old vector goes, and any worker's claim on the memory with it."""


def _encode_value(column: str, value: Any) -> Any:
    return Jsonb(value) if column in ("tags", "search_config") else value


def _column(name: str) -> LiteralString:
    # Only names checked against _CONTEXT_COLUMNS / _MEMORY_COLUMNS reach here: safe to splice.
    return cast(LiteralString, name)


def _conflict(name: object) -> ConflictError:
    return ConflictError(f"a context named {name!r} already exists", field="name")


class PostgresStore(
    PostgresSearchLane,
    PostgresEmbeddingLane,
    DeliveryStore,
    FeedbackStore,
    StateStore,
    PostgresStatsLane,
    KeyStore,
    OAuthStore,
    PostgresJobLane,
    PostgresTransferLane,
    GraphStore,
    PostgresSleepLane,
    ConnectorStore,
    PostgresThreadLane,
):
    """The server backend. Safe to share between threads (the pool hands out connections)."""

    sql: Database  # the shared repositories' view of ``db``

    def __init__(self, url: str, *, max_connections: int = 10) -> None:
        self.url = libpq_url(url)
        upgrade_database(sqlalchemy_url(url))
        self.db = PostgresDatabase(self.url, max_size=max_connections)
        self.sql = PostgresSql(self.db)

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------ workspaces

    def ensure_workspace(self, name: str) -> WorkspaceRow:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            # ON CONFLICT: two first-time callers racing both get the one row.
            conn.execute(
                "INSERT INTO workspaces (id, name, created_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (name) DO NOTHING",
                (str(uuid.uuid4()), name, datetime.now(UTC)),
            )
            row = conn.execute(
                "SELECT id, name, created_at FROM workspaces WHERE name = %s", (name,)
            ).fetchone()
        assert row is not None
        return WorkspaceRow(row["id"], row["name"], row["created_at"])

    # ------------------------------------------------------------ contexts

    def insert_context(self, workspace_id: str, row: ContextRow) -> ContextRow:
        try:
            with self.db.transaction(workspace_id) as conn:
                conn.execute(
                    "INSERT INTO contexts (id, workspace_id, name, description, trust_tier, "
                    "sleep_mode, search_config, created_at, updated_at, connector_id) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        row.id, workspace_id, row.name, row.description, row.trust_tier,
                        row.sleep_mode, Jsonb(row.search_config), row.created_at,
                        row.updated_at, row.connector_id,
                    ),
                )  # fmt: skip
        except errors.UniqueViolation as exc:
            raise _conflict(row.name) from exc
        created = self.get_context(workspace_id, row.id)
        assert created is not None
        return created

    def _context_query(
        self,
        workspace_id: str,
        where: LiteralString,
        params: Sequence[Any],
        *,
        with_count: bool = False,
    ) -> list[ContextRow]:
        count = (
            "(SELECT count(*) FROM memories m WHERE m.workspace_id = c.workspace_id "
            "AND m.context_id = c.id AND m.deleted_at IS NULL)"
            if with_count
            else "NULL::bigint"
        )
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                f"SELECT c.*, {count} AS memory_count FROM contexts c WHERE {where} "
                'ORDER BY c.name COLLATE "C"',
                params,
            ).fetchall()
        return [context_from_row(row, row["memory_count"]) for row in rows]

    def get_context(self, workspace_id: str, context_id: str) -> ContextRow | None:
        rows = self._context_query(
            workspace_id, "c.workspace_id = %s AND c.id = %s", (workspace_id, context_id)
        )
        return rows[0] if rows else None

    def get_context_by_name(self, workspace_id: str, name: str) -> ContextRow | None:
        rows = self._context_query(
            workspace_id, "c.workspace_id = %s AND c.name = %s", (workspace_id, name)
        )
        return rows[0] if rows else None

    def list_contexts(self, workspace_id: str) -> list[ContextRow]:
        return self._context_query(
            workspace_id, "c.workspace_id = %s", (workspace_id,), with_count=True
        )

    def update_context(
        self, workspace_id: str, context_id: str, values: dict[str, Any], now: datetime
    ) -> ContextRow | None:
        unknown = set(values) - _CONTEXT_COLUMNS
        if unknown:
            raise ValueError(f"not context columns: {sorted(unknown)}")
        if values:
            sets = ", ".join(f"{_column(column)} = %s" for column in values)
            params = [_encode_value(c, v) for c, v in values.items()]
            try:
                with self.db.transaction(workspace_id) as conn:
                    conn.execute(
                        f"UPDATE contexts SET {sets}, updated_at = %s "
                        "WHERE workspace_id = %s AND id = %s",
                        (*params, now, workspace_id, context_id),
                    )
                    if "trust_tier" in values:
                        # A memory's tier follows its context; tainted text stays external.
                        conn.execute(
                            "UPDATE memories SET trust_tier = CASE WHEN tainted OR source_type "
                            "= 'connector' THEN 'external' ELSE %s END "
                            "WHERE workspace_id = %s AND context_id = %s",
                            (values["trust_tier"], workspace_id, context_id),
                        )
            except errors.UniqueViolation as exc:
                raise _conflict(values.get("name")) from exc
        return self.get_context(workspace_id, context_id)

    def delete_context(self, workspace_id: str, context_id: str) -> bool:
        with self.db.transaction(workspace_id) as conn:
            cursor = conn.execute(
                "DELETE FROM contexts WHERE workspace_id = %s AND id = %s",
                (workspace_id, context_id),
            )
            return bool(cursor.rowcount)

    # ------------------------------------------------------------ memories

    def insert_memories(self, workspace_id: str, rows: Sequence[NewMemory]) -> None:
        if not rows:
            return
        encoded = [encode_tokens(row.lexical_tokens) for row in rows]
        columns = [
            [row.id for row in rows], [row.context_id for row in rows],
            [row.summary for row in rows], [row.content for row in rows],
            [row.type for row in rows], [Jsonb(row.tags) for row in rows],
            [row.importance for row in rows], [row.delivery_mode for row in rows],
            [row.trigger_from for row in rows], [row.trigger_until for row in rows],
            [row.source_type for row in rows], [row.source_uri for row in rows],
            [row.trust_tier for row in rows], [row.created_at for row in rows],
            [row.instruction_like for row in rows], [tokens for tokens, _ in encoded],
            [length for _, length in encoded], [row.external_id for row in rows],
            [row.external_owner for row in rows], [row.tainted for row in rows],
            [row.thread for row in rows], [row.thread_position for row in rows],
        ]  # fmt: skip
        # One statement (arrays unnested): every row lands or none, and the statistics
        # trigger (migration 0013) folds the whole batch into one upsert per distinct term.
        try:
            with self.db.transaction(workspace_id) as conn:
                conn.execute(
                    "INSERT INTO memories (id, workspace_id, context_id, summary, content, type, "
                    "tags, importance, delivery_mode, trigger_from, trigger_until, source_type, "
                    "source_uri, trust_tier, created_at, updated_at, instruction_like, "
                    "lexical_tokens, lexical_length, external_id, external_owner, tainted, "
                    "thread, thread_position) "
                    "SELECT r.id, %s, r.context_id, r.summary, r.content, r.type, r.tags, "
                    "r.importance, r.delivery_mode, r.trigger_from, r.trigger_until, "
                    "r.source_type, r.source_uri, r.trust_tier, r.created_at, r.created_at, "
                    "r.instruction_like, r.tokens::tsvector, r.length, r.external_id, "
                    "r.external_owner, r.tainted, r.thread, r.thread_position "
                    "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], %s::text[], "
                    "%s::jsonb[], %s::float8[], %s::text[], %s::timestamptz[], "
                    "%s::timestamptz[], %s::text[], %s::text[], %s::text[], %s::timestamptz[], "
                    "%s::boolean[], %s::text[], %s::integer[], %s::text[], %s::text[], "
                    "%s::boolean[], %s::text[], %s::bigint[]) WITH ORDINALITY AS r(id, "
                    "context_id, summary, content, type, tags, importance, delivery_mode, "
                    "trigger_from, trigger_until, source_type, source_uri, trust_tier, "
                    "created_at, instruction_like, tokens, length, external_id, external_owner, "
                    "tainted, thread, thread_position, ord) ORDER BY r.ord",
                    (workspace_id, *columns),
                )
        except errors.UniqueViolation as exc:
            if "ux_memories_external" not in str(exc):
                raise
            # Two writers raced to create the same external id: the loser writes nothing.
            raise ConflictError("a live memory with this external_id exists already") from exc

    def sync_memories(
        self,
        workspace_id: str,
        context_id: str,
        inserts: Sequence[NewMemory],
        updates: Sequence[tuple[str, MemoryChanges]],
        deletes: Sequence[str],
        now: datetime,
    ) -> list[MemoryRow]:
        with self.db.session(workspace_id):  # the calls below join this one transaction
            self.insert_memories(workspace_id, inserts)
            updated = [
                row
                for memory_id, change in updates
                if (row := self.update_memory(workspace_id, memory_id, change, now))
            ]
            for memory_id in deletes:
                self.soft_delete_memory(workspace_id, memory_id, now)
        return updated

    def get_memory(self, workspace_id: str, memory_id: str) -> MemoryRow | None:
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace_id = %s AND id = %s",
                (workspace_id, memory_id),
            ).fetchone()
        return None if row is None else memory_from_row(row)

    def get_memories(self, workspace_id: str, memory_ids: Sequence[str]) -> dict[str, MemoryRow]:
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace_id = %s AND id = ANY(%s)",
                (workspace_id, list(memory_ids)),
            ).fetchall()
        return {row["id"]: memory_from_row(row) for row in rows}

    def text_heads(
        self, workspace_id: str, memory_ids: Sequence[str], chars: int
    ) -> dict[str, str]:
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                "SELECT id, left(summary, %s) || E'\\n' || left(content, %s) AS head "
                "FROM memories WHERE workspace_id = %s AND id = ANY(%s)",
                (chars, chars, workspace_id, list(memory_ids)),
            ).fetchall()
        return {row["id"]: row["head"] for row in rows}

    def ranking_signals(
        self, workspace_id: str, memory_ids: Sequence[str]
    ) -> dict[str, RankingSignals]:
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                "SELECT m.id, m.importance, m.created_at, m.access_count, m.context_id, m.thread, "
                "coalesce(v.helpful, 0) AS helpful, coalesce(v.unhelpful, 0) AS unhelpful "
                "FROM memories m LEFT JOIN LATERAL (SELECT count(*) FILTER (WHERE f.helpful) "
                "AS helpful, count(*) FILTER (WHERE NOT f.helpful) AS unhelpful "
                "FROM retrieval_feedback f WHERE f.workspace_id = m.workspace_id "
                "AND f.memory_id = m.id) v ON true "
                "WHERE m.workspace_id = %s AND m.id = ANY(%s)",
                (workspace_id, list(memory_ids)),
            ).fetchall()
        return {
            r["id"]: RankingSignals(
                r["importance"],
                r["created_at"],
                r["access_count"],
                r["helpful"],
                r["unhelpful"],
                None if r["thread"] is None else (r["context_id"], r["thread"]),
            )
            for r in rows
        }

    def update_memory(
        self, workspace_id: str, memory_id: str, changes: MemoryChanges, now: datetime
    ) -> MemoryRow | None:
        unknown = set(changes.values) - _MEMORY_COLUMNS
        if unknown:
            raise ValueError(f"not updatable memory columns: {sorted(unknown)}")
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(
                "SELECT context_id, embedding_status FROM memories "
                "WHERE workspace_id = %s AND id = %s FOR NO KEY UPDATE",
                (workspace_id, memory_id),
            ).fetchone()
            if row is None:
                return None
            sets: list[LiteralString] = [f"{_column(c)} = %s" for c in changes.values]
            params = [_encode_value(c, v) for c, v in changes.values.items()]
            if changes.lexical_tokens is not None:
                sets.extend(["lexical_tokens = %s::tsvector", "lexical_length = %s"])
                params += list(encode_tokens(changes.lexical_tokens))
            if changes.text_changed:
                sets.extend(_TEXT_CHANGED)
            conn.execute(
                f"UPDATE memories SET {', '.join([*sets, 'updated_at = %s'])} "
                "WHERE workspace_id = %s AND id = %s",
                (*params, now, workspace_id, memory_id),
            )
            if changes.text_changed and row["embedding_status"] == "ready":
                self._bump_generation(conn, workspace_id, row["context_id"])
        return self.get_memory(workspace_id, memory_id)

    def soft_delete_memory(self, workspace_id: str, memory_id: str, now: datetime) -> bool:
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(
                "UPDATE memories SET deleted_at = %s, updated_at = %s "
                "WHERE workspace_id = %s AND id = %s AND deleted_at IS NULL "
                "RETURNING context_id, embedding_status",
                (now, now, workspace_id, memory_id),
            ).fetchone()
            if row is None:
                return False
            if row["embedding_status"] == "ready":
                self._bump_generation(conn, workspace_id, row["context_id"])
        return True

    def soft_delete_memories(
        self,
        workspace_id: str,
        context_id: str,
        versions: Mapping[str, datetime],
        now: datetime,
    ) -> bool:
        ids = sorted(versions)
        with self.db.transaction(workspace_id) as conn:
            # FOR UPDATE: a concurrent edit or forget of one of them waits for this
            # transaction, or this one sees its result and refuses.
            rows = conn.execute(
                "SELECT id, updated_at, embedding_status FROM memories "
                "WHERE workspace_id = %s AND context_id = %s AND deleted_at IS NULL "
                "AND id = ANY(%s) FOR UPDATE",
                (workspace_id, context_id, ids),
            ).fetchall()
            found = {row["id"]: row for row in rows}
            if len(found) != len(ids) or any(found[i]["updated_at"] != versions[i] for i in ids):
                return False
            conn.execute(
                "UPDATE memories SET deleted_at = %s, updated_at = %s "
                "WHERE workspace_id = %s AND id = ANY(%s)",
                (now, now, workspace_id, ids),
            )
            if any(found[i]["embedding_status"] == "ready" for i in ids):
                self._bump_generation(conn, workspace_id, context_id)
        return True

    def purge_memory(self, workspace_id: str, memory_id: str) -> bool:
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(
                "DELETE FROM memories WHERE workspace_id = %s AND id = %s "
                "RETURNING context_id, embedding_status, deleted_at",
                (workspace_id, memory_id),
            ).fetchone()
            if row is None:
                return False
            if row["embedding_status"] == "ready" and row["deleted_at"] is None:
                self._bump_generation(conn, workspace_id, row["context_id"])
        return True

    def record_access(self, workspace_id: str, memory_id: str, now: datetime) -> None:
        with self.db.transaction(workspace_id) as conn:
            conn.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = %s "
                "WHERE workspace_id = %s AND id = %s",
                (now, workspace_id, memory_id),
            )

    def list_memories(
        self,
        workspace_id: str,
        context_ids: Sequence[str],
        flt: MemoryFilter,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[MemoryRow]:
        where, params = filter_sql(workspace_id, context_ids, flt)
        if after is not None:
            where += ' AND (m.created_at, m.id COLLATE "C") < (%s, %s)'
            params.extend(after)
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where} "
                'ORDER BY m.created_at DESC, m.id COLLATE "C" DESC LIMIT %s',
                (*params, limit),
            ).fetchall()
        return [memory_from_row(row) for row in rows]

    def count_memories(self, workspace_id: str, context_id: str) -> int:
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(
                "SELECT count(*) AS n FROM memories WHERE workspace_id = %s AND context_id = %s "
                "AND deleted_at IS NULL",
                (workspace_id, context_id),
            ).fetchone()
        assert row is not None
        return row["n"]
