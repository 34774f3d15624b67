"""API keys and the audit log on SQLite."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime

from kioku.storage.records import ApiKeyRow, AuditEvent, AuditScope, WorkspaceRow
from kioku.storage.sqlite.codec import (
    decode_required_time,
    decode_time,
    encode_optional_time,
    encode_time,
)
from kioku.storage.sqlite.connection import SQLiteDatabase

_KEY_COLUMNS = (
    "id, workspace_id, name, prefix, key_hash, role, context_ids, created_by, created_at, "
    "expires_at, revoked_at, last_used_at"
)


def _key_from_row(row: sqlite3.Row) -> ApiKeyRow:
    return ApiKeyRow(
        id=row["id"],
        workspace_id=row["workspace_id"],
        name=row["name"],
        prefix=row["prefix"],
        key_hash=row["key_hash"],
        role=row["role"],
        context_ids=None if row["context_ids"] is None else json.loads(row["context_ids"]),
        created_by=row["created_by"],
        created_at=decode_required_time(row["created_at"]),
        expires_at=decode_time(row["expires_at"]),
        revoked_at=decode_time(row["revoked_at"]),
        last_used_at=decode_time(row["last_used_at"]),
    )


class SQLiteAccessLane:
    """Mixed into ``SQLiteStore``: workspaces by name, API keys, audit events."""

    db: SQLiteDatabase

    def get_workspace_by_name(self, name: str) -> WorkspaceRow | None:
        row = (
            self.db.connection()
            .execute("SELECT id, name, created_at FROM workspaces WHERE name = ?", (name,))
            .fetchone()
        )
        if row is None:
            return None
        return WorkspaceRow(row["id"], row["name"], decode_required_time(row["created_at"]))

    def list_workspaces(self) -> list[WorkspaceRow]:
        rows = (
            self.db.connection()
            .execute("SELECT id, name, created_at FROM workspaces ORDER BY name")
            .fetchall()
        )
        return [
            WorkspaceRow(r["id"], r["name"], decode_required_time(r["created_at"])) for r in rows
        ]

    def insert_api_key(self, row: ApiKeyRow) -> None:
        with self.db.write() as conn:
            conn.execute(
                f"INSERT INTO api_keys ({_KEY_COLUMNS}) VALUES ({', '.join('?' * 12)})",
                (
                    row.id, row.workspace_id, row.name, row.prefix, row.key_hash, row.role,
                    None if row.context_ids is None else json.dumps(row.context_ids),
                    row.created_by, encode_time(row.created_at),
                    encode_optional_time(row.expires_at), None, None,
                ),
            )  # fmt: skip

    def find_api_key(self, key_hash: str) -> ApiKeyRow | None:
        # Deliberately not workspace-scoped: authentication is how the workspace is learned.
        row = (
            self.db.connection()
            .execute(f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash = ?", (key_hash,))
            .fetchone()
        )
        return None if row is None else _key_from_row(row)

    def list_api_keys(self, workspace_id: str) -> list[ApiKeyRow]:
        rows = (
            self.db.connection()
            .execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE workspace_id = ? "
                "ORDER BY created_at, id",
                (workspace_id,),
            )
            .fetchall()
        )
        return [_key_from_row(row) for row in rows]

    def get_api_key(self, workspace_id: str, key_id: str) -> ApiKeyRow | None:
        row = (
            self.db.connection()
            .execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE workspace_id = ? AND id = ?",
                (workspace_id, key_id),
            )
            .fetchone()
        )
        return None if row is None else _key_from_row(row)

    def revoke_api_key(self, workspace_id: str, key_id: str, now: datetime) -> bool:
        with self.db.write() as conn:
            changed = conn.execute(
                "UPDATE api_keys SET revoked_at = ? "
                "WHERE workspace_id = ? AND id = ? AND revoked_at IS NULL",
                (encode_time(now), workspace_id, key_id),
            ).rowcount
        return bool(changed)

    def touch_api_key(self, key_id: str, now: datetime) -> None:
        with self.db.write() as conn:
            conn.execute(
                "UPDATE api_keys SET last_used_at = ? WHERE id = ?", (encode_time(now), key_id)
            )

    def append_audit(self, event: AuditEvent) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO audit_events (workspace_id, at, actor, channel, action, outcome, "
                "context_id, target, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    event.workspace_id, encode_time(event.at), event.actor, event.channel,
                    event.action, event.outcome, event.context_id, event.target,
                    json.dumps(event.detail, ensure_ascii=False, default=str),
                ),
            )  # fmt: skip

    def list_audit(
        self,
        workspace_id: str | None,
        before_seq: int | None,
        limit: int,
        scope: AuditScope | None = None,
    ) -> list[AuditEvent]:
        where = "workspace_id IS ?" if workspace_id is None else "workspace_id = ?"
        params: list[object] = [workspace_id]
        if before_seq is not None:
            where += " AND seq < ?"
            params.append(before_seq)
        if scope is not None:
            contexts, keys, actors = sorted(scope.context_ids), sorted(scope.key_ids), scope.actors
            where += (
                f" AND (context_id IN ({_marks(contexts)}) OR actor IN ({_marks(actors)})"
                f" OR (context_id IS NULL AND target IN ({_marks(keys)})))"
            )
            params += [*contexts, *actors, *keys]
        rows = (
            self.db.connection()
            .execute(
                f"SELECT * FROM audit_events WHERE {where} ORDER BY seq DESC LIMIT ?",
                (*params, limit),
            )
            .fetchall()
        )
        return [
            AuditEvent(
                workspace_id=r["workspace_id"], at=decode_required_time(r["at"]),
                actor=r["actor"], channel=r["channel"], action=r["action"],
                outcome=r["outcome"], context_id=r["context_id"], target=r["target"],
                detail=json.loads(r["detail"]), seq=r["seq"],
            )
            for r in rows
        ]  # fmt: skip


def _marks(values: list[str]) -> str:
    """Placeholders for an ``IN (...)`` list (SQLite accepts an empty one)."""
    return ", ".join("?" * len(values))
