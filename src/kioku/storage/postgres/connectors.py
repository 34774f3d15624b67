"""Connectors on PostgreSQL: their rows, external-id lookups, idempotency records, and purge."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, LiteralString

from psycopg import Connection
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from kioku.storage.postgres.codec import MEMORY_COLUMNS, memory_from_row
from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.records import ConnectorRow, MemoryRow, PurgeCounts, PurgeScope

_CONNECTOR_COLUMNS = "id, workspace_id, kind, name, config, created_at, updated_at"


class PostgresConnectorLane:
    """Mixed into ``PostgresStore``."""

    db: PostgresDatabase

    def upsert_connector(
        self,
        workspace_id: str,
        kind: str,
        name: str,
        config: dict[str, Any] | None,
        now: datetime,
    ) -> ConnectorRow:
        # Only a new config counts as a change: a re-import leaves the row as it was.
        on_conflict: LiteralString = (
            "DO NOTHING"
            if config is None
            else "DO UPDATE SET config = excluded.config, updated_at = excluded.updated_at "
            "WHERE connectors.config IS DISTINCT FROM excluded.config"
        )
        with self.db.transaction(workspace_id) as conn:
            conn.execute(
                "INSERT INTO connectors (id, workspace_id, kind, name, config, created_at, "
                "updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (workspace_id, kind, name) " + on_conflict,
                (str(uuid.uuid4()), workspace_id, kind, name, Jsonb(config or {}), now, now),
            )
            row = conn.execute(
                f"SELECT {_CONNECTOR_COLUMNS} FROM connectors "
                "WHERE workspace_id = %s AND kind = %s AND name = %s",
                (workspace_id, kind, name),
            ).fetchone()
        assert row is not None
        return ConnectorRow(**row)

    def list_connectors(self, workspace_id: str) -> list[ConnectorRow]:
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                f"SELECT {_CONNECTOR_COLUMNS} FROM connectors WHERE workspace_id = %s "
                'ORDER BY kind COLLATE "C", name COLLATE "C"',
                (workspace_id,),
            ).fetchall()
        return [ConnectorRow(**row) for row in rows]

    def bind_context(self, workspace_id: str, context_id: str, connector_id: str) -> None:
        with self.db.transaction(workspace_id) as conn:
            conn.execute(
                "UPDATE contexts SET connector_id = %s WHERE workspace_id = %s AND id = %s",
                (connector_id, workspace_id, context_id),
            )

    def external_memories(
        self,
        workspace_id: str,
        context_id: str,
        owner: str,
        external_ids: Sequence[str] | None = None,
    ) -> dict[str, MemoryRow]:
        live = (
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace_id = %s AND context_id = %s "
            "AND external_owner = %s AND deleted_at IS NULL AND external_id IS NOT NULL"
        )
        with self.db.transaction(workspace_id) as conn:
            if external_ids is None:
                rows = conn.execute(live, (workspace_id, context_id, owner)).fetchall()
            else:
                rows = conn.execute(
                    f"{live} AND external_id = ANY(%s)",
                    (workspace_id, context_id, owner, list(external_ids)),
                ).fetchall()
        return {row["external_id"]: memory_from_row(row) for row in rows}

    def get_ingest_request(
        self, workspace_id: str, context_id: str, key: str
    ) -> tuple[str, dict[str, Any]] | None:
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(
                "SELECT request_hash, response FROM ingest_requests "
                "WHERE workspace_id = %s AND context_id = %s AND idempotency_key = %s",
                (workspace_id, context_id, key),
            ).fetchone()
        return None if row is None else (row["request_hash"], row["response"])

    def save_ingest_request(
        self,
        workspace_id: str,
        context_id: str,
        key: str,
        request_hash: str,
        response: dict[str, Any],
        now: datetime,
    ) -> None:
        with self.db.transaction(workspace_id) as conn:
            conn.execute(
                "INSERT INTO ingest_requests (workspace_id, context_id, idempotency_key, "
                "request_hash, response, created_at) VALUES (%s, %s, %s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (workspace_id, context_id, key, request_hash, Jsonb(response), now),
            )

    def purge(self, workspace_id: str, scope: PurgeScope) -> PurgeCounts:
        where, params = ["workspace_id = %s"], [workspace_id]
        if scope.context_id is not None:
            where.append("context_id = %s")
            params.append(scope.context_id)
        if scope.source_prefix is not None:
            # starts_with, not LIKE: a prefix holding % or _ means itself.
            where.append("starts_with(source_uri, %s)")
            params.append(scope.source_prefix)
        whole_context = scope.source_prefix is None and scope.context_id is not None
        with self.db.transaction(workspace_id) as conn:
            found = conn.execute(
                "SELECT id, context_id, embedding IS NOT NULL AS has_vector FROM memories "
                f"WHERE {' AND '.join(where)} FOR UPDATE",  # type: ignore[arg-type]
                params,
            ).fetchall()
            ids = [row["id"] for row in found]
            contexts = sorted({row["context_id"] for row in found} | set(scope.named_contexts()))
            edges = _count(
                conn,
                "SELECT count(*) AS n FROM memory_edges WHERE workspace_id = %s "
                "AND (source_id = ANY(%s) OR target_id = ANY(%s))",
                (workspace_id, ids, ids),
            )
            feedback = _count(
                conn,
                "SELECT count(*) AS n FROM retrieval_feedback WHERE workspace_id = %s "
                "AND memory_id = ANY(%s)",
                (workspace_id, ids),
            )
            actions = _purge_sleep_actions(conn, workspace_id, contexts, set(ids), whole_context)
            # Edges and feedback go by cascade; the tsvector is a column of the row.
            conn.execute(
                "DELETE FROM memories WHERE workspace_id = %s AND id = ANY(%s)",
                (workspace_id, ids),
            )
            state = requests = 0
            if whole_context:
                state = conn.execute(
                    "DELETE FROM agent_states WHERE workspace_id = %s AND context_id = %s",
                    (workspace_id, scope.context_id),
                ).rowcount
                requests = conn.execute(
                    "DELETE FROM ingest_requests WHERE workspace_id = %s AND context_id = %s",
                    (workspace_id, scope.context_id),
                ).rowcount
            conn.execute(
                "UPDATE contexts SET vector_generation = vector_generation + 1 "
                "WHERE workspace_id = %s AND id = ANY(%s)",
                (workspace_id, contexts),
            )
        return PurgeCounts(
            memories=len(ids),
            vectors=sum(1 for row in found if row["has_vector"]),
            edges=edges,
            feedback=feedback,
            state_keys=state,
            sleep_actions=actions,
            ingest_requests=requests,
        )


def _count(conn: Connection[DictRow], query: LiteralString, params: Sequence[Any]) -> int:
    row = conn.execute(query, params).fetchone()
    return 0 if row is None else int(row["n"])


def _purge_sleep_actions(
    conn: Connection[DictRow],
    workspace_id: str,
    contexts: list[str],
    ids: set[str],
    whole_context: bool,
) -> int:
    """Delete the Sleep log lines naming a purged memory (their before/after hold its text);
    for a whole context, its runs (and their lines) altogether. Returns the lines removed."""
    rows = conn.execute(
        "SELECT a.run_id, a.seq, a.target FROM sleep_actions a JOIN sleep_runs r "
        "ON r.workspace_id = a.workspace_id AND r.id = a.run_id "
        "WHERE r.workspace_id = %s AND r.context_id = ANY(%s)",
        (workspace_id, contexts),
    ).fetchall()
    # An edge's target is "source|target": either end purged takes the line.
    doomed = [
        (row["run_id"], row["seq"])
        for row in rows
        if whole_context or ids.intersection(row["target"].split("|"))
    ]
    if doomed:
        conn.execute(
            "DELETE FROM sleep_actions WHERE workspace_id = %s "
            "AND (run_id, seq) IN (SELECT * FROM unnest(%s::text[], %s::int[]))",
            (workspace_id, [d[0] for d in doomed], [d[1] for d in doomed]),
        )
    if whole_context:
        conn.execute(
            "DELETE FROM sleep_runs WHERE workspace_id = %s AND context_id = ANY(%s)",
            (workspace_id, contexts),
        )
    return len(doomed)
