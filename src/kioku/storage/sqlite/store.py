"""``SQLiteStore``: the ``Store`` protocol on one SQLite file (WAL) + FTS5 (a table per
workspace) + the vector cache."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kioku.errors import ConflictError
from kioku.storage.migrations import upgrade_database
from kioku.storage.records import (
    ContextRow,
    MemoryChanges,
    MemoryFilter,
    MemoryRow,
    NewMemory,
    WorkspaceRow,
)
from kioku.storage.shared.database import Database
from kioku.storage.shared.delivery import DeliveryStore
from kioku.storage.shared.feedback import FeedbackStore
from kioku.storage.shared.graph import GraphStore
from kioku.storage.shared.keys import KeyStore
from kioku.storage.shared.oauth import OAuthStore
from kioku.storage.shared.state import StateStore
from kioku.storage.sqlite.bm25 import DocumentFrequencies
from kioku.storage.sqlite.candidates import SQLiteCandidateLane
from kioku.storage.sqlite.codec import (
    MEMORY_COLUMNS,
    context_from_row,
    decode_required_time,
    decode_time,
    encode_optional_time,
    encode_time,
    memory_from_row,
)
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.connectors import SQLiteConnectorLane
from kioku.storage.sqlite.dialect import SQLiteSql
from kioku.storage.sqlite.filters import chunked, filter_sql, placeholders
from kioku.storage.sqlite.jobs import SQLiteJobLane
from kioku.storage.sqlite.lexical import drain_deletions, ensure_lexical_table
from kioku.storage.sqlite.sleep import SQLiteSleepLane
from kioku.storage.sqlite.stats import SQLiteStatsLane
from kioku.storage.sqlite.threads import SQLiteThreadLane
from kioku.storage.sqlite.transfer import SQLiteTransferLane
from kioku.storage.sqlite.vectors import SQLiteVectorLane
from kioku.storage.vector_index import VectorIndexCache

_CONTEXT_COLUMNS = {"name", "description", "trust_tier", "sleep_mode", "search_config"}
_MEMORY_COLUMNS = {
    "summary", "content", "type", "tags", "importance", "delivery_mode",
    "trigger_from", "trigger_until", "source_uri", "instruction_like", "thread",
    "thread_position",
}  # fmt: skip


def _encode_value(column: str, value: Any) -> Any:
    if column in ("tags", "search_config"):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, datetime):
        return encode_time(value)
    return value


class SQLiteStore(
    SQLiteVectorLane,
    DeliveryStore,
    FeedbackStore,
    StateStore,
    SQLiteStatsLane,
    KeyStore,
    OAuthStore,
    SQLiteJobLane,
    SQLiteTransferLane,
    GraphStore,
    SQLiteSleepLane,
    SQLiteConnectorLane,
    SQLiteThreadLane,
    SQLiteCandidateLane,
):
    """The embedded backend. One instance per process per database file."""

    sql: Database  # the shared repositories' view of ``db``

    def __init__(
        self,
        path: Path,
        *,
        index_dir: Path | None = None,
        exact_max: int | None = None,
        background_graphs: bool = True,
    ) -> None:
        """``exact_max`` and ``background_graphs``: see ``VectorIndexCache``."""
        self.path = path
        self.url = f"sqlite:///{path}"
        upgrade_database(self.url)  # creates the file 0600 first (storage/private_files.py)
        self.db = SQLiteDatabase(path, before_commit=drain_deletions)
        self.sql = SQLiteSql(self.db)
        self.index = VectorIndexCache(
            index_dir if index_dir is not None else path.with_name(path.name + ".vectors"),
            exact_max=exact_max,
            background=background_graphs,
        )
        self.term_counts = DocumentFrequencies()

    def close(self) -> None:
        self.index.flush()
        self.db.close()

    # ------------------------------------------------------------ workspaces

    def ensure_workspace(self, name: str) -> WorkspaceRow:
        with self.db.write() as conn:
            row = conn.execute("SELECT * FROM workspaces WHERE name = ?", (name,)).fetchone()
            if row is None:
                now = encode_time(datetime.now(UTC))
                workspace_id = str(uuid.uuid4())
                conn.execute(
                    "INSERT INTO workspaces (id, name, created_at) VALUES (?, ?, ?)",
                    (workspace_id, name, now),
                )
                row = conn.execute(
                    "SELECT * FROM workspaces WHERE id = ?", (workspace_id,)
                ).fetchone()
        return WorkspaceRow(row["id"], row["name"], decode_time(row["created_at"]))  # type: ignore[arg-type]

    # ------------------------------------------------------------ contexts

    def insert_context(self, workspace_id: str, row: ContextRow) -> ContextRow:
        try:
            with self.db.write() as conn:
                conn.execute(
                    "INSERT INTO contexts (id, workspace_id, name, description, trust_tier, "
                    "sleep_mode, search_config, created_at, updated_at, connector_id) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        row.id, workspace_id, row.name, row.description, row.trust_tier,
                        row.sleep_mode, json.dumps(row.search_config),
                        encode_time(row.created_at), encode_time(row.updated_at),
                        row.connector_id,
                    ),
                )  # fmt: skip
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc):
                raise ConflictError(
                    f"a context named {row.name!r} already exists", field="name"
                ) from exc
            raise
        created = self.get_context(workspace_id, row.id)
        assert created is not None
        return created

    def _context_query(
        self, where: str, params: Sequence[Any], *, with_count: bool = False
    ) -> list[ContextRow]:
        # Counting scans a context's index entries: only listings ask for it, not every resolve.
        count = (
            "(SELECT count(*) FROM memories m WHERE m.workspace_id = c.workspace_id "
            "AND m.context_id = c.id AND m.deleted_at IS NULL)"
            if with_count
            else "NULL"
        )
        rows = (
            self.db.connection()
            .execute(
                f"SELECT c.*, {count} AS memory_count "
                f"FROM contexts c WHERE {where} ORDER BY c.name",
                params,
            )
            .fetchall()
        )
        return [context_from_row(row, row["memory_count"]) for row in rows]

    def get_context(self, workspace_id: str, context_id: str) -> ContextRow | None:
        rows = self._context_query("c.workspace_id = ? AND c.id = ?", (workspace_id, context_id))
        return rows[0] if rows else None

    def get_context_by_name(self, workspace_id: str, name: str) -> ContextRow | None:
        rows = self._context_query("c.workspace_id = ? AND c.name = ?", (workspace_id, name))
        return rows[0] if rows else None

    def list_contexts(self, workspace_id: str) -> list[ContextRow]:
        return self._context_query("c.workspace_id = ?", (workspace_id,), with_count=True)

    def update_context(
        self, workspace_id: str, context_id: str, values: dict[str, Any], now: datetime
    ) -> ContextRow | None:
        unknown = set(values) - _CONTEXT_COLUMNS
        if unknown:
            raise ValueError(f"not context columns: {sorted(unknown)}")
        if values:
            sets = ", ".join(f"{column} = ?" for column in values)
            params = [_encode_value(c, v) for c, v in values.items()]
            try:
                with self.db.write() as conn:
                    conn.execute(
                        f"UPDATE contexts SET {sets}, updated_at = ? "
                        "WHERE workspace_id = ? AND id = ?",
                        (*params, encode_time(now), workspace_id, context_id),
                    )
                    if "trust_tier" in values:
                        # A memory's tier follows its context; tainted text stays external.
                        conn.execute(
                            "UPDATE memories SET trust_tier = CASE WHEN tainted = 1 OR source_type "
                            "= 'connector' THEN 'external' ELSE ? END "
                            "WHERE workspace_id = ? AND context_id = ?",
                            (values["trust_tier"], workspace_id, context_id),
                        )
            except sqlite3.IntegrityError as exc:
                if "UNIQUE" in str(exc):
                    raise ConflictError(
                        f"a context named {values.get('name')!r} already exists", field="name"
                    ) from exc
                raise
        return self.get_context(workspace_id, context_id)

    def delete_context(self, workspace_id: str, context_id: str) -> bool:
        with self.db.write() as conn:
            deleted = conn.execute(
                "DELETE FROM contexts WHERE workspace_id = ? AND id = ?", (workspace_id, context_id)
            ).rowcount
        if deleted:
            self.index.forget(context_id)
        return bool(deleted)

    # ------------------------------------------------------------ memories

    def insert_memories(self, workspace_id: str, rows: Sequence[NewMemory]) -> None:
        try:
            self._insert_memories(workspace_id, rows)
        except sqlite3.IntegrityError as exc:
            if "external_id" not in str(exc):
                raise
            # Two writers raced to create the same external id: the loser writes nothing.
            raise ConflictError("a live memory with this external_id exists already") from exc

    def _insert_memories(self, workspace_id: str, rows: Sequence[NewMemory]) -> None:
        with self.db.write() as conn:
            table = ensure_lexical_table(conn, workspace_id) if rows else ""
            for row in rows:
                created = encode_time(row.created_at)
                cursor = conn.execute(
                    "INSERT INTO memories (id, workspace_id, context_id, summary, content, type, "
                    "tags, importance, delivery_mode, trigger_from, trigger_until, source_type, "
                    "source_uri, trust_tier, created_at, updated_at, instruction_like, "
                    "external_id, external_owner, tainted, thread, thread_position) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        row.id, workspace_id, row.context_id, row.summary, row.content, row.type,
                        json.dumps(row.tags, ensure_ascii=False), row.importance,
                        row.delivery_mode, encode_optional_time(row.trigger_from),
                        encode_optional_time(row.trigger_until), row.source_type,
                        row.source_uri, row.trust_tier, created, created,
                        None if row.instruction_like is None else int(row.instruction_like),
                        row.external_id, row.external_owner, int(row.tainted), row.thread,
                        row.thread_position,
                    ),
                )  # fmt: skip
                conn.execute(
                    f"INSERT INTO {table} (rowid, tokens) VALUES (?, ?)",
                    (cursor.lastrowid, row.lexical_tokens),
                )

    def sync_memories(
        self,
        workspace_id: str,
        context_id: str,
        inserts: Sequence[NewMemory],
        updates: Sequence[tuple[str, MemoryChanges]],
        deletes: Sequence[str],
        now: datetime,
    ) -> list[MemoryRow]:
        try:
            with self.db.session():  # the calls below join this one transaction
                self.insert_memories(workspace_id, inserts)
                updated = [
                    row
                    for memory_id, change in updates
                    if (row := self.update_memory(workspace_id, memory_id, change, now))
                ]
                for memory_id in deletes:
                    self.soft_delete_memory(workspace_id, memory_id, now)
        except BaseException:
            self.index.forget(context_id)  # it may hold changes that were rolled back
            raise
        return updated

    def get_memory(self, workspace_id: str, memory_id: str) -> MemoryRow | None:
        row = (
            self.db.connection()
            .execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace_id = ? AND id = ?",
                (workspace_id, memory_id),
            )
            .fetchone()
        )
        return None if row is None else memory_from_row(row)

    def get_memories(self, workspace_id: str, memory_ids: Sequence[str]) -> dict[str, MemoryRow]:
        found: dict[str, MemoryRow] = {}
        conn = self.db.connection()
        for chunk in chunked(list(memory_ids)):
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories "
                # "+" keeps the planner on the unique id index (not a workspace scan).
                f"WHERE +workspace_id = ? AND id IN ({placeholders(chunk)})",
                (workspace_id, *chunk),
            ).fetchall()
            for row in rows:
                found[row["id"]] = memory_from_row(row)
        return found

    def update_memory(
        self, workspace_id: str, memory_id: str, changes: MemoryChanges, now: datetime
    ) -> MemoryRow | None:
        unknown = set(changes.values) - _MEMORY_COLUMNS
        if unknown:
            raise ValueError(f"not updatable memory columns: {sorted(unknown)}")
        with self.db.write() as conn:
            row = conn.execute(
                "SELECT seq, context_id, embedding_status FROM memories "
                "WHERE workspace_id = ? AND id = ?",
                (workspace_id, memory_id),
            ).fetchone()
            if row is None:
                return None
            sets = [f"{column} = ?" for column in changes.values]
            params = [_encode_value(c, v) for c, v in changes.values.items()]
            if changes.text_changed:
                sets += [
                    "embedding = NULL",
                    "embedding_model = NULL",
                    "embedding_status = 'pending'",
                    "embedding_lease_until = NULL",
                ]
            conn.execute(
                f"UPDATE memories SET {', '.join([*sets, 'updated_at = ?'])} WHERE seq = ?",
                (*params, encode_time(now), row["seq"]),
            )
            if changes.lexical_tokens is not None:
                conn.execute(
                    f"UPDATE {ensure_lexical_table(conn, workspace_id)} SET tokens = ? "
                    "WHERE rowid = ?",
                    (changes.lexical_tokens, row["seq"]),
                )
            if changes.text_changed and row["embedding_status"] == "ready":
                generation = self._bump_generation(conn, row["context_id"])
                self.index.apply(row["context_id"], generation, removals=[memory_id])
        return self.get_memory(workspace_id, memory_id)

    def soft_delete_memory(self, workspace_id: str, memory_id: str, now: datetime) -> bool:
        with self.db.write() as conn:
            row = conn.execute(
                "SELECT seq, context_id, embedding_status FROM memories "
                "WHERE workspace_id = ? AND id = ? AND deleted_at IS NULL",
                (workspace_id, memory_id),
            ).fetchone()
            if row is None:
                return False
            stamp = encode_time(now)
            conn.execute(
                "UPDATE memories SET deleted_at = ?, updated_at = ? WHERE seq = ?",
                (stamp, stamp, row["seq"]),
            )
            if row["embedding_status"] == "ready":
                generation = self._bump_generation(conn, row["context_id"])
                self.index.apply(row["context_id"], generation, removals=[memory_id])
        return True

    def soft_delete_memories(
        self,
        workspace_id: str,
        context_id: str,
        versions: Mapping[str, datetime],
        now: datetime,
    ) -> bool:
        ids = sorted(versions)
        with self.db.write() as conn:
            found: dict[str, sqlite3.Row] = {}
            for chunk in chunked(ids):
                for row in conn.execute(
                    "SELECT seq, id, updated_at, embedding_status FROM memories "
                    "WHERE workspace_id = ? AND context_id = ? AND deleted_at IS NULL "
                    f"AND id IN ({placeholders(chunk)})",
                    (workspace_id, context_id, *chunk),
                ):
                    found[row["id"]] = row
            if len(found) != len(ids) or any(
                decode_required_time(found[i]["updated_at"]) != versions[i] for i in ids
            ):
                return False
            stamp = encode_time(now)
            for chunk in chunked([str(found[i]["seq"]) for i in ids]):
                conn.execute(
                    "UPDATE memories SET deleted_at = ?, updated_at = ? "
                    f"WHERE seq IN ({placeholders(chunk)})",
                    (stamp, stamp, *chunk),
                )
            removals = [i for i in ids if found[i]["embedding_status"] == "ready"]
            if removals:
                generation = self._bump_generation(conn, context_id)
                self.index.apply(context_id, generation, removals=removals)
        return True

    def purge_memory(self, workspace_id: str, memory_id: str) -> bool:
        with self.db.write() as conn:
            row = conn.execute(
                "SELECT seq, context_id, embedding_status, deleted_at FROM memories "
                "WHERE workspace_id = ? AND id = ?",
                (workspace_id, memory_id),
            ).fetchone()
            if row is None:
                return False
            conn.execute("DELETE FROM memories WHERE seq = ?", (row["seq"],))
            if row["embedding_status"] == "ready" and row["deleted_at"] is None:
                generation = self._bump_generation(conn, row["context_id"])
                self.index.apply(row["context_id"], generation, removals=[memory_id])
        return True

    def record_access(self, workspace_id: str, memory_id: str, now: datetime) -> None:
        with self.db.write() as conn:
            conn.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? "
                "WHERE workspace_id = ? AND id = ?",
                (encode_time(now), workspace_id, memory_id),
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
            where += " AND (m.created_at, m.id) < (?, ?)"
            params.extend([encode_time(after[0]), after[1]])
        rows = (
            self.db.connection()
            .execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where} "
                "ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
                (*params, limit),
            )
            .fetchall()
        )
        return [memory_from_row(row) for row in rows]

    def count_memories(self, workspace_id: str, context_id: str) -> int:
        return (
            self.db.connection()
            .execute(
                "SELECT count(*) FROM memories WHERE workspace_id = ? AND context_id = ? "
                "AND deleted_at IS NULL",
                (workspace_id, context_id),
            )
            .fetchone()[0]
        )
