"""Workspaces and contexts: create, read, rename or retune, delete, count (``stats``)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from kioku.errors import ConflictError
from kioku.storage.records import ContextCounts, ContextRow, WorkspaceRow
from kioku.storage.shared.database import ALL_WORKSPACES, Database, record
from kioku.storage.shared.rows import context_from_row, encode_column

CONTEXT_COLUMNS = {"name", "description", "trust_tier", "sleep_mode", "search_config"}
"""What ``update_context`` may change."""

_COUNTS = """
SELECT
    count(*) FILTER (WHERE deleted_at IS NULL AND superseded_by IS NULL) AS live,
    count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted,
    count(*) FILTER (WHERE deleted_at IS NULL AND superseded_by IS NOT NULL) AS superseded,
    count(*) FILTER (WHERE deleted_at IS NULL AND delivery_mode = 'always') AS pinned,
    count(*) FILTER (WHERE deleted_at IS NULL AND delivery_mode = 'on_trigger') AS triggered,
    count(*) FILTER (WHERE deleted_at IS NULL AND trust_tier = 'external') AS external,
    count(*) FILTER (WHERE deleted_at IS NULL AND embedding_status = 'ready') AS ready,
    count(*) FILTER (WHERE deleted_at IS NULL AND embedding_status = 'pending') AS pending,
    count(*) FILTER (WHERE deleted_at IS NULL AND embedding_status = 'failed') AS failed,
    (SELECT count(*) FROM agent_states s WHERE s.workspace_id = %s
        AND s.context_id = %s AND (s.expires_at IS NULL OR s.expires_at > %s)) AS state_keys,
    (SELECT count(*) FROM retrieval_feedback f WHERE f.workspace_id = %s
        AND f.context_id = %s AND f.helpful) AS helpful,
    (SELECT count(*) FROM retrieval_feedback f WHERE f.workspace_id = %s
        AND f.context_id = %s AND NOT f.helpful) AS unhelpful
