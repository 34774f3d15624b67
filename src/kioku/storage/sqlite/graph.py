"""The association graph on SQLite: ``memory_edges`` reads and the write handle of
``kioku.storage.graph`` (whose rules both backends share)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from kioku.storage.graph import EdgeEnd, GraphWrites, Pair
from kioku.storage.records import EdgeRow
from kioku.storage.sqlite.codec import decode_required_time, encode_time
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.filters import chunked, placeholders

_COLUMNS = (
    "e.workspace_id, e.context_id, e.source_id, e.target_id, e.weight, e.origin, "
    "e.trust_tier, e.created_at, e.updated_at"
)
# Reads report the tier the ends have now (a context's tier can change after an edge is
# written); the stored column is what was true when the edge was last written.
_READ_COLUMNS = (
    "e.workspace_id, e.context_id, e.source_id, e.target_id, e.weight, e.origin, "
    "CASE WHEN s.trust_tier = 'external' OR t.trust_tier = 'external' "
    "OR e.trust_tier = 'external' THEN 'external' ELSE 'trusted' END AS trust_tier, "
    "e.created_at, e.updated_at"
)
_ENDS = (
    "JOIN memories s ON s.id = e.source_id AND s.workspace_id = e.workspace_id "
    "JOIN memories t ON t.id = e.target_id AND t.workspace_id = e.workspace_id"
)


def _edge_from_row(row: sqlite3.Row) -> EdgeRow:
    return EdgeRow(
        workspace_id=row["workspace_id"],
        context_id=row["context_id"],
        source_id=row["source_id"],
        target_id=row["target_id"],
        weight=row["weight"],
        origin=row["origin"],
        trust_tier=row["trust_tier"],
        created_at=decode_required_time(row["created_at"]),
        updated_at=decode_required_time(row["updated_at"]),
    )


class _SQLiteEdgeTransaction:
    def __init__(self, conn: sqlite3.Connection, workspace_id: str) -> None:
        self.conn = conn
        self.ws = workspace_id

    def ends(self, memory_ids: Sequence[str]) -> dict[str, EdgeEnd]:
        found: dict[str, EdgeEnd] = {}
        for chunk in chunked(list(memory_ids)):
            for row in self.conn.execute(
                "SELECT id, context_id, trust_tier, deleted_at FROM memories "
                f"WHERE +workspace_id = ? AND id IN ({placeholders(chunk)})",
                (self.ws, *chunk),
            ):
                found[row[0]] = EdgeEnd(row[1], row[2], row[3] is None)
        return found

    def edges_of_pairs(self, pairs: Sequence[Pair]) -> dict[Pair, EdgeRow]:
        found: dict[Pair, EdgeRow] = {}
        for pair in pairs:
            row = self.conn.execute(
                f"SELECT {_COLUMNS} FROM memory_edges e "
                "WHERE e.workspace_id = ? AND e.source_id = ? AND e.target_id = ?",
                (self.ws, *pair),
            ).fetchone()
            if row is not None:
                found[pair] = _edge_from_row(row)
        return found

    def edges_of_memory(self, memory_id: str) -> list[EdgeRow]:
        rows = self.conn.execute(
            f"SELECT {_COLUMNS} FROM memory_edges e WHERE e.workspace_id = ? "
            "AND (e.source_id = ? OR e.target_id = ?) ORDER BY e.source_id, e.target_id",
            (self.ws, memory_id, memory_id),
        ).fetchall()
        return [_edge_from_row(row) for row in rows]

    def upsert(self, rows: Sequence[EdgeRow]) -> None:
        self.conn.executemany(
            "INSERT INTO memory_edges (workspace_id, context_id, source_id, target_id, weight, "
            "origin, trust_tier, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (workspace_id, source_id, target_id) DO UPDATE SET "
            "weight = excluded.weight, origin = excluded.origin, "
            "trust_tier = excluded.trust_tier, created_at = excluded.created_at, "
            "updated_at = excluded.updated_at",
            [
                (
                    self.ws, r.context_id, r.source_id, r.target_id, r.weight, r.origin,
                    r.trust_tier, encode_time(r.created_at), encode_time(r.updated_at),
                )
                for r in rows
            ],
        )  # fmt: skip

    def delete(self, pairs: Sequence[Pair]) -> None:
        self.conn.executemany(
            "DELETE FROM memory_edges WHERE workspace_id = ? AND source_id = ? AND target_id = ?",
            [(self.ws, a, b) for a, b in pairs],
        )


class SQLiteGraphLane(GraphWrites):
    """Mixed into ``SQLiteStore``: the association graph."""

    db: SQLiteDatabase

    @contextmanager
    def _edge_transaction(self, workspace_id: str) -> Iterator[_SQLiteEdgeTransaction]:
        with self.db.write() as conn:
            yield _SQLiteEdgeTransaction(conn, workspace_id)

    def list_edges(
        self,
        workspace_id: str,
        context_id: str,
        *,
        after: Pair | None = None,
        limit: int | None = None,
    ) -> list[EdgeRow]:
        where = "e.workspace_id = ? AND e.context_id = ?"
        params: list[object] = [workspace_id, context_id]
        if after is not None:
            where += " AND (e.source_id, e.target_id) > (?, ?)"
            params.extend(after)
        rows = (
            self.db.connection()
            .execute(
                f"SELECT {_READ_COLUMNS} FROM memory_edges e {_ENDS} WHERE {where} "
                "ORDER BY e.source_id, e.target_id LIMIT ?",
                (*params, -1 if limit is None else limit),
            )
            .fetchall()
        )
        return [_edge_from_row(row) for row in rows]

    def feedback_memory_ids(
        self, workspace_id: str, context_id: str, query: str, *, helpful: bool, limit: int
    ) -> list[str]:
        rows = (
            self.db.connection()
            .execute(
                "SELECT memory_id, max(seq) AS last FROM retrieval_feedback "
                "WHERE workspace_id = ? AND context_id = ? AND query = ? AND helpful = ? "
                "GROUP BY memory_id ORDER BY last DESC LIMIT ?",
                (workspace_id, context_id, query, int(helpful), limit),
            )
            .fetchall()
        )
        return [row[0] for row in rows]

    def edges_touching(
        self,
        workspace_id: str,
        memory_ids: Sequence[str],
        min_weight: float = 0.0,
        *,
        live_only: bool = True,
    ) -> list[EdgeRow]:
        live = " AND s.deleted_at IS NULL AND t.deleted_at IS NULL" if live_only else ""
        found: dict[Pair, EdgeRow] = {}
        conn = self.db.connection()
        for chunk in chunked(sorted(set(memory_ids)), 250):
            marks = placeholders(chunk)
            rows = conn.execute(
                f"SELECT {_READ_COLUMNS} FROM memory_edges e {_ENDS} "
                f"WHERE e.workspace_id = ? AND e.weight >= ?{live} "
                f"AND (e.source_id IN ({marks}) OR e.target_id IN ({marks}))",
                (workspace_id, min_weight, *chunk, *chunk),
            ).fetchall()
            for row in rows:
                edge = _edge_from_row(row)
                found[edge.pair] = edge
        return [found[pair] for pair in sorted(found)]
