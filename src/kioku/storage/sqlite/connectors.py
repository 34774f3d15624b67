"""Connectors on SQLite: their rows, external-id lookups, idempotency records, and purge."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from kioku.storage.records import ConnectorRow, MemoryRow, PurgeCounts, PurgeScope
from kioku.storage.sqlite.codec import (
    MEMORY_COLUMNS,
    decode_required_time,
    encode_time,
    memory_from_row,
)
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.filters import chunked, placeholders
from kioku.storage.vector_index import VectorIndexCache


def _connector_from_row(row: sqlite3.Row) -> ConnectorRow:
    return ConnectorRow(
        id=row["id"],
        workspace_id=row["workspace_id"],
        kind=row["kind"],
        name=row["name"],
        config=json.loads(row["config"]),
        created_at=decode_required_time(row["created_at"]),
        updated_at=decode_required_time(row["updated_at"]),
    )


class SQLiteConnectorLane:
    """Mixed into ``SQLiteStore``."""

    db: SQLiteDatabase
    index: VectorIndexCache

    def upsert_connector(
        self,
        workspace_id: str,
        kind: str,
        name: str,
        config: dict[str, Any] | None,
        now: datetime,
    ) -> ConnectorRow:
        stamp = encode_time(now)
        # Only a new config counts as a change: a re-import leaves the row as it was.
        on_conflict = (
            "DO NOTHING"
            if config is None
            else "DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at "
            "WHERE connectors.config != excluded.config"
        )
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO connectors (id, workspace_id, kind, name, config, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                f"ON CONFLICT (workspace_id, kind, name) {on_conflict}",
                (
                    str(uuid.uuid4()), workspace_id, kind, name,
                    json.dumps(config or {}, ensure_ascii=False, sort_keys=True), stamp, stamp,
                ),
            )  # fmt: skip
            row = conn.execute(
                "SELECT * FROM connectors WHERE workspace_id = ? AND kind = ? AND name = ?",
                (workspace_id, kind, name),
            ).fetchone()
        return _connector_from_row(row)

    def list_connectors(self, workspace_id: str) -> list[ConnectorRow]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT * FROM connectors WHERE workspace_id = ? ORDER BY kind, name",
                (workspace_id,),
            )
            .fetchall()
        )
        return [_connector_from_row(row) for row in rows]

    def bind_context(self, workspace_id: str, context_id: str, connector_id: str) -> None:
        with self.db.write() as conn:
            conn.execute(
                "UPDATE contexts SET connector_id = ? WHERE workspace_id = ? AND id = ?",
                (connector_id, workspace_id, context_id),
            )

    def external_memories(
        self,
        workspace_id: str,
        context_id: str,
        owner: str,
        external_ids: Sequence[str] | None = None,
    ) -> dict[str, MemoryRow]:
        conn = self.db.connection()
        live = (
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace_id = ? AND context_id = ? "
            "AND external_owner = ? AND deleted_at IS NULL AND external_id IS NOT NULL"
        )
        if external_ids is None:
            rows = conn.execute(live, (workspace_id, context_id, owner)).fetchall()
        else:
            rows = []
            for chunk in chunked(list(external_ids)):
                rows += conn.execute(
                    f"{live} AND external_id IN ({placeholders(chunk)})",
                    (workspace_id, context_id, owner, *chunk),
                ).fetchall()
        return {row["external_id"]: memory_from_row(row) for row in rows}

    def get_ingest_request(
        self, workspace_id: str, context_id: str, key: str
    ) -> tuple[str, dict[str, Any]] | None:
        row = (
            self.db.connection()
            .execute(
                "SELECT request_hash, response FROM ingest_requests "
                "WHERE workspace_id = ? AND context_id = ? AND idempotency_key = ?",
                (workspace_id, context_id, key),
            )
            .fetchone()
        )
        return None if row is None else (row[0], json.loads(row[1]))

    def save_ingest_request(
        self,
        workspace_id: str,
        context_id: str,
        key: str,
        request_hash: str,
        response: dict[str, Any],
        now: datetime,
    ) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO ingest_requests (workspace_id, context_id, idempotency_key, "
                "request_hash, response, created_at) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                (
                    workspace_id, context_id, key, request_hash,
                    json.dumps(response, ensure_ascii=False), encode_time(now),
                ),
            )  # fmt: skip

    def purge(self, workspace_id: str, scope: PurgeScope) -> PurgeCounts:
        where, params = ["workspace_id = ?"], [workspace_id]
        if scope.context_id is not None:
            where.append("context_id = ?")
            params.append(scope.context_id)
        if scope.source_prefix is not None:
            # substr, not LIKE: a prefix holding % or _ means itself.
            where.append("substr(source_uri, 1, ?) = ?")
            params += [len(scope.source_prefix), scope.source_prefix]
        whole_context = scope.source_prefix is None and scope.context_id is not None
        with self.db.write() as conn:
            found = conn.execute(
                "SELECT id, context_id, embedding IS NOT NULL AS has_vector FROM memories "
                f"WHERE {' AND '.join(where)}",
                params,
            ).fetchall()
            ids = [row["id"] for row in found]
            contexts = sorted({row["context_id"] for row in found} | set(scope.named_contexts()))
            edges = feedback = 0
            for chunk in chunked(ids):
                marks = placeholders(chunk)
                edges += conn.execute(
                    "SELECT count(*) FROM memory_edges WHERE workspace_id = ? "
                    f"AND (source_id IN ({marks}) OR target_id IN ({marks}))",
                    (workspace_id, *chunk, *chunk),
                ).fetchone()[0]
                feedback += conn.execute(
                    "SELECT count(*) FROM retrieval_feedback WHERE workspace_id = ? "
                    f"AND memory_id IN ({marks})",
                    (workspace_id, *chunk),
                ).fetchone()[0]
            actions = _purge_sleep_actions(conn, workspace_id, contexts, set(ids), whole_context)
            for chunk in chunked(ids):
                # Edges and feedback go by cascade, FTS rows by trigger.
                marks = placeholders(chunk)
                conn.execute(
                    f"DELETE FROM memories WHERE workspace_id = ? AND id IN ({marks})",
                    (workspace_id, *chunk),
                )
            state = requests = 0
            if whole_context:
                state = conn.execute(
                    "DELETE FROM agent_states WHERE workspace_id = ? AND context_id = ?",
                    (workspace_id, scope.context_id),
                ).rowcount
                requests = conn.execute(
                    "DELETE FROM ingest_requests WHERE workspace_id = ? AND context_id = ?",
                    (workspace_id, scope.context_id),
                ).rowcount
            for context_id in contexts:
                conn.execute(
                    "UPDATE contexts SET vector_generation = vector_generation + 1 "
                    "WHERE workspace_id = ? AND id = ?",
                    (workspace_id, context_id),
                )
        for context_id in contexts:
            self.index.forget(context_id)  # rebuilt from the rows that are left
        return PurgeCounts(
            memories=len(ids),
            vectors=sum(1 for row in found if row["has_vector"]),
            edges=edges,
            feedback=feedback,
            state_keys=state,
            sleep_actions=actions,
            ingest_requests=requests,
        )


def _purge_sleep_actions(
    conn: sqlite3.Connection,
    workspace_id: str,
    contexts: list[str],
    ids: set[str],
    whole_context: bool,
) -> int:
    """Delete the Sleep log lines naming a purged memory (their before/after hold its text);
    for a whole context, its runs (and their lines) altogether. Returns the lines removed."""
    removed = 0
    for context_id in contexts:
        rows = conn.execute(
            "SELECT a.run_id, a.seq, a.target FROM sleep_actions a JOIN sleep_runs r "
            "ON r.workspace_id = a.workspace_id AND r.id = a.run_id "
            "WHERE r.workspace_id = ? AND r.context_id = ?",
            (workspace_id, context_id),
        ).fetchall()
        # An edge's target is "source|target": either end purged takes the line.
        doomed = [
            (row["run_id"], row["seq"])
            for row in rows
            if whole_context or ids.intersection(row["target"].split("|"))
        ]
        for run_id, seq in doomed:
            conn.execute(
                "DELETE FROM sleep_actions WHERE workspace_id = ? AND run_id = ? AND seq = ?",
                (workspace_id, run_id, seq),
            )
        removed += len(doomed)
        if whole_context:
            conn.execute(
                "DELETE FROM sleep_runs WHERE workspace_id = ? AND context_id = ?",
                (workspace_id, context_id),
            )
    return removed
