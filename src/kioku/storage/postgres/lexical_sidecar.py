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

Each replica keeps its own indexes in memory and syncs them every ``interval`` seconds on
one background thread; nothing is shared between replicas but the database.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, LiteralString

from psycopg import Connection
from psycopg.rows import DictRow

from kioku.storage.postgres.connection import PostgresDatabase
from kioku.storage.postgres.lexical_index import BuildStopped, WorkspaceIndex
from kioku.storage.postgres.lexical_scoring import EXACT_SCORE, K1, B, top_scored
from kioku.storage.records import MemoryFilter

log = logging.getLogger(__name__)

MIN_MEMORIES = 50_000
"""The default scope size from which the index answers (``KIOKU_LEXICAL_INDEX_MIN``)."""
MIN_DEPTH = 100
"""The fewest candidates asked of the index."""
DEPTH_FACTOR = 2.5
"""Candidates asked of the index per memory the leg returns."""
FRESH_MAX = 2_000
"""Above this many memories changed since the index's horizon, the GIN leg answers (each
costs the re-score ~0.012 ms at 1M: 1,000 unsynced writes added ~12 ms to a search's p50)."""
SYNC_INTERVAL = 0.5
"""Seconds between two syncs of every index."""
REBUILD_SLACK = 100_000
"""An index is rebuilt once its rows (one per version indexed) pass twice its live memories
plus this many."""
RETRY_AFTER = 60.0
"""Seconds before an index whose build failed is tried again (the GIN leg answers meanwhile)."""


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


class LexicalSidecar:
    """This replica's indexes, one per workspace that searched a large scope."""

    def __init__(
        self, db: PostgresDatabase, min_memories: int = MIN_MEMORIES,
        interval: float = SYNC_INTERVAL,
    ) -> None:  # fmt: skip
        """``min_memories``: the scope size from which it answers (0: never; also when the
        ``tantivy`` package is missing, said once in the log)."""
        if min_memories > 0 and importlib.util.find_spec("tantivy") is None:
            log.warning("the tantivy package is missing: large scopes use the GIN leg "
                        "(pip install 'kioku-memory-server[postgres]')")  # fmt: skip
            min_memories = 0
        self.db, self.min_memories, self.interval = db, min_memories, interval
        self._indexes: dict[str, WorkspaceIndex] = {}
        self._wanted: list[str] = []
        self._failed: dict[str, float] = {}
        """Workspace -> when its build failed (``time.monotonic``)."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.answered = {"index": 0, "database": 0}
        """Searches of a large scope answered by the index, and by the GIN leg instead (the
        index being built, or too many changes unsynced): ``/metrics`` reports both."""

    def applies(self, scope_size: int, flt: MemoryFilter) -> bool:
        """Whether a search of ``scope_size`` live memories with ``flt`` goes to the index."""
        narrowing = replace(flt, trust_tier=None).is_narrowing  # the index holds the tier
        return 0 < self.min_memories <= scope_size and not narrowing

    def ready(self, workspace_id: str) -> WorkspaceIndex | None:
        """The workspace's index once built; else ``None``, and its build is queued."""
        with self._lock:
            index = self._indexes.get(workspace_id)
            if index is not None and index.view is not None:
                return index
            failed = self._failed.get(workspace_id)
            if failed is not None and time.monotonic() - failed < RETRY_AFTER:
                return None
            if workspace_id in self._wanted or index is not None:
                return None  # queued, or being built
            self._wanted.append(workspace_id)
            self._start()
        self._wake.set()
        return None

    def wait_ready(self, workspace_id: str, timeout: float) -> bool:
        """Queue the workspace's index and wait up to ``timeout`` seconds for it."""
        started = time.monotonic()
        while self.ready(workspace_id) is None:
            failed = self._failed.get(workspace_id)
            if (failed is not None and failed >= started) or time.monotonic() > started + timeout:
                return False
            time.sleep(0.05)
        return True

    def answer(
        self, conn: Connection[DictRow], workspace_id: str, query: ScopedQuery
    ) -> list[tuple[str, float]] | None:
        """``search`` on the workspace's index once built (else ``None``: the GIN leg
        answers), counted in ``answered``."""
        index = self.ready(workspace_id)
        found = None if index is None else self.search(conn, index, query)
        with self._lock:
            self.answered["database" if found is None else "index"] += 1
        return found

    def stats(self) -> dict[str, float]:
        """The built indexes, the memories they hold, and the oldest sync's age (seconds)."""
        with self._lock:
            built = [index for index in self._indexes.values() if index.view is not None]
        now = time.monotonic()
        return {
            "workspaces": len(built),
            "memories": sum(index.size() for index in built),
            "sync_age_seconds": max((now - index.synced_at for index in built), default=0.0),
        }

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

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=10)

    def _start(self) -> None:
        """Start the background thread (called under the lock)."""
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(
                target=self._run, name="kioku-lexical-index", daemon=True
            )
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._build_wanted()
            for index in list(self._indexes.values()):
                if self._stop.is_set():
                    return
                if index.view is None:
                    continue
                try:
                    index.sync(self.db)
                except Exception:  # the next round retries; the GIN leg answers meanwhile
                    log.exception("syncing the lexical index of %s", index.workspace_id)
                if len(index.ids) > 2 * index.size() + REBUILD_SLACK:
                    self._rebuild(index)
            self._wake.wait(self.interval)
            self._wake.clear()

    def _rebuild(self, old: WorkspaceIndex) -> None:
        """Replace an index whose rows are mostly dead (every edit adds a row, and ``ids``
        never shrinks) with a new build; the old one answers until then."""
        try:
            index = WorkspaceIndex(old.workspace_id)
            index.build(self.db, self._stop)
        except BuildStopped:
            return
        except Exception:
            log.exception("rebuilding the lexical index of %s", old.workspace_id)
            return
        with self._lock:
            self._indexes[old.workspace_id] = index

    def _build_wanted(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                if not self._wanted:
                    return
                workspace_id = self._wanted[0]
            began = time.perf_counter()
            try:
                index = WorkspaceIndex(workspace_id)
                with self._lock:
                    self._indexes[workspace_id] = index
                count = index.build(self.db, self._stop)
            except BuildStopped:
                return
            except Exception:
                log.exception("building the lexical index of %s", workspace_id)
                with self._lock:
                    self._indexes.pop(workspace_id, None)
                    self._failed[workspace_id] = time.monotonic()
            else:
                log.info("lexical index of %s: %d memories in %.1f s", workspace_id, count,
                         time.perf_counter() - began)  # fmt: skip
            with self._lock:
                self._wanted.remove(workspace_id)