FROM memories WHERE workspace_id = %s AND context_id = %s
"""
"""Aggregates only, no text read (SQLite stores ``helpful`` as 0/1, which reads as truth)."""


_LANES = (
    "live", "deleted", "superseded", "pinned", "triggered", "external", "state_keys", "helpful",
    "unhelpful",
)  # fmt: skip


def _conflict(name: object) -> ConflictError:
    return ConflictError(f"a context named {name!r} already exists", field="name")


class ContextStore(Protocol):
    """Workspace and context primitives, written once for both backends."""

    sql: Database

    def _vectors_changed(self, context_ids: Sequence[str]) -> None:
        """After a write committed: a backend with vector caches drops these contexts' (the
        backend class defines it, so it runs whatever the order of the areas it mixes)."""

    def ensure_workspace(self, name: str) -> WorkspaceRow:
        """Return the workspace called ``name``, creating it if missing."""
        d = self.sql.dialect
        select = "SELECT id, name, created_at FROM workspaces WHERE name = %s"
        with self.sql.write(ALL_WORKSPACES) as tx:
            # Look first where a write takes the one write lock; ON CONFLICT: two first-time
            # callers racing both get the one row.
            row = tx.execute(select, (name,)).fetchone() if d.exclusive_writes else None
            if row is None:
                tx.execute(
                    "INSERT INTO workspaces (id, name, created_at) VALUES (%s, %s, %s) "
                    "ON CONFLICT (name) DO NOTHING",
                    (str(uuid.uuid4()), name, d.time(datetime.now(UTC))),
                )
                row = tx.execute(select, (name,)).fetchone()
        return record(d, WorkspaceRow, row, times=("created_at",))

    def insert_context(self, workspace_id: str, row: ContextRow) -> ContextRow:
        """Insert a context; raises ``ConflictError`` on a duplicate name."""
        d = self.sql.dialect
        try:
            with self.sql.write(workspace_id) as tx:
                tx.execute(
                    "INSERT INTO contexts (id, workspace_id, name, description, trust_tier, "
                    "sleep_mode, search_config, created_at, updated_at, connector_id) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        row.id, workspace_id, row.name, row.description, row.trust_tier,
                        row.sleep_mode, d.json(row.search_config), d.time(row.created_at),
                        d.time(row.updated_at), row.connector_id,
                    ),
                )  # fmt: skip
        except Exception as exc:
            if d.unique_violation(exc):
                raise _conflict(row.name) from exc
            raise
        created = self.get_context(workspace_id, row.id)
        assert created is not None
        return created

    def get_context(self, workspace_id: str, context_id: str) -> ContextRow | None:
        rows = _contexts(self.sql, workspace_id, " AND c.id = %s", (context_id,))
        return rows[0] if rows else None

    def get_context_by_name(self, workspace_id: str, name: str) -> ContextRow | None:
        rows = _contexts(self.sql, workspace_id, " AND c.name = %s", (name,))
        return rows[0] if rows else None

    def list_contexts(self, workspace_id: str) -> list[ContextRow]:
        """By name (code point order), each with its live memory count."""
        return _contexts(self.sql, workspace_id, "", (), with_count=True)

    def update_context(
        self, workspace_id: str, context_id: str, values: dict[str, Any], now: datetime
    ) -> ContextRow | None:
        unknown = set(values) - CONTEXT_COLUMNS
        if unknown:
            raise ValueError(f"not context columns: {sorted(unknown)}")
        d = self.sql.dialect
        if values:
            sets = ", ".join(f"{column} = %s" for column in values)
            params = [encode_column(d, c, v) for c, v in values.items()]
            try:
                with self.sql.write(workspace_id) as tx:
                    tx.execute(
                        f"UPDATE contexts SET {sets}, updated_at = %s "
                        "WHERE workspace_id = %s AND id = %s",
                        (*params, d.time(now), workspace_id, context_id),
                    )
                    if "trust_tier" in values:
                        # A memory's tier follows its context; tainted text stays external.
                        tx.execute(
                            "UPDATE memories SET trust_tier = CASE WHEN tainted OR source_type "
                            "= 'connector' THEN 'external' ELSE %s END "
                            "WHERE workspace_id = %s AND context_id = %s",
                            (values["trust_tier"], workspace_id, context_id),
                        )
            except Exception as exc:
                if d.unique_violation(exc):
                    raise _conflict(values.get("name")) from exc
                raise
        return self.get_context(workspace_id, context_id)

    def delete_context(self, workspace_id: str, context_id: str) -> bool:
        """Hard-delete a context and everything in it."""
        with self.sql.write(workspace_id) as tx:
            deleted = tx.execute(
                "DELETE FROM contexts WHERE workspace_id = %s AND id = %s",
                (workspace_id, context_id),
            ).rowcount
        if deleted:
            self._vectors_changed([context_id])
        return bool(deleted)

    def context_counts(self, workspace_id: str, context_id: str, now: datetime) -> ContextCounts:
        """Rows per lane of one context, for ``stats``."""
        scope = (workspace_id, context_id)
        with self.sql.read(workspace_id) as tx:
            counts = tx.execute(
                _COUNTS, (*scope, self.sql.dialect.time(now), *scope, *scope, *scope)
            ).fetchone()
        embedding = {status: counts[status] for status in ("ready", "pending", "failed")}
        return ContextCounts(**{lane: counts[lane] for lane in _LANES}, embedding=embedding)


def _contexts(
    sql: Database,
    workspace_id: str,
    where: str,
    params: tuple[Any, ...],
    *,
    with_count: bool = False,
) -> list[ContextRow]:
    """The workspace's contexts that ``where`` (`` AND …``, or empty) lets through, by name."""
    # Counting scans a context's index entries: only listings ask for it, not every resolve.
    count = (
        ", (SELECT count(*) FROM memories m WHERE m.workspace_id = c.workspace_id "
        "AND m.context_id = c.id AND m.deleted_at IS NULL) AS memory_count"
        if with_count
        else ""
    )
    with sql.read(workspace_id) as tx:
        rows = tx.execute(
            f"SELECT c.*{count} FROM contexts c WHERE c.workspace_id = %s{where} "
            f"ORDER BY c.name{sql.dialect.binary}",
            (workspace_id, *params),
        ).fetchall()
    d = sql.dialect
    return [context_from_row(d, row, row["memory_count"] if with_count else None) for row in rows]
