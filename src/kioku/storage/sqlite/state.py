"""The agent state lane on SQLite: a TTL key/value table, upserted, lazily expired."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from kioku.storage.records import StateRow
from kioku.storage.sqlite.codec import (
    decode_required_time,
    decode_time,
    encode_optional_time,
    encode_time,
)
from kioku.storage.sqlite.connection import SQLiteDatabase

_LIVE = "(expires_at IS NULL OR expires_at > ?)"
_COLUMNS = "context_id, key, value, expires_at, created_at, updated_at"


def _state_from_row(row: sqlite3.Row) -> StateRow:
    return StateRow(
        context_id=row["context_id"],
        key=row["key"],
        value=row["value"],
        expires_at=decode_time(row["expires_at"]),
        created_at=decode_required_time(row["created_at"]),
        updated_at=decode_required_time(row["updated_at"]),
    )


class SQLiteStateLane:
    """Mixed into ``SQLiteStore``. Every read filters ``expires_at > now``: expired is absent."""

    db: SQLiteDatabase

    def set_state(
        self,
        workspace_id: str,
        context_id: str,
        key: str,
        value: str,
        expires_at: datetime | None,
        now: datetime,
    ) -> StateRow:
        stamp = encode_time(now)
        with self.db.write() as conn:
            # One statement: concurrent writers serialize on the row, the last one wins, and
            # the primary key makes a second row impossible. Overwriting an expired key starts
            # a new life for it (created_at resets).
            conn.execute(
                "INSERT INTO agent_states (workspace_id, context_id, key, value, expires_at, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (workspace_id, context_id, key) DO UPDATE SET "
                "value = excluded.value, expires_at = excluded.expires_at, "
                "updated_at = excluded.updated_at, created_at = CASE "
                "WHEN agent_states.expires_at IS NOT NULL AND agent_states.expires_at <= "
                "excluded.updated_at THEN excluded.created_at ELSE agent_states.created_at END",
                (
                    workspace_id, context_id, key, value, encode_optional_time(expires_at),
                    stamp, stamp,
                ),
            )  # fmt: skip
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM agent_states "
                "WHERE workspace_id = ? AND context_id = ? AND key = ?",
                (workspace_id, context_id, key),
            ).fetchone()
        return _state_from_row(row)

    def get_state(
        self, workspace_id: str, context_id: str, key: str, now: datetime
    ) -> StateRow | None:
        row = (
            self.db.connection()
            .execute(
                f"SELECT {_COLUMNS} FROM agent_states "
                f"WHERE workspace_id = ? AND context_id = ? AND key = ? AND {_LIVE}",
                (workspace_id, context_id, key, encode_time(now)),
            )
            .fetchone()
        )
        return None if row is None else _state_from_row(row)

    def list_state(
        self,
        workspace_id: str,
        context_id: str,
        now: datetime,
        after_key: str | None,
        limit: int,
    ) -> list[StateRow]:
        where = f"workspace_id = ? AND context_id = ? AND {_LIVE}"
        params: list[object] = [workspace_id, context_id, encode_time(now)]
        if after_key is not None:
            where += " AND key > ?"
            params.append(after_key)
        rows = (
            self.db.connection()
            .execute(
                f"SELECT {_COLUMNS} FROM agent_states WHERE {where} ORDER BY key LIMIT ?",
                (*params, limit),
            )
            .fetchall()
        )
        return [_state_from_row(row) for row in rows]

    def delete_state(self, workspace_id: str, context_id: str, key: str, now: datetime) -> bool:
        with self.db.write() as conn:
            # An expired key is absent: deleting it reports "not found", but the row goes anyway.
            live = conn.execute(
                f"SELECT 1 FROM agent_states WHERE workspace_id = ? AND context_id = ? "
                f"AND key = ? AND {_LIVE}",
                (workspace_id, context_id, key, encode_time(now)),
            ).fetchone()
            conn.execute(
                "DELETE FROM agent_states WHERE workspace_id = ? AND context_id = ? AND key = ?",
                (workspace_id, context_id, key),
            )
        return live is not None

    def sweep_state(self, workspace_id: str | None, context_id: str | None, now: datetime) -> int:
        where = "expires_at IS NOT NULL AND expires_at <= ?"
        params: list[object] = [encode_time(now)]
        if workspace_id is not None:
            where += " AND workspace_id = ?"
            params.append(workspace_id)
        if context_id is not None:
            where += " AND context_id = ?"
            params.append(context_id)
        # Look before taking the write lock: most reads find nothing to sweep.
        found = self.db.connection().execute(
            f"SELECT 1 FROM agent_states WHERE {where} LIMIT 1", params
        )
        if found.fetchone() is None:
            return 0
        with self.db.write() as conn:
            return conn.execute(f"DELETE FROM agent_states WHERE {where}", params).rowcount

    def count_state(self, workspace_id: str, context_id: str, now: datetime) -> int:
        return (
            self.db.connection()
            .execute(
                f"SELECT count(*) FROM agent_states WHERE workspace_id = ? AND context_id = ? "
                f"AND {_LIVE}",
                (workspace_id, context_id, encode_time(now)),
            )
            .fetchone()[0]
        )
