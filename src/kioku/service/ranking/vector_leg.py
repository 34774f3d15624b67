"""The vector leg of a recall, started before its scope is known (stage ``legs``).

The query embedding needs nothing but the query's text, so recall starts it on a pool thread
first thing (``service/recall.py``); once the scope is read, the same thread searches the
vectors on its own connection while the lexical leg runs on the recall's thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from kioku.embeddings import Embedder
from kioku.storage.records import ScoredId

_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kioku-recall")

Search = Callable[[np.ndarray], list[ScoredId]]


class VectorLeg:
    """The vector leg, started before the scope is known: the query is embedded at once on a
    pool thread, which then waits for ``search`` (the nearest-neighbour search over the scope)
    or ``skip`` (no context to search: only the embedding is kept, for the stages that use it).

    Nothing in the pool waits on another pool task, so a full pool only queues recalls."""

    def __init__(self, embedder: Embedder, text: str) -> None:
        self._began = time.perf_counter()
        self._took = 0.0
        self._search: Future[Search | None] = Future()
        self._leg = _POOL.submit(self._run, embedder, text)

    def _run(self, embedder: Embedder, text: str) -> tuple[np.ndarray, list[ScoredId] | None]:
        vector = embedder.embed_query(text)
        search = self._search.result()
        found = None if search is None else search(vector)
        self._took = time.perf_counter() - self._began
        return vector, found

    def search(self, search: Search) -> None:
        """Search the vectors with ``search`` once the query is embedded."""
        if not self._search.done():
            self._search.set_result(search)

    def skip(self) -> None:
        """No vector search (no context to search, the recall failed): embedding only."""
        if not self._search.done():
            self._search.set_result(None)

    def done(self) -> bool:
        """Whether the leg has finished (its result will not wait)."""
        return self._leg.done()

    def result(self) -> tuple[np.ndarray, list[ScoredId] | None, float]:
        """(query vector, candidates or ``None`` when skipped, the seconds the leg took: from
        its start to the end of its search, not counting a wait for the lexical leg)."""
        vector, found = self._leg.result()
        return vector, found, self._took
