"""This process's lexical indexes of large scopes (``lexical_index.WorkspaceIndex``, one per
workspace that searched one), built and synced on one background thread: what both backends'
lexical legs ask for candidates in a large scope (``postgres/lexical_sidecar.py``,
``sqlite/lexical_sidecar.py``; each scores the candidates exactly in its database).

A search of a scope holding at least ``min_memories`` memories, with a filter that narrows
nothing but the trust tier (``MemoryFilter.is_narrowing``; the index holds each memory's
tier), is answered from the workspace's index once it is built. The first such search queues
the build and the database's own leg answers until it is done; so it does when more than
``FRESH_MAX`` memories changed since the index's horizon (a bulk load the sync has not caught
up with) and after a failed build, for ``RETRY_AFTER`` seconds. Each process keeps its own
indexes in memory and syncs them every ``interval`` seconds; nothing is shared between
processes but the database.
"""

from __future__ import annotations

import importlib.util
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from kioku.storage.records import LexicalIndexStatistics, MemoryFilter
from kioku.storage.shared.lexical_index import BuildStopped, IndexSource, WorkspaceIndex

log = logging.getLogger(__name__)

MIN_MEMORIES = 50_000
"""The default scope size from which the index answers (``KIOKU_LEXICAL_INDEX_MIN``)."""
MIN_DEPTH = 100
"""The fewest candidates asked of the index."""
DEPTH_FACTOR = 2.5
"""Candidates asked of the index per memory the leg returns."""
FRESH_MAX = 2_000
"""Above this many memories changed since the index's horizon, the database's own leg answers
(each is scored beside the index's candidates: on PostgreSQL ~0.012 ms at 1M, 1,000 unsynced
writes added ~12 ms to a search's p50)."""
SYNC_INTERVAL = 0.5
"""Seconds between two syncs of every index."""
REBUILD_SLACK = 100_000
"""An index is rebuilt once its rows (one per version indexed) pass twice its live memories
plus this many."""
RETRY_AFTER = 60.0
"""Seconds before an index whose build failed is tried again (the database answers meanwhile)."""

Found = TypeVar("Found")


class LexicalSidecar:
    """This process's indexes, one per workspace that searched a large scope."""

    def __init__(
        self, source: IndexSource, min_memories: int = MIN_MEMORIES,
        interval: float = SYNC_INTERVAL,
    ) -> None:  # fmt: skip
        """``min_memories``: the scope size from which it answers (0: never; also when the
        ``tantivy`` package is missing, said once in the log)."""
        if min_memories > 0 and importlib.util.find_spec("tantivy") is None:
            log.warning("the tantivy package is missing: large scopes use the database's "
                        "own lexical leg (pip install tantivy)")  # fmt: skip
            min_memories = 0
        self.source, self.min_memories, self.interval = source, min_memories, interval
        self._indexes: dict[str, WorkspaceIndex] = {}
        self._wanted: list[str] = []
        self._failed: dict[str, float] = {}
        """Workspace -> when its build failed (``time.monotonic``)."""
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.answered = {"index": 0, "database": 0}
        """Searches of a large scope answered by the index, and by the database's own leg
        instead (the index being built, or too many changes unsynced): ``/metrics``."""

    def applies(self, scope_size: int, flt: MemoryFilter) -> bool:
        """Whether a search of ``scope_size`` memories with ``flt`` goes to the index."""
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

    def consult(
        self, workspace_id: str, search: Callable[[WorkspaceIndex], Found | None]
    ) -> Found | None:
        """``search`` on the workspace's index once built (else ``None``: the database's own
        leg answers), counted in ``answered``."""
        index = self.ready(workspace_id)
        found = None if index is None else search(index)
        with self._lock:
            self.answered["database" if found is None else "index"] += 1
        return found

    def statistics(self) -> LexicalIndexStatistics:
        """The built indexes, the memories they hold, the oldest sync's age (seconds) and
        ``answered``, as ``/metrics`` and the health report read them."""
        with self._lock:
            built = [index for index in self._indexes.values() if index.view is not None]
            answered = dict(self.answered)
        now = time.monotonic()
        return LexicalIndexStatistics(
            workspaces=len(built),
            memories=sum(index.size() for index in built),
            sync_age_seconds=max((now - index.synced_at for index in built), default=0.0),
            answered=answered,
        )

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
                    index.sync()
                except Exception:  # the next round retries; the database answers meanwhile
                    log.exception("syncing the lexical index of %s", index.workspace_id)
                if len(index.ids) > 2 * index.size() + REBUILD_SLACK:
                    self._rebuild(index)
            self._wake.wait(self.interval)
            self._wake.clear()

    def _rebuild(self, old: WorkspaceIndex) -> None:
        """Replace an index whose rows are mostly dead (every edit adds a row, and ``ids``
        never shrinks) with a new build; the old one answers until then."""
        try:
            index = WorkspaceIndex(old.workspace_id, self.source)
            index.build(self._stop)
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
                index = WorkspaceIndex(workspace_id, self.source)
                with self._lock:
                    self._indexes[workspace_id] = index
                count = index.build(self._stop)
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
