"""Workspaces by name, API keys (hashes only) and the append-only audit log on PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from kioku.storage.postgres.connection import ALL_WORKSPACES, PostgresDatabase
from kioku.storage.records import ApiKeyRow, AuditEvent, AuditScope, WorkspaceRow

_KEY_COLUMNS = (
    "id, workspace_id, name, prefix, key_hash, role, context_ids, created_by, created_at, "
    "expires_at, revoked_at, last_used_at"
)
_KEY_PLACEHOLDERS = "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s"
_AUDIT_COLUMNS = (
    "workspace_id, at, actor, channel, action, outcome, context_id, target, detail, seq"
)


def _key_from_row(row: dict[str, Any]) -> ApiKeyRow:
    return ApiKeyRow(**row)


class PostgresAccessLane:
    """Mixed into ``PostgresStore``: workspaces by name, API keys, audit events."""

    db: PostgresDatabase

    def get_workspace_by_name(self, name: str) -> WorkspaceRow | None:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            row = conn.execute(
                "SELECT id, name, created_at FROM workspaces WHERE name = %s", (name,)
            ).fetchone()
        return None if row is None else WorkspaceRow(**row)

    def list_workspaces(self) -> list[WorkspaceRow]:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            rows = conn.execute(
                'SELECT id, name, created_at FROM workspaces ORDER BY name COLLATE "C"'
            ).fetchall()
        return [WorkspaceRow(**row) for row in rows]

    def insert_api_key(self, row: ApiKeyRow) -> None:
        with self.db.transaction(row.workspace_id) as conn:
            conn.execute(
                f"INSERT INTO api_keys ({_KEY_COLUMNS}) VALUES ({_KEY_PLACEHOLDERS})",
                (
                    row.id, row.workspace_id, row.name, row.prefix, row.key_hash, row.role,
                    None if row.context_ids is None else Jsonb(row.context_ids),
                    row.created_by, row.created_at, row.expires_at, None, None,
                ),
            )  # fmt: skip

    def find_api_key(self, key_hash: str) -> ApiKeyRow | None:
        # Deliberately not workspace-scoped: authentication is how the workspace is learned.
        with self.db.transaction(ALL_WORKSPACES) as conn:
            row = conn.execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash = %s", (key_hash,)
            ).fetchone()
        return None if row is None else _key_from_row(row)

    def list_api_keys(self, workspace_id: str) -> list[ApiKeyRow]:
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE workspace_id = %s "
                'ORDER BY created_at, id COLLATE "C"',
                (workspace_id,),
            ).fetchall()
        return [_key_from_row(row) for row in rows]

    def get_api_key(self, workspace_id: str, key_id: str) -> ApiKeyRow | None:
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE workspace_id = %s AND id = %s",
                (workspace_id, key_id),
            ).fetchone()
        return None if row is None else _key_from_row(row)

    def revoke_api_key(self, workspace_id: str, key_id: str, now: datetime) -> bool:
        with self.db.transaction(workspace_id) as conn:
            return bool(
                conn.execute(
                    "UPDATE api_keys SET revoked_at = %s "
                    "WHERE workspace_id = %s AND id = %s AND revoked_at IS NULL",
                    (now, workspace_id, key_id),
                ).rowcount
            )

    def touch_api_key(self, key_id: str, now: datetime) -> None:
        with self.db.transaction(ALL_WORKSPACES) as conn:
            conn.execute("UPDATE api_keys SET last_used_at = %s WHERE id = %s", (now, key_id))

    def append_audit(self, event: AuditEvent) -> None:
        # default=str, as on SQLite: a detail value JSON cannot hold is kept as its text.
        detail = Jsonb(event.detail, dumps=_dumps)
        with self.db.transaction(event.workspace_id or ALL_WORKSPACES) as conn:
            conn.execute(
                "INSERT INTO audit_events (workspace_id, at, actor, channel, action, outcome, "
                "context_id, target, detail) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    event.workspace_id, event.at, event.actor, event.channel, event.action,
                    event.outcome, event.context_id, event.target, detail,
                ),
            )  # fmt: skip

    def list_audit(
        self,
        workspace_id: str | None,
        before_seq: int | None,
        limit: int,
        scope: AuditScope | None = None,
    ) -> list[AuditEvent]:
        where = "workspace_id IS NOT DISTINCT FROM %s::text"
        params: list[object] = [workspace_id]
        if before_seq is not None:
            where += " AND seq < %s"
            params.append(before_seq)
        if scope is not None:
            where += (
                " AND (context_id = ANY(%s::text[]) OR actor = ANY(%s::text[])"
                " OR (context_id IS NULL AND target = ANY(%s::text[])))"
            )
            params += [sorted(scope.context_ids), scope.actors, sorted(scope.key_ids)]
        with self.db.transaction(workspace_id or ALL_WORKSPACES) as conn:
            rows = conn.execute(
                f"SELECT {_AUDIT_COLUMNS} FROM audit_events WHERE {where} "
                "ORDER BY seq DESC LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [AuditEvent(**row) for row in rows]


def _dumps(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, default=str)
