"""The agent state lane: a TTL key/value table, upserted, lazily expired.

On PostgreSQL ``value`` is a jsonb column: the JSON text given is stored parsed and read back
as PostgreSQL prints it (same value; whitespace and object key order may differ).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from kioku.storage.records import StateRow
from kioku.storage.shared.database import ALL_WORKSPACES, Database, Dialect, record

_LIVE = "(expires_at IS NULL OR expires_at > %s)"


def _columns(d: Dialect) -> str:
    return f"context_id, key, {d.json_text('value')}, expires_at, created_at, updated_at"


def state_from_row(d: Dialect, row: Any) -> StateRow:
    return record(
        d, StateRow, row, times=("created_at", "updated_at"), optional_times=("expires_at",)
    )


class StateStore(Protocol):
    """Agent state primitives, written once for both backends. Expired rows are absent from every
    read."""

    sql: Database

    def set_state(
        self,
        workspace_id: str,
        context_id: str,
        key: str,
        value: str,
        expires_at: datetime | None,
        now: datetime,
    ) -> StateRow:
        """Upsert: last writer wins, never a second row for one key."""
        d = self.sql.dialect
        with self.sql.write(workspace_id) as tx:
            # One statement: concurrent writers serialize on the row, the last one wins, and
            # the primary key makes a second row impossible. Overwriting an expired key starts
            # a new life for it (created_at resets).
            row = tx.execute(
                "INSERT INTO agent_states (workspace_id, context_id, key, value, expires_at, "
                f"created_at, updated_at) VALUES (%s, %s, %s, {d.json_param}, %s, %s, %s) "
                "ON CONFLICT (workspace_id, context_id, key) DO UPDATE SET "
                "value = excluded.value, expires_at = excluded.expires_at, "
                "updated_at = excluded.updated_at, created_at = CASE "
                "WHEN agent_states.expires_at IS NOT NULL AND agent_states.expires_at <= "
                "excluded.updated_at THEN excluded.created_at ELSE agent_states.created_at END "
                f"RETURNING {_columns(d)}",
                (
                    workspace_id, context_id, key, value, d.time(expires_at), d.time(now),
                    d.time(now),
                ),
            ).fetchone()  # fmt: skip
        return state_from_row(d, row)

    def get_state(
        self, workspace_id: str, context_id: str, key: str, now: datetime
    ) -> StateRow | None:
        d = self.sql.dialect
        with self.sql.read(workspace_id) as tx:
            row = tx.execute(
                f"SELECT {_columns(d)} FROM agent_states "
                f"WHERE workspace_id = %s AND context_id = %s AND key = %s AND {_LIVE}",
                (workspace_id, context_id, key, d.time(now)),
            ).fetchone()
        return None if row is None else state_from_row(d, row)

    def list_state(
        self,
        workspace_id: str,
        context_id: str,
        now: datetime,
        after_key: str | None,
        limit: int,
    ) -> list[StateRow]:
        """Live keys in key order, keyset-paginated."""
        d = self.sql.dialect
        where = f"workspace_id = %s AND context_id = %s AND {_LIVE}"
        params: list[object] = [workspace_id, context_id, d.time(now)]
        if after_key is not None:
            where += f" AND key{d.binary} > %s"
            params.append(after_key)
        with self.sql.read(workspace_id) as tx:
            rows = tx.execute(
                f"SELECT {_columns(d)} FROM agent_states WHERE {where} "
                f"ORDER BY key{d.binary} LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [state_from_row(d, row) for row in rows]

    def delete_state(self, workspace_id: str, context_id: str, key: str, now: datetime) -> bool:
        # An expired key is absent: deleting it reports "not found", but the row goes anyway.
        # (The column, not an expression of it: SQLite 3.40 returns a wrong ``IS NULL`` here.)
        """Remove a key; ``False`` if it was absent or already expired."""
        d = self.sql.dialect
        with self.sql.write(workspace_id) as tx:
            row = tx.execute(
                "DELETE FROM agent_states WHERE workspace_id = %s AND context_id = %s "
                "AND key = %s RETURNING expires_at",
                (workspace_id, context_id, key),
            ).fetchone()
        if row is None:
            return False
        expires_at = d.read_optional_time(row["expires_at"])
        return expires_at is None or expires_at > now

    def sweep_state(self, workspace_id: str | None, context_id: str | None, now: datetime) -> int:
        """Delete expired rows (of one context, one workspace, or all); returns how many."""
        where = "expires_at IS NOT NULL AND expires_at <= %s"
        params: list[object] = [self.sql.dialect.time(now)]
        if workspace_id is not None:
            where += " AND workspace_id = %s"
            params.append(workspace_id)
        if context_id is not None:
            where += " AND context_id = %s"
            params.append(context_id)
        scope = workspace_id or ALL_WORKSPACES
        if self.sql.dialect.exclusive_writes:
            # Look before taking the write lock: most reads find nothing to sweep.
            with self.sql.read(scope) as tx:
                found = tx.execute(f"SELECT 1 FROM agent_states WHERE {where} LIMIT 1", params)
                if found.fetchone() is None:
                    return 0
        with self.sql.write(scope) as tx:
            return tx.execute(f"DELETE FROM agent_states WHERE {where}", params).rowcount
