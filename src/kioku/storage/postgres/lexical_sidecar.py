"""The PostgreSQL lexical leg in a large scope: candidates from this replica's tantivy index,
scores from PostgreSQL (issue 21).

When a search's scope (the workspace's searched contexts) holds at least ``min_memories``
live memories and the filter narrows nothing but the trust tier (``MemoryFilter.is_narrowing``;
the index holds each memory's tier), the leg:

1. asks the workspace's index (``lexical_index.WorkspaceIndex``) for the best
   ``max(MIN_DEPTH, DEPTH_FACTOR x limit)`` memories of those contexts (and that tier)
   holding a query term (tantivy's BM25 over the whole workspace: it only proposes);
2. adds every memory of the workspace whose searchable text changed at or after the index's
   horizon (``lexical_xid``, migration 0017), read from the database in the same transaction:
   a memory written a moment ago is a candidate on every replica, before any sync;
3. scores all of them with the leg's exact BM25 statement (the scope's statistics, the same
   filter, ties by id) and keeps the top ``limit``.

The scores are exact; the candidate set is not proven complete (a memory outside tantivy's
top N could in principle enter the top ``limit``). Measured at a million memories in one
context: the top 10 and top 40 equal exact BM25's on 400 of 400 LoCoMo questions
(docs/benchmarks-postgres-scale.md). The GIN leg answers instead while the index is being
built (in the background, when a search first needs it), when more than ``FRESH_MAX``
memories changed since its horizon (a bulk load the sync has not caught up with), when the
filter narrows by anything but the tier (tantivy's top N could then hold too few that pass),
and when the deleted memories are searched too.

Each replica keeps its own indexes in memory and syncs them on one background thread
(``shared/lexical_sidecar.py``; ``PostgresIndexSource`` is how they read the database);
nothing is shared between replicas but the database.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import Any, LiteralString

from psycopg import Connection
from psycopg.rows import DictRow

from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.postgres.lexical_scoring import EXACT_SCORE, K1, B, top_scored
from kioku.storage.shared import lexical_sidecar as shared
from kioku.storage.shared.lexical_index import IndexedRow, WorkspaceIndex
from kioku.storage.shared.lexical_sidecar import DEPTH_FACTOR, FRESH_MAX, MIN_DEPTH, MIN_MEMORIES

__all__ = ["FRESH_MAX", "MIN_MEMORIES", "LexicalSidecar", "ScopedQuery"]

_BODY = (
    "coalesce((SELECT string_agg(repeat(replace(u.lexeme, ' ', chr(31)) || ' ', "
    "greatest(cardinality(u.positions), 1)), '') FROM unnest(m.lexical_tokens) u), '')"
)
"""A memory's tokens as the index's text: each lexeme tf times (as the leg counts tf)."""
_HORIZON = "SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS horizon"
_SYNCED = (
    "SELECT m.id AS key, m.context_id, m.trust_tier, m.deleted_at IS NULL AS live, "
    f"{_BODY} AS body FROM memories m WHERE m.workspace_id = %s AND"
)
"""A snapshot's read of rows (the condition follows): what the index adds, and liveness."""


class _PostgresSnapshot:
    """One REPEATABLE READ transaction of a workspace (``lexical_index.Snapshot``); its
    horizon is ``pg_snapshot_xmin``: every transaction below it had ended."""

    def __init__(self, conn: Connection[DictRow], workspace_id: str) -> None:
        self.conn, self.workspace_id = conn, workspace_id
        self.horizon = int(conn.execute(_HORIZON).fetchone()["horizon"])  # type: ignore[index]

    def live(self) -> Iterator[IndexedRow]:
        yield from self._stream(f"{_SYNCED} m.deleted_at IS NULL", ())

    def changed(self, since: int, named: Sequence[str]) -> Iterator[IndexedRow]:
        rows = self.conn.execute(
            f"{_SYNCED} m.id = ANY(%s::text[]) "
            "AND (m.lexical_xid IS NULL OR m.lexical_xid < %s::xid8)",
            (self.workspace_id, list(named), str(since)),
        ).fetchall() if named else []  # fmt: skip
        changed = self._stream(f"{_SYNCED} m.lexical_xid >= %s::xid8 ORDER BY m.lexical_xid",
                               (str(since),))  # fmt: skip
        yield from chain(rows, changed)

    def _stream(self, sql: str, params: tuple[Any, ...]) -> Iterator[IndexedRow]:
        cursor = self.conn.cursor(name="kioku_lexical_index")  # streamed: a bulk load is large
        cursor.itersize = 5000
        cursor.execute(sql, (self.workspace_id, *params))  # type: ignore[arg-type]
        yield from cursor
        cursor.close()


