"""The agent state lane on PostgreSQL: a TTL key/value table, upserted, lazily expired.

``value`` is a jsonb column: the JSON text given is stored parsed and read back as
PostgreSQL prints it (same value; whitespace and object key order may differ from the input).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kioku.storage.postgres.connection import ALL_WORKSPACES, PostgresDatabase
from kioku.storage.records import StateRow

_LIVE = "(expires_at IS NULL OR expires_at > %s)"
_COLUMNS = "context_id, key, value::text AS value, expires_at, created_at, updated_at"


def _state_from_row(row: dict[str, Any]) -> StateRow:
    return StateRow(**row)


class PostgresStateLane:
    """Mixed into ``PostgresStore``. Every read filters ``expires_at > now``: expired is absent."""

    db: PostgresDatabase

    def set_state(
        self,
        workspace_id: str,
        context_id: str,
        key: str,
        value: str,
        expires_at: datetime | None,
        now: datetime,
    ) -> StateRow:
        with self.db.transaction(workspace_id) as conn:
            # One statement: concurrent writers serialize on the row, the last one wins, and
            # the primary key makes a second row impossible. Overwriting an expired key starts
            # a new life for it (created_at resets).
            row = conn.execute(
                "INSERT INTO agent_states (workspace_id, context_id, key, value, expires_at, "
                "created_at, updated_at) VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s) "
                "ON CONFLICT (workspace_id, context_id, key) DO UPDATE SET "
                "value = excluded.value, expires_at = excluded.expires_at, "
                "updated_at = excluded.updated_at, created_at = CASE "
                "WHEN agent_states.expires_at IS NOT NULL AND agent_states.expires_at <= "
                "excluded.updated_at THEN excluded.created_at ELSE agent_states.created_at END "
                f"RETURNING {_COLUMNS}",
                (workspace_id, context_id, key, value, expires_at, now, now),
            ).fetchone()
        assert row is not None
        return _state_from_row(row)

    def get_state(
        self, workspace_id: str, context_id: str, key: str, now: datetime
    ) -> StateRow | None:
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM agent_states "
                f"WHERE workspace_id = %s AND context_id = %s AND key = %s AND {_LIVE}",
                (workspace_id, context_id, key, now),
            ).fetchone()
        return None if row is None else _state_from_row(row)

    def list_state(
        self,
        workspace_id: str,
        context_id: str,
        now: datetime,
        after_key: str | None,
        limit: int,
    ) -> list[StateRow]:
        where = f"workspace_id = %s AND context_id = %s AND {_LIVE}"
        params: list[object] = [workspace_id, context_id, now]
        if after_key is not None:
            where += ' AND key COLLATE "C" > %s'
            params.append(after_key)
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM agent_states WHERE {where} "
                'ORDER BY key COLLATE "C" LIMIT %s',
                (*params, limit),
            ).fetchall()
        return [_state_from_row(row) for row in rows]

    def delete_state(self, workspace_id: str, context_id: str, key: str, now: datetime) -> bool:
        # An expired key is absent: deleting it reports "not found", but the row goes anyway.
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(
                "DELETE FROM agent_states WHERE workspace_id = %s AND context_id = %s "
                "AND key = %s RETURNING (expires_at IS NULL OR expires_at > %s) AS live",
                (workspace_id, context_id, key, now),
            ).fetchone()
        return row is not None and bool(row["live"])

    def sweep_state(self, workspace_id: str | None, context_id: str | None, now: datetime) -> int:
        where = "expires_at IS NOT NULL AND expires_at <= %s"
        params: list[object] = [now]
        if workspace_id is not None:
            where += " AND workspace_id = %s"
            params.append(workspace_id)
        if context_id is not None:
            where += " AND context_id = %s"
            params.append(context_id)
        with self.db.transaction(workspace_id or ALL_WORKSPACES) as conn:
            return conn.execute(f"DELETE FROM agent_states WHERE {where}", params).rowcount

    def count_state(self, workspace_id: str, context_id: str, now: datetime) -> int:
        with self.db.transaction(workspace_id) as conn:
            row = conn.execute(
                "SELECT count(*) AS n FROM agent_states WHERE workspace_id = %s "
                f"AND context_id = %s AND {_LIVE}",
                (workspace_id, context_id, now),
            ).fetchone()
        assert row is not None
        return row["n"]
