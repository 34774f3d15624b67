"""The SQLite lexical leg in a large scope: candidates from this process's tantivy index,
scores from FTS5's statistics and the stored tokens.

FTS5 answers ``MATCH 't1 OR t2 ...' ORDER BY rank`` by computing ``bm25()`` for every row
holding a term; at 100,000 memories even the common-terms cutoff (``bm25.py``) leaves that the
slowest part of a recall. When the workspace's table holds at least ``min_memories`` rows and
the filter narrows nothing but the trust tier, the leg instead:

1. asks the workspace's index (``shared/lexical_index.WorkspaceIndex``, keyed by ``seq``) for
   the best ``max(MIN_DEPTH, DEPTH_FACTOR x limit)`` memories of the searched contexts (and
   tier) holding a query term (tantivy's block-max WAND over its own BM25: it only proposes);
2. adds every memory of the workspace changed after the index's horizon (``lexical_change``,
   migration 0020): a memory written a moment ago, by this process or another, is a
   candidate before any sync;
3. keeps those the filter passes and scores them with the leg's own BM25 (``bm25.rescore``:
   kioku's constants, FTS5's statistics), ties by id.

The scores are the FTS5 leg's; the candidate set is not proven complete, but neither is the
cutoff's, and it is closer to exact: measured at 100,000 memories (docs/benchmarks.md), the
top 10 fill 0.99 of exact BM25's top-10 slots against 0.93 for the FTS5 leg with its cutoff.
FTS5 answers instead while the index is being built (in the background, when a search first
needs it), when more than ``FRESH_MAX`` memories changed since its horizon, when the filter
narrows by anything but the tier, and when the deleted memories are searched too.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from kioku.storage.records import ScoredId
from kioku.storage.shared import lexical_sidecar as shared
from kioku.storage.shared.legs import LegScope
from kioku.storage.shared.lexical_index import IndexedRow, WorkspaceIndex
from kioku.storage.shared.lexical_sidecar import DEPTH_FACTOR, FRESH_MAX, MIN_DEPTH, MIN_MEMORIES
from kioku.storage.sqlite.bm25 import DocumentFrequencies, rescore
from kioku.storage.sqlite.connection import SQLiteDatabase
from kioku.storage.sqlite.filters import chunked, filter_sql, placeholders
from kioku.storage.sqlite.lexical import is_missing_table, lexical_table

__all__ = ["FRESH_MAX", "MIN_MEMORIES", "LexicalSidecar"]

_ROWS = (
    "SELECT CAST(m.seq AS TEXT) AS key, m.context_id, m.trust_tier, "
    "m.deleted_at IS NULL AND f.c0 IS NOT NULL AS live, coalesce(f.c0, '') AS body "
    "FROM memories m LEFT JOIN {table}_content f ON f.id = m.seq WHERE m.workspace_id = ? AND "
)
"""A snapshot's read of rows (the condition follows): what the index adds, and liveness (the
FTS5 content table's ``c0`` is a row's tokens)."""
CACHE_KIB = 2048
"""The page cache of the index's own connection (SQLite's default size)."""
CHANGED_SINCE = (
    "SELECT seq FROM memories WHERE workspace_id = ? AND lexical_change > ? "
    "ORDER BY lexical_change LIMIT ?"
)
"""The memories of a workspace changed after a horizon (at most a limit of them)."""


class _SQLiteSnapshot:
    """One read transaction of a workspace (``lexical_index.Snapshot``); its horizon is the
    clock of migration 0020 as this snapshot sees it."""

    def __init__(self, conn: sqlite3.Connection, workspace_id: str) -> None:
        self.conn, self.workspace_id = conn, workspace_id
        (self.horizon,) = conn.execute("SELECT value FROM lexical_clock WHERE id = 1").fetchone()
        self.rows = _ROWS.format(table=lexical_table(workspace_id))

    def live(self) -> Iterator[IndexedRow]:
        yield from self._read("m.deleted_at IS NULL", ())

    def changed(self, since: int, named: Sequence[str]) -> Iterator[IndexedRow]:
        for chunk in chunked(list(named)):
            yield from self._read(
                f"m.seq IN ({placeholders(chunk)}) "
                "AND (m.lexical_change IS NULL OR m.lexical_change <= ?)",
                (*chunk, since),
            )
        yield from self._read("m.lexical_change > ? ORDER BY m.lexical_change", (since,))

    def _read(self, condition: str, params: Sequence[object]) -> Iterator[IndexedRow]:
        try:
            yield from self.conn.execute(self.rows + condition, (self.workspace_id, *params))
        except sqlite3.OperationalError as exc:
            if not is_missing_table(exc, lexical_table(self.workspace_id) + "_content"):
                raise  # else the workspace never stored a memory: nothing to index


class SQLiteIndexSource:
    """``lexical_index.IndexSource`` on SQLite: a read transaction on a connection of its own
    with a small page cache (``CACHE_KIB``). On the reading thread's own connection, building
    a 100,000-memory index left that connection's cache (up to 64 MiB) full of rows the server
    never reads again: 835 MB resident after 201 recalls against 727 without the index."""

    def __init__(self, db: SQLiteDatabase) -> None:
        self.db = db
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @contextmanager
    def snapshot(self, workspace_id: str) -> Iterator[_SQLiteSnapshot]:
        with self._lock:  # one snapshot at a time on the one connection
            if self._conn is None:
                self._conn = self.db.open(cache_kib=CACHE_KIB)
            conn = self._conn
            conn.execute("BEGIN")
            try:
                yield _SQLiteSnapshot(conn, workspace_id)
            finally:
                conn.execute("COMMIT")


class LexicalSidecar(shared.LexicalSidecar):
    """This process's indexes (``shared/lexical_sidecar.py``), answering SQLite's leg."""

    def __init__(
        self, db: SQLiteDatabase, min_memories: int = MIN_MEMORIES,
        interval: float = shared.SYNC_INTERVAL,
    ) -> None:  # fmt: skip
        super().__init__(SQLiteIndexSource(db), min_memories, interval)
        self.db = db

    def answer(
        self, scope: LegScope, terms: Sequence[str], term_counts: DocumentFrequencies
    ) -> list[ScoredId] | None:
        """``search`` on the workspace's index once built (else ``None``: FTS5 answers),
        counted in ``answered``."""
        return self.consult(
            scope.workspace_id, lambda index: self.search(index, scope, terms, term_counts)
        )

    def search(
        self,
        index: WorkspaceIndex,
        scope: LegScope,
        terms: Sequence[str],
        term_counts: DocumentFrequencies,
    ) -> list[ScoredId] | None:
        """The top ``scope.limit`` hits of the scope, scored as the FTS5 leg scores them, or
        ``None`` when FTS5 must answer (too much changed since the index's horizon)."""
        view = index.view
        if view is None:
            return None
        workspace_id, context_ids, flt, limit = scope
        conn = self.db.connection()
        fresh = conn.execute(CHANGED_SINCE, (workspace_id, view.horizon, FRESH_MAX + 1)).fetchall()
        if len(fresh) > FRESH_MAX:
            return None
        depth = max(MIN_DEPTH, int(DEPTH_FACTOR * limit))
        proposed = {int(key) for key in index.top(view, terms, context_ids, depth, flt.trust_tier)}
        candidates = sorted(proposed | {seq for (seq,) in fresh})
        where, params = filter_sql(workspace_id, context_ids, flt, by_rowid=True)
        found: set[int] = set()
        passing: dict[int, str] = {}
        for chunk in chunked([str(seq) for seq in candidates]):
            for seq, memory_id, passes in conn.execute(
                f"SELECT m.seq, m.id, ({where}) FROM memories m "
                f"WHERE m.seq IN ({placeholders(chunk)})",
                (*params, *chunk),
            ):
                found.add(seq)
                if passes:
                    passing[seq] = memory_id
        gone = proposed - found
        if gone:  # deleted outright since the index read them
            index.forget(str(seq) for seq in gone)
        table = lexical_table(workspace_id)
        scores = rescore(conn, table, list(passing), terms, term_counts)
        hits = [ScoredId(passing[seq], score) for seq, score in scores.items() if score > 0]
        hits.sort(key=lambda hit: (-hit.score, hit.memory_id))
        return hits[:limit]