class PostgresIndexSource:
    """``lexical_index.IndexSource`` on PostgreSQL."""

    def __init__(self, db: PostgresDatabase) -> None:
        self.db = db

    @contextmanager
    def snapshot(self, workspace_id: str) -> Iterator[_PostgresSnapshot]:
        with self.db.transaction(workspace_id, snapshot=True) as conn:
            yield _PostgresSnapshot(conn, workspace_id)


CHANGED_SINCE: LiteralString = (
    "SELECT m.id FROM memories m WHERE m.workspace_id = %s AND m.lexical_xid >= %s::xid8 "
    # In the index's order: the planner walks ix_memories_lexical_xid and stops at once, even
    # where its statistics would guess that a third of the table qualifies and scan it all.
    "ORDER BY m.lexical_xid LIMIT %s"
)
"""The memories of a workspace changed at or after a horizon (at most a limit of them)."""


@dataclass(frozen=True)
class ScopedQuery:
    """One lexical search as the leg has prepared it: the scope's contexts, the query's
    lexemes and their idfs (the scope's statistics), avgdl, the filter's WHERE clause over
    ``m`` and its parameters, the rows wanted, and the trust tier the filter names."""

    context_ids: Sequence[str]
    terms: list[str]
    weights: list[float]
    avgdl: float
    where: LiteralString
    params: Sequence[Any]
    limit: int
    trust_tier: str | None = None


class LexicalSidecar(shared.LexicalSidecar):
    """This replica's indexes (``shared/lexical_sidecar.py``), answering PostgreSQL's leg."""

    def __init__(
        self, db: PostgresDatabase, min_memories: int = MIN_MEMORIES,
        interval: float = shared.SYNC_INTERVAL,
    ) -> None:  # fmt: skip
        super().__init__(PostgresIndexSource(db), min_memories, interval)
        self.db = db

    def answer(
        self, conn: Connection[DictRow], workspace_id: str, query: ScopedQuery
    ) -> list[tuple[str, float]] | None:
        """``search`` on the workspace's index once built (else ``None``: the GIN leg
        answers), counted in ``answered``."""
        return self.consult(workspace_id, lambda index: self.search(conn, index, query))

    def search(
        self, conn: Connection[DictRow], index: WorkspaceIndex, query: ScopedQuery
    ) -> list[tuple[str, float]] | None:
        """The top ``limit`` (id, exact BM25 score) of the scope, or ``None`` when the GIN leg
        must answer (too much changed since the index's horizon)."""
        view = index.view
        if view is None:
            return None
        ws = index.workspace_id
        fresh = conn.execute(CHANGED_SINCE, (ws, str(view.horizon), FRESH_MAX + 1)).fetchall()
        if len(fresh) > FRESH_MAX:
            return None
        terms, limit = query.terms, query.limit
        depth = max(MIN_DEPTH, int(DEPTH_FACTOR * limit))
        proposed = index.top(view, terms, query.context_ids, depth, query.trust_tier)
        candidates = sorted({*proposed, *(row["id"] for row in fresh)})
        if not candidates:
            return []
        rows = conn.execute(
            "WITH w AS (SELECT %s::text[] AS terms, %s::float8[] AS idf) "
            f"SELECT m.id, ({query.where}) AS passes, {EXACT_SCORE} AS score "
            "FROM memories m, w WHERE m.workspace_id = %s AND m.id = ANY(%s::text[])",
            (terms, query.weights, *query.params, K1 + 1, K1, B, B,
             query.avgdl if query.avgdl > 0 else 1.0, ws, candidates),
        ).fetchall()  # fmt: skip
        gone = set(proposed) - {row["id"] for row in rows}
        if gone:  # deleted outright since the index read them
            index.forget(gone)
        scored = {row["id"]: float(row["score"]) for row in rows
                  if row["passes"] and row["score"] is not None}  # fmt: skip
        return top_scored(scored, limit)
