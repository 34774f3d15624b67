"""The SQLite backend's in-process vector index: a rebuildable cache of vectors in the database.

The database is the source of truth. Each context carries a ``vector_generation`` counter that
every vector change bumps inside its write transaction; the index (in memory and in its cache
file) remembers the generation it reflects. Any mismatch (a crash, another process writing)
means stale: the index is reconciled with the database row by row (every vector compared,
the missing added, the gone removed), never trusted blindly.

Up to ``EXACT_MAX`` vectors a context is searched exactly (one float32 matrix product). Above
that an HNSW graph (``vector_graph.py``) proposes candidates and the matrix scores them, so
scores are exact cosines either way and ties are broken by id. The graph is built on a
background thread the first time a large context is searched (at 100k vectors that takes
minutes on 2 cores); until it is ready the exact search answers. It then follows every change
incrementally, and is persisted with the matrix in the context's one cache file, so a restart
does not build it again and a stale file's graph is reused after reconciling.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import zipfile
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from kioku.storage.private_files import private_directory, private_opener, tighten
from kioku.storage.vector_graph import FORMAT, HnswGraph

log = logging.getLogger(__name__)

EXACT_MAX = 20_000
"""Up to this many vectors in a context, search is exact: at 20k the matrix product costs
~3 ms, and a graph would trade recall for a millisecond or two (docs/scaling.md)."""
CANDIDATE_MARGIN = 16
"""Candidates asked of the graph beyond ``limit``, so ties at the cut are resolved by id."""
FILTER_ROUNDS = 2
"""Filtered graph searches (each 4 times wider) before the exact search answers instead."""
RECONCILE_MAX_SHARE = 0.1
"""A stale index differing from the database in more than this share of its rows drops its
graph (rebuilt in the background) rather than patching it one row at a time."""


class ContextVectors:
    """One context's unit vectors: exact (brute-force cosine) search, HNSW above a size."""

    def __init__(
        self,
        dim: int,
        generation: int,
        ids: list[str] | None = None,
        matrix: np.ndarray | None = None,
        *,
        exact_max: int | None = None,
        graph: HnswGraph | None = None,
        background: bool = True,
        on_graph_built: Callable[[ContextVectors], None] | None = None,
    ) -> None:
        self.dim = dim
        self.generation = generation
        self.ids: list[str] = list(ids or [])
        if matrix is None or matrix.shape[1:] != (dim,):
            matrix = np.zeros((max(len(self.ids), 16), dim), dtype=np.float32)
        self.matrix = matrix
        self.positions = {memory_id: i for i, memory_id in enumerate(self.ids)}
        self.exact_max = EXACT_MAX if exact_max is None else exact_max
        self.graph = graph
        self.background = background
        self.on_graph_built = on_graph_built
        self.lock = threading.RLock()
        self._builder: threading.Thread | None = None
        self._touched: set[str] | None = None  # changed while a graph is being built

    @property
    def size(self) -> int:
        return len(self.ids)

    # ------------------------------------------------------------ changes

    def upsert(self, memory_id: str, vector: np.ndarray) -> None:
        with self.lock:
            row = self.positions.get(memory_id)
            if row is None:
                row = len(self.ids)
                if row >= self.matrix.shape[0]:
                    grown = np.zeros(
                        (max(16, 2 * self.matrix.shape[0]), self.dim), dtype=np.float32
                    )
                    grown[:row] = self.matrix[:row]
                    self.matrix = grown
                self.ids.append(memory_id)
                self.positions[memory_id] = row
            self.matrix[row] = vector
            if self.graph is not None:
                self.graph.add([memory_id], self.matrix[row : row + 1])
            if self._touched is not None:
                self._touched.add(memory_id)

    def remove(self, memory_id: str) -> None:
        with self.lock:
            row = self.positions.pop(memory_id, None)
            if row is None:
                return
            last = len(self.ids) - 1
            if row != last:  # move the last row into the hole
                moved = self.ids[last]
                self.ids[row] = moved
                self.matrix[row] = self.matrix[last]
                self.positions[moved] = row
            self.ids.pop()
            if self.graph is not None:
                self.graph.remove(memory_id)
                if self.size < self.exact_max // 2:
                    self.graph = None  # exact from here on; a graph is rebuilt if it grows
            if self._touched is not None:
                self._touched.add(memory_id)

    def reconcile(self, rows: Iterable[tuple[str, np.ndarray]], generation: int) -> None:
        """Make this index hold exactly ``rows`` (the database's) and call it ``generation``."""
        with self.lock:
            wanted: dict[str, np.ndarray] = dict(rows)
            gone = [memory_id for memory_id in self.ids if memory_id not in wanted]
            changed = [
                (memory_id, vector)
                for memory_id, vector in wanted.items()
                if (row := self.positions.get(memory_id)) is None
                or not np.array_equal(self.matrix[row], vector)
            ]
            if len(gone) + len(changed) > RECONCILE_MAX_SHARE * max(self.size, 1):
                self.graph = None  # cheaper to build afresh than to patch row by row
            for memory_id in gone:
                self.remove(memory_id)
            for memory_id, vector in changed:
                self.upsert(memory_id, vector)
            self.generation = generation

    # ------------------------------------------------------------ search

    def search(
        self, query: np.ndarray, limit: int, allowed: Collection[str] | None = None
    ) -> list[tuple[str, float]]:
        """Top ``limit`` by cosine (vectors are unit length) among ``allowed`` (every id when
        ``None``); ties broken by id."""
        query = query.astype(np.float32, copy=False)
        with self.lock:
            n = self.size
            if n == 0 or limit <= 0:
                return []
            if allowed is not None and len(allowed) <= self.exact_max:
                return self._exact_among(query, limit, allowed)  # a few rows: score them all
            graph = self._graph_for_search()
            if graph is not None:
                hits = self._approximate(graph, query, limit, allowed)
                if hits is not None:
                    return hits
            return self._exact(query, limit, allowed)

    def ensure_graph(self, timeout: float | None = None) -> HnswGraph | None:
        """The graph, built now if the context is large enough and has none (waiting for a
        background build); ``None`` for a context searched exactly."""
        with self.lock:
            self._graph_for_search()
        return self.wait_for_graph(timeout)

    def wait_for_graph(self, timeout: float | None = None) -> HnswGraph | None:
        """The graph once a background build has finished (tests, benchmarks)."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
        return self.graph

    def _graph_for_search(self) -> HnswGraph | None:
        """The graph to search, starting a build when the context is large and has none (or
        a worn one); ``None`` means exact (small context, or a build still running)."""
        if self.size <= self.exact_max:
            return None
        graph = self.graph
        if (graph is None or graph.is_worn) and self._builder is None:
            self._touched = set()
            if self.background:
                self._builder = threading.Thread(
                    target=self._build_graph, name="kioku-hnsw-build", daemon=True
                )
                self._builder.start()
            else:
                self._build_graph()
            graph = self.graph
        return graph

    def _build_graph(self) -> None:
        with self.lock:
            ids = list(self.ids)
            matrix = self.matrix[: len(ids)].copy()
        try:
            graph = HnswGraph.build(self.dim, ids, matrix)  # without the lock: searches go on
        except Exception:
            log.exception("could not build the HNSW graph; the exact search goes on")
            graph = None
        with self.lock:
            touched, self._touched, self._builder = self._touched or set(), None, None
            if graph is None or self.size <= self.exact_max:
                return
            for memory_id in sorted(touched):  # what changed during the build
                row = self.positions.get(memory_id)
                if row is None:
                    graph.remove(memory_id)
                else:
                    graph.add([memory_id], self.matrix[row : row + 1])
            self.graph = graph
        if self.on_graph_built is not None:
            self.on_graph_built(self)

    def _approximate(
        self, graph: HnswGraph, query: np.ndarray, limit: int, allowed: Collection[str] | None
    ) -> list[tuple[str, float]] | None:
        """The graph's candidates scored exactly; ``None`` when they cannot fill ``limit``
        (a filter the graph walk rarely meets: the exact search answers instead)."""
        want = limit + CANDIDATE_MARGIN
        count = want
        if allowed is not None:  # oversample by the filter's selectivity
            count = min(self.size, math.ceil(want * self.size / max(len(allowed), 1)))
        for _ in range(FILTER_ROUNDS):
            found = [
                memory_id
                for memory_id in graph.search(query, count)
                if memory_id in self.positions and (allowed is None or memory_id in allowed)
            ]
            if len(found) >= min(limit, self.size):
                return self._scored(found, query)[:limit]
            if count >= self.size:
                break
            count = min(self.size, count * 4)
        return None

    def _scored(self, ids: list[str], query: np.ndarray) -> list[tuple[str, float]]:
        rows = [self.positions[memory_id] for memory_id in ids]
        scores = self.matrix[rows] @ query
        hits = [(memory_id, float(score)) for memory_id, score in zip(ids, scores, strict=True)]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits

    def _exact_among(
        self, query: np.ndarray, limit: int, allowed: Collection[str]
    ) -> list[tuple[str, float]]:
        ids = [memory_id for memory_id in allowed if memory_id in self.positions]
        return self._scored(ids, query)[:limit] if ids else []

    def _exact(
        self, query: np.ndarray, limit: int, allowed: Collection[str] | None
    ) -> list[tuple[str, float]]:
        n = self.size
        scores = self.matrix[:n] @ query
        if allowed is None:
            return self._top(scores, limit)
        # Filters can be selective: walk down the ranking until enough allowed ids are found.
        order = np.argsort(-scores, kind="stable")
        hits: list[tuple[str, float]] = []
        for row in order:
            memory_id = self.ids[row]
            if memory_id in allowed:
                hits.append((memory_id, float(scores[row])))
                if len(hits) >= limit + CANDIDATE_MARGIN:
                    break
        return sorted(hits, key=lambda hit: (-hit[1], hit[0]))[:limit]

    def _top(self, scores: np.ndarray, limit: int) -> list[tuple[str, float]]:
        if limit < scores.shape[0]:
            # Take a margin so ties at the cut are resolved by id, deterministically.
            cut = min(scores.shape[0], limit + CANDIDATE_MARGIN)
            rows = np.argpartition(-scores, cut - 1)[:cut]
        else:
            rows = np.arange(scores.shape[0])
        hits = [(self.ids[row], float(scores[row])) for row in rows]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:limit]


class VectorIndexCache:
    """Holds ``ContextVectors`` per context and persists them beside the database.

    ``exact_max`` overrides ``EXACT_MAX`` (tests cross it with small data); ``background=False``
    builds graphs on the searching thread instead (tests that need the graph at once).
    """

    def __init__(
        self, directory: Path | None, *, exact_max: int | None = None, background: bool = True
    ) -> None:
        self.directory = directory
        if directory is not None and directory.exists():  # files of an older kioku: tighten
            private_directory(directory, owned=True)
            for cached in directory.iterdir():
                tighten(cached)
        self.exact_max = exact_max
        self.background = background
        self._indexes: dict[str, ContextVectors] = {}
        self._lock = threading.RLock()
        self.rebuilds = 0

    def get(
        self,
        context_id: str,
        generation: int,
        load: Callable[[], tuple[int, Iterable[tuple[str, np.ndarray]]]],
    ) -> ContextVectors | None:
        """The index of a context at ``generation``: from memory or the cache file as they
        are, or reconciled with (or rebuilt from) the database when stale."""
        with self._lock:
            index = self._indexes.get(context_id)
            if index is not None and index.generation == generation:
                return index
            if index is None:
                index = self._read_file(context_id, None)
            if index is None or index.generation != generation:
                dim, rows = load()
                if dim <= 0:
                    return None
                if index is not None and index.dim == dim:
                    index.reconcile(rows, generation)
                else:
                    index = self._new_index(context_id, dim, generation)
                    for memory_id, vector in rows:
                        index.upsert(memory_id, vector)
                self.rebuilds += 1
                self._write_file(context_id, index)
            self._indexes[context_id] = index
            return index

    def apply(
        self,
        context_id: str,
        new_generation: int,
        upserts: Iterable[tuple[str, np.ndarray]] = (),
        removals: Iterable[str] = (),
    ) -> None:
        """Apply a change if the index is exactly one generation behind; else leave it stale
        (the next search reconciles it with the database)."""
        with self._lock:
            index = self._indexes.get(context_id)
            if index is None:
                return
            with index.lock:
                if index.generation != new_generation - 1:
                    index.generation = -1  # stale whatever happens next
                    return
                upserts = list(upserts)
                if any(vector.shape != (index.dim,) for _, vector in upserts):
                    del self._indexes[context_id]
                    return
                for memory_id in removals:
                    index.remove(memory_id)
                for memory_id, vector in upserts:
                    index.upsert(memory_id, vector)
                index.generation = new_generation

    def forget(self, context_id: str) -> None:
        """Drop a context's index from memory and disk."""
        with self._lock:
            index = self._indexes.pop(context_id, None)
            if index is not None:
                with index.lock:  # a graph still being built must not write its file again
                    index.on_graph_built = None
                    index.generation = -1
            if self.directory is not None:
                for suffix in _CACHE_SUFFIXES:
                    (self.directory / f"{context_id}{suffix}").unlink(missing_ok=True)

    def flush(self) -> None:
        """Write every in-memory index to its cache file (on shutdown)."""
        with self._lock:
            for context_id, index in self._indexes.items():
                self._write_file(context_id, index)

    def _new_index(
        self,
        context_id: str,
        dim: int,
        generation: int,
        ids: list[str] | None = None,
        matrix: np.ndarray | None = None,
        graph: HnswGraph | None = None,
    ) -> ContextVectors:
        return ContextVectors(
            dim,
            generation,
            ids,
            matrix,
            exact_max=self.exact_max,
            graph=graph,
            background=self.background,
            on_graph_built=lambda index: self._write_file(context_id, index),
        )

    def _path(self, context_id: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / f"{context_id}.npz"

    def _read_file(self, context_id: str, generation: int | None) -> ContextVectors | None:
        """The cache file's index, if whole and (unless ``generation`` is ``None``) at
        ``generation``; its graph only if it holds exactly the file's rows."""
        path = self._path(context_id)
        if path is None or not path.exists():
            return None
        try:
            with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as data:
                found = int(data["generation"])
                if generation is not None and found != generation:
                    return None
                # A fresh, writable array already (read from the zip, not mapped): no copy.
                matrix = np.asarray(data["matrix"], dtype=np.float32)
                ids = [str(memory_id) for memory_id in data["ids"]]
                dim = int(data["dim"])
                graph_blob = data["graph"] if "graph" in data.files else None
                keys = data["graph_keys"] if "graph_keys" in data.files else None
                graph_format = int(data["graph_format"]) if "graph_format" in data.files else 0
            if matrix.shape != (len(ids), dim):
                return None
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return None  # a torn or foreign file is just a stale cache
        graph = None
        if graph_blob is not None and keys is not None and graph_format == FORMAT:
            graph = _read_graph(ids, matrix, keys, graph_blob)
        return self._new_index(context_id, dim, found, ids, matrix, graph)

    def _write_file(self, context_id: str, index: ContextVectors) -> None:
        """One file per context, written whole under a name of its own and then renamed: the
        matrix, its ids, its graph and its generation can never come from two different
        writers (several processes on one database file write the cache too). A failure
        only costs a rebuild."""
        path = self._path(context_id)
        if path is None:
            return
        with index.lock:  # a consistent snapshot; the writing happens outside the lock
            arrays: dict[str, Any] = {
                "matrix": index.matrix[: index.size].copy(),
                "ids": np.array(index.ids, dtype=np.str_),
                "generation": np.int64(index.generation),
                "dim": np.int64(index.dim),
            }
            if index.graph is not None:
                arrays["graph"] = index.graph.to_bytes()
                arrays["graph_keys"] = np.array(
                    [index.graph.key_of[memory_id] for memory_id in index.ids], dtype=np.uint64
                )
                arrays["graph_format"] = np.int64(FORMAT)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            private_directory(path.parent, owned=True)
            with open(tmp, "wb", opener=private_opener) as handle:
                np.savez(handle, **arrays)
            os.replace(tmp, path)
        except OSError:
            log.warning("could not write the vector index cache %s", path, exc_info=True)
            tmp.unlink(missing_ok=True)


def _read_graph(
    ids: list[str], matrix: np.ndarray, keys: np.ndarray, blob: np.ndarray
) -> HnswGraph | None:
    """A persisted graph if it holds exactly ``ids`` (rows of ``matrix``) under ``keys``; else
    ``None`` (rebuilt in the background)."""
    if keys.shape != (len(ids),):
        return None
    key_of = dict(zip(ids, (int(key) for key in keys), strict=True))
    if len(set(key_of.values())) != len(key_of):
        return None
    try:
        return HnswGraph.from_bytes(blob, key_of, ids, matrix)
    except (RuntimeError, ValueError):
        return None


_CACHE_SUFFIXES = (".npz", ".npy", ".json")
"""The cache file, and the two files of the format before it (removed with the context)."""
