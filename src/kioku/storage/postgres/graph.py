"""The association graph on PostgreSQL: ``memory_edges`` reads and the write handle of
``kioku.storage.graph`` (whose rules both backends share).

Graph writes of one workspace take a transaction-scoped advisory lock: each write reads the
current weights, computes the new ones in Python and writes them back, so two concurrent
recalls strengthening the same pair must not both read the old weight.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from psycopg import Connection
from psycopg.rows import DictRow

from kioku.storage.graph import EdgeEnd, GraphWrites, Pair
from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.records import EdgeRow

_GRAPH_LOCK = 0x6B696F65  # pg_advisory_xact_lock key space: "kioe"
_COLUMNS = (
    "e.workspace_id, e.context_id, e.source_id, e.target_id, e.weight, e.origin, "
    "e.trust_tier, e.created_at, e.updated_at"
)
# Reads report the tier the ends have now (see the SQLite lane).
_READ_COLUMNS = (
    "e.workspace_id, e.context_id, e.source_id, e.target_id, e.weight, e.origin, "
    "CASE WHEN s.trust_tier = 'external' OR t.trust_tier = 'external' "
    "OR e.trust_tier = 'external' THEN 'external' ELSE 'trusted' END AS trust_tier, "
    "e.created_at, e.updated_at"
)
_ENDS = (
    "JOIN memories s ON s.workspace_id = e.workspace_id AND s.id = e.source_id "
    "JOIN memories t ON t.workspace_id = e.workspace_id AND t.id = e.target_id"
)


def _edge_from_row(row: dict[str, Any]) -> EdgeRow:
    return EdgeRow(**row)


class _PostgresEdgeTransaction:
    def __init__(self, conn: Connection[DictRow], workspace_id: str) -> None:
        self.conn = conn
        self.ws = workspace_id

    def ends(self, memory_ids: Sequence[str]) -> dict[str, EdgeEnd]:
        # FOR SHARE: a concurrent purge of an end waits until this write commits.
        rows = self.conn.execute(
            "SELECT id, context_id, trust_tier, deleted_at IS NULL AS live FROM memories "
            "WHERE workspace_id = %s AND id = ANY(%s) FOR SHARE",
            (self.ws, list(memory_ids)),
        ).fetchall()
        return {r["id"]: EdgeEnd(r["context_id"], r["trust_tier"], r["live"]) for r in rows}

    def edges_of_pairs(self, pairs: Sequence[Pair]) -> dict[Pair, EdgeRow]:
        if not pairs:
            return {}
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memory_edges e "
            "JOIN unnest(%s::text[], %s::text[]) AS p(a, b) "
            "ON e.source_id = p.a AND e.target_id = p.b WHERE e.workspace_id = %s",
            ([a for a, _ in pairs], [b for _, b in pairs], self.ws),
        ).fetchall()
        return {(r["source_id"], r["target_id"]): _edge_from_row(r) for r in rows}

    def edges_of_memory(self, memory_id: str) -> list[EdgeRow]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memory_edges e WHERE e.workspace_id = %s "
            "AND (e.source_id = %s OR e.target_id = %s) "
            'ORDER BY e.source_id COLLATE "C", e.target_id COLLATE "C"',
            (self.ws, memory_id, memory_id),
        ).fetchall()
        return [_edge_from_row(row) for row in rows]

    def upsert(self, rows: Sequence[EdgeRow]) -> None:
        if not rows:
            return
        with self.conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memory_edges (workspace_id, context_id, source_id, target_id, "
                "weight, origin, trust_tier, created_at, updated_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (workspace_id, source_id, target_id) DO UPDATE SET "
                "weight = excluded.weight, origin = excluded.origin, "
                "trust_tier = excluded.trust_tier, created_at = excluded.created_at, "
                "updated_at = excluded.updated_at",
                [
                    (
                        self.ws, r.context_id, r.source_id, r.target_id, r.weight, r.origin,
                        r.trust_tier, r.created_at, r.updated_at,
                    )
                    for r in rows
                ],
            )  # fmt: skip

    def delete(self, pairs: Sequence[Pair]) -> None:
        if not pairs:
            return
        self.conn.execute(
            "DELETE FROM memory_edges e USING unnest(%s::text[], %s::text[]) AS p(a, b) "
            "WHERE e.workspace_id = %s AND e.source_id = p.a AND e.target_id = p.b",
            ([a for a, _ in pairs], [b for _, b in pairs], self.ws),
        )


class PostgresGraphLane(GraphWrites):
    """Mixed into ``PostgresStore``: the association graph."""

    db: PostgresDatabase

    @contextmanager
    def _edge_transaction(self, workspace_id: str) -> Iterator[_PostgresEdgeTransaction]:
        with self.db.transaction(workspace_id) as conn:
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_GRAPH_LOCK, workspace_id)
            )
            yield _PostgresEdgeTransaction(conn, workspace_id)

    def list_edges(
        self,
        workspace_id: str,
        context_id: str,
        *,
        after: Pair | None = None,
        limit: int | None = None,
    ) -> list[EdgeRow]:
        where = "e.workspace_id = %s AND e.context_id = %s"
        params: list[object] = [workspace_id, context_id]
        if after is not None:
            where += ' AND (e.source_id COLLATE "C", e.target_id COLLATE "C") > (%s, %s)'
            params.extend(after)
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                f"SELECT {_READ_COLUMNS} FROM memory_edges e {_ENDS} WHERE {where} "
                'ORDER BY e.source_id COLLATE "C", e.target_id COLLATE "C" LIMIT %s',
                (*params, limit),
            ).fetchall()
        return [_edge_from_row(row) for row in rows]

    def feedback_memory_ids(
        self, workspace_id: str, context_id: str, query: str, *, helpful: bool, limit: int
    ) -> list[str]:
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                "SELECT memory_id, max(seq) AS last FROM retrieval_feedback "
                "WHERE workspace_id = %s AND context_id = %s AND query = %s AND helpful = %s "
                "GROUP BY memory_id ORDER BY last DESC LIMIT %s",
                (workspace_id, context_id, query, helpful, limit),
            ).fetchall()
        return [row["memory_id"] for row in rows]

    def edges_touching(
        self,
        workspace_id: str,
        memory_ids: Sequence[str],
        min_weight: float = 0.0,
        *,
        live_only: bool = True,
    ) -> list[EdgeRow]:
        live = " AND s.deleted_at IS NULL AND t.deleted_at IS NULL" if live_only else ""
        ids = sorted(set(memory_ids))
        with self.db.transaction(workspace_id) as conn:
            rows = conn.execute(
                f"SELECT {_READ_COLUMNS} FROM memory_edges e {_ENDS} "
                f"WHERE e.workspace_id = %s AND e.weight >= %s{live} "
                "AND (e.source_id = ANY(%s) OR e.target_id = ANY(%s)) "
                'ORDER BY e.source_id COLLATE "C", e.target_id COLLATE "C"',
                (workspace_id, min_weight, ids, ids),
            ).fetchall()
        return [_edge_from_row(row) for row in rows]
