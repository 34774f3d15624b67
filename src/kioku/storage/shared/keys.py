"""Workspaces by name, API keys (hashes only) and the append-only audit log."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from kioku.storage.records import ApiKeyRow, AuditEvent, AuditScope, WorkspaceRow
from kioku.storage.shared.database import ALL_WORKSPACES, Database, Dialect, record

_KEY_COLUMNS = (
    "id, workspace_id, name, prefix, key_hash, role, context_ids, created_by, created_at, "
    "expires_at, revoked_at, last_used_at"
)
_AUDIT_COLUMNS = (
    "workspace_id, at, actor, channel, action, outcome, context_id, target, detail, seq"
)


def _key_from_row(d: Dialect, row: Any) -> ApiKeyRow:
    return record(
        d,
        ApiKeyRow,
        row,
        times=("created_at",),
        optional_times=("expires_at", "revoked_at", "last_used_at"),
        json=("context_ids",),
    )


def _audit_from_row(d: Dialect, row: Any) -> AuditEvent:
    return record(d, AuditEvent, row, times=("at",), json=("detail",))


def _workspace(d: Dialect, row: Any) -> WorkspaceRow:
    return record(d, WorkspaceRow, row, times=("created_at",))


class KeyStore(Protocol):
    """Access primitives (workspaces by name, API keys, the audit log), written once for both
    backends."""

    sql: Database

    def get_workspace_by_name(self, name: str) -> WorkspaceRow | None:
        with self.sql.read(ALL_WORKSPACES) as tx:
            row = tx.execute(
                "SELECT id, name, created_at FROM workspaces WHERE name = %s", (name,)
            ).fetchone()
        return None if row is None else _workspace(self.sql.dialect, row)

    def list_workspaces(self) -> list[WorkspaceRow]:
        d = self.sql.dialect
        with self.sql.read(ALL_WORKSPACES) as tx:
            rows = tx.execute(
                f"SELECT id, name, created_at FROM workspaces ORDER BY name{d.binary}"
            ).fetchall()
        return [_workspace(d, row) for row in rows]

    def insert_api_key(self, row: ApiKeyRow) -> None:
        d = self.sql.dialect
        with self.sql.write(row.workspace_id) as tx:
            tx.execute(
                f"INSERT INTO api_keys ({_KEY_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    row.id, row.workspace_id, row.name, row.prefix, row.key_hash, row.role,
                    None if row.context_ids is None else d.json(row.context_ids),
                    row.created_by, d.time(row.created_at), d.time(row.expires_at), None, None,
                ),
            )  # fmt: skip

    def find_api_key(self, key_hash: str) -> ApiKeyRow | None:
        # Deliberately not workspace-scoped: authentication is how the workspace is learned.
        """The key with this SHA-256, in any workspace: authentication is how a caller's
        workspace is learned, so this one lookup is not workspace-scoped."""
        with self.sql.read(ALL_WORKSPACES) as tx:
            row = tx.execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE key_hash = %s", (key_hash,)
            ).fetchone()
        return None if row is None else _key_from_row(self.sql.dialect, row)

    def list_api_keys(self, workspace_id: str) -> list[ApiKeyRow]:
        d = self.sql.dialect
        with self.sql.read(workspace_id) as tx:
            rows = tx.execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE workspace_id = %s "
                f"ORDER BY created_at, id{d.binary}",
                (workspace_id,),
            ).fetchall()
        return [_key_from_row(d, row) for row in rows]

    def get_api_key(self, workspace_id: str, key_id: str) -> ApiKeyRow | None:
        with self.sql.read(workspace_id) as tx:
            row = tx.execute(
                f"SELECT {_KEY_COLUMNS} FROM api_keys WHERE workspace_id = %s AND id = %s",
                (workspace_id, key_id),
            ).fetchone()
        return None if row is None else _key_from_row(self.sql.dialect, row)

    def revoke_api_key(self, workspace_id: str, key_id: str, now: datetime) -> bool:
        with self.sql.write(workspace_id) as tx:
            return bool(
                tx.execute(
                    "UPDATE api_keys SET revoked_at = %s "
                    "WHERE workspace_id = %s AND id = %s AND revoked_at IS NULL",
                    (self.sql.dialect.time(now), workspace_id, key_id),
                ).rowcount
            )

    def touch_api_key(self, key_id: str, now: datetime) -> None:
        with self.sql.write(ALL_WORKSPACES) as tx:
            tx.execute(
                "UPDATE api_keys SET last_used_at = %s WHERE id = %s",
                (self.sql.dialect.time(now), key_id),
            )

    def append_audit(self, event: AuditEvent) -> None:
        d = self.sql.dialect
        # A detail value JSON cannot hold is kept as its text (the dialect's JSON encoding).
        with self.sql.write(event.workspace_id or ALL_WORKSPACES) as tx:
            tx.execute(
                "INSERT INTO audit_events (workspace_id, at, actor, channel, action, outcome, "
                "context_id, target, detail) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    event.workspace_id, d.time(event.at), event.actor, event.channel,
                    event.action, event.outcome, event.context_id, event.target,
                    d.json(event.detail),
                ),
            )  # fmt: skip

    def list_audit(
        self,
        workspace_id: str | None,
        before_seq: int | None,
        limit: int,
        scope: AuditScope | None = None,
    ) -> list[AuditEvent]:
        """Newest first; ``workspace_id=None`` lists the unattributed denials; ``scope``
        keeps only the lines a key with a context allow-list may read."""
        d = self.sql.dialect
        where = "workspace_id IS NULL" if workspace_id is None else "workspace_id = %s"
        params: list[object] = [] if workspace_id is None else [workspace_id]
        if before_seq is not None:
            where += " AND seq < %s"
            params.append(before_seq)
        if scope is not None:
            contexts, c_params = d.any("context_id", sorted(scope.context_ids))
            actors, a_params = d.any("actor", scope.actors)
            keys, k_params = d.any("target", sorted(scope.key_ids))
            where += f" AND ({contexts} OR {actors} OR (context_id IS NULL AND {keys}))"
            params += [*c_params, *a_params, *k_params]
        with self.sql.read(workspace_id or ALL_WORKSPACES) as tx:
            rows = tx.execute(
                f"SELECT {_AUDIT_COLUMNS} FROM audit_events WHERE {where} "
                "ORDER BY seq DESC LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [_audit_from_row(d, r) for r in rows]
