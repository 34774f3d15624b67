"""The association graph's SQL, written once: ``memory_edges`` reads, and the edge transaction
the write rules (``service/hebbian.py``, ``service/graph_writes.py``) run over.

Graph writes of one workspace are serialized: each write reads the current weights, computes
the new ones in Python and writes them back, so two concurrent recalls strengthening the same
pair must not both read the old weight. SQLite's one write lock does that; PostgreSQL takes a
transaction-scoped advisory lock on the workspace (``lock_graph``), which Sleep's transactions
take too, so both always lock in the same order: graph, then rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from kioku.storage.graph import EdgeEnd, Pair, joint_tier_sql
from kioku.storage.records import EdgeRow
from kioku.storage.shared.database import Database, Dialect, Transaction, record

GRAPH_LOCK = 0x6B696F65  # pg_advisory_xact_lock key space: "kioe"
COLUMNS = (
    "e.workspace_id, e.context_id, e.source_id, e.target_id, e.weight, e.origin, "
    "e.trust_tier, e.created_at, e.updated_at"
)
# Reads report the tier the ends have now (a context's tier can change after an edge is
# written); the stored column is what was true when the edge was last written.
_READ_COLUMNS = (
    "e.workspace_id, e.context_id, e.source_id, e.target_id, e.weight, e.origin, "
    f"{joint_tier_sql('s.trust_tier', 't.trust_tier', 'e.trust_tier')} AS trust_tier, "
    "e.created_at, e.updated_at"
)
_ENDS = (
    "JOIN memories s ON s.id = e.source_id AND s.workspace_id = e.workspace_id "
    "JOIN memories t ON t.id = e.target_id AND t.workspace_id = e.workspace_id"
)


def edge_from_row(d: Dialect, row: Any) -> EdgeRow:
    return record(d, EdgeRow, row, times=("created_at", "updated_at"))


def lock_graph(tx: Transaction, d: Dialect, workspace_id: str) -> None:
    """Serialize graph writes (and Sleep) on this workspace until the transaction ends."""
    if d.workspace_lock:
        tx.execute(d.workspace_lock, (GRAPH_LOCK, workspace_id))


class EdgeSql:
    """``graph.EdgeTransaction`` over one open write transaction of one workspace."""

    def __init__(self, tx: Transaction, d: Dialect, workspace_id: str) -> None:
        self.tx = tx
        self.d = d
        self.ws = workspace_id

    def ends(self, memory_ids: Sequence[str]) -> dict[str, EdgeEnd]:
        # FOR SHARE: a concurrent purge of an end waits until this write commits.
        found: dict[str, EdgeEnd] = {}
        for chunk in self.d.chunks(list(memory_ids)) if memory_ids else ():
            ids, params = self.d.any("id", chunk)
            for row in self.tx.execute(
                "SELECT id, context_id, trust_tier, deleted_at IS NULL AS live FROM memories "
                f"WHERE {self.d.unindexed('workspace_id')} = %s AND {ids}{self.d.for_share}",
                (self.ws, *params),
            ).fetchall():
                found[row["id"]] = EdgeEnd(row["context_id"], row["trust_tier"], bool(row["live"]))
        return found

    def edges_of_pairs(self, pairs: Sequence[Pair]) -> dict[Pair, EdgeRow]:
        found: dict[Pair, EdgeRow] = {}
        for chunk in self.d.chunks(pairs) if pairs else ():
            among, params = self.d.text_pair_in("e.source_id", "e.target_id", chunk)
            for row in self.tx.execute(
                f"SELECT {COLUMNS} FROM memory_edges e WHERE e.workspace_id = %s AND {among}",
                (self.ws, *params),
            ).fetchall():
                edge = edge_from_row(self.d, row)
                found[edge.pair] = edge
        return found

    def edges_of_memory(self, memory_id: str) -> list[EdgeRow]:
        b = self.d.binary
        rows = self.tx.execute(
            f"SELECT {COLUMNS} FROM memory_edges e WHERE e.workspace_id = %s "
            f"AND (e.source_id = %s OR e.target_id = %s) ORDER BY e.source_id{b}, e.target_id{b}",
            (self.ws, memory_id, memory_id),
        ).fetchall()
        return [edge_from_row(self.d, row) for row in rows]

    def upsert(self, rows: Sequence[EdgeRow]) -> None:
        if not rows:
            return
        time = self.d.time
        self.tx.executemany(
            "INSERT INTO memory_edges (workspace_id, context_id, source_id, target_id, weight, "
            "origin, trust_tier, created_at, updated_at) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (workspace_id, source_id, target_id) DO UPDATE SET "
            "weight = excluded.weight, origin = excluded.origin, "
            "trust_tier = excluded.trust_tier, created_at = excluded.created_at, "
            "updated_at = excluded.updated_at",
            [
                (
                    self.ws, r.context_id, r.source_id, r.target_id, r.weight, r.origin,
                    r.trust_tier, time(r.created_at), time(r.updated_at),
                )
                for r in rows
            ],
        )  # fmt: skip

    def delete(self, pairs: Sequence[Pair]) -> None:
        for chunk in self.d.chunks(pairs) if pairs else ():
            among, params = self.d.text_pair_in("source_id", "target_id", chunk)
            self.tx.execute(
                f"DELETE FROM memory_edges WHERE workspace_id = %s AND {among}",
                (self.ws, *params),
            )


class GraphStore(Protocol):
    """The association graph, written once for both backends: the edge transaction the write
    rules (``service/hebbian.py``, ``service/graph_writes.py``) run over, and the reads
    recall and the API need."""

    sql: Database

    @contextmanager
    def edge_transaction(self, workspace_id: str) -> Iterator[EdgeSql]:
        """A write transaction on the workspace's edges, serialized with other graph writes
        (and Sleep)."""
        with self.sql.write(workspace_id) as tx:
            lock_graph(tx, self.sql.dialect, workspace_id)
            yield EdgeSql(tx, self.sql.dialect, workspace_id)

    def list_edges(
        self,
        workspace_id: str,
        context_id: str,
        *,
        after: Pair | None = None,
        limit: int | None = None,
    ) -> list[EdgeRow]:
        """A context's edges by (source_id, target_id), keyset-paginated after ``after``."""
        d = self.sql.dialect
        where = "e.workspace_id = %s AND e.context_id = %s"
        params: list[object] = [workspace_id, context_id]
        if after is not None:
            where += f" AND (e.source_id{d.binary}, e.target_id{d.binary}) > (%s, %s)"
            params.extend(after)
        if limit is not None:
            params.append(limit)
        with self.sql.read(workspace_id) as tx:
            rows = tx.execute(
                f"SELECT {_READ_COLUMNS} FROM memory_edges e {_ENDS} WHERE {where} "
                f"ORDER BY e.source_id{d.binary}, e.target_id{d.binary}"
                + ("" if limit is None else " LIMIT %s"),
                params,
            ).fetchall()
        return [edge_from_row(d, row) for row in rows]

    def feedback_memory_ids(
        self, workspace_id: str, context_id: str, query: str, *, helpful: bool, limit: int
    ) -> list[str]:
        """Memories with (un)helpful feedback for exactly ``query`` in a context, most
        recently judged first: who was co-helpful for one question."""
        with self.sql.read(workspace_id) as tx:
            rows = tx.execute(
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
        """Edges with an end in ``memory_ids`` and ``weight >= min_weight``, by pair;
        ``live_only``: both ends not deleted. ``trust_tier`` is the ends' current tier."""
        d = self.sql.dialect
        live = " AND s.deleted_at IS NULL AND t.deleted_at IS NULL" if live_only else ""
        found: dict[Pair, EdgeRow] = {}
        with self.sql.read(workspace_id) as tx:
            for chunk in d.chunks(sorted(set(memory_ids))) if memory_ids else ():
                sources, params = d.any("e.source_id", chunk)
                targets, more = d.any("e.target_id", chunk)
                for row in tx.execute(
                    f"SELECT {_READ_COLUMNS} FROM memory_edges e {_ENDS} "
                    f"WHERE e.workspace_id = %s AND e.weight >= %s{live} "
                    f"AND ({sources} OR {targets})",
                    (workspace_id, min_weight, *params, *more),
                ).fetchall():
                    edge = edge_from_row(d, row)
                    found[edge.pair] = edge
        return [found[pair] for pair in sorted(found)]
