"""The SQLite backend's in-process vector index: a rebuildable cache of vectors in the database.

The database is the source of truth. Each context carries a ``vector_generation`` counter that
every vector change bumps inside its write transaction; the index (in memory and in its cache
file) remembers the generation it reflects. Any mismatch (a crash, another process writing)
means stale: the index is rebuilt from the database, never trusted blindly.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


@dataclass
class ContextVectors:
    """Exact (brute-force cosine) index over one context's unit vectors."""

    dim: int
    generation: int
    ids: list[str] = field(default_factory=list)
    matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    positions: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.matrix.shape[1:] != (self.dim,):
            self.matrix = np.zeros((max(len(self.ids), 16), self.dim), dtype=np.float32)
        self.positions = {memory_id: i for i, memory_id in enumerate(self.ids)}

    @property
    def size(self) -> int:
        return len(self.ids)

    def upsert(self, memory_id: str, vector: np.ndarray) -> None:
        row = self.positions.get(memory_id)
        if row is None:
            row = len(self.ids)
            if row >= self.matrix.shape[0]:
                grown = np.zeros((max(16, 2 * self.matrix.shape[0]), self.dim), dtype=np.float32)
                grown[:row] = self.matrix[:row]
                self.matrix = grown
            self.ids.append(memory_id)
            self.positions[memory_id] = row
        self.matrix[row] = vector

    def remove(self, memory_id: str) -> None:
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

    def search(
        self, query: np.ndarray, limit: int, allowed: Callable[[str], bool] | None
    ) -> list[tuple[str, float]]:
        """Top ``limit`` by cosine (vectors are unit length); ties broken by id."""
        n = self.size
        if n == 0 or limit <= 0:
            return []
        scores = self.matrix[:n] @ query.astype(np.float32, copy=False)
        if allowed is None:
            return self._top(scores, limit)
        # Filters can be selective: walk down the ranking until enough allowed ids are found.
        order = np.argsort(-scores, kind="stable")
        hits: list[tuple[str, float]] = []
        for row in order:
            memory_id = self.ids[row]
            if allowed(memory_id):
                hits.append((memory_id, float(scores[row])))
                if len(hits) >= limit:
                    break
        return sorted(hits, key=lambda hit: (-hit[1], hit[0]))

    def _top(self, scores: np.ndarray, limit: int) -> list[tuple[str, float]]:
        if limit < scores.shape[0]:
            # Take a margin so ties at the cut are resolved by id, deterministically.
            cut = min(scores.shape[0], limit + 16)
            rows = np.argpartition(-scores, cut - 1)[:cut]
        else:
            rows = np.arange(scores.shape[0])
        hits = [(self.ids[row], float(scores[row])) for row in rows]
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:limit]


class VectorIndexCache:
    """Holds ``ContextVectors`` per context and persists them beside the database."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._indexes: dict[str, ContextVectors] = {}
        self._lock = threading.RLock()
        self.rebuilds = 0

    def get(
        self,
        context_id: str,
        generation: int,
        load: Callable[[], tuple[int, Iterable[tuple[str, np.ndarray]]]],
    ) -> ContextVectors | None:
        """The index of a context at ``generation``: from memory, the cache file, or rebuilt."""
        with self._lock:
            index = self._indexes.get(context_id)
            if index is not None and index.generation == generation:
                return index
            index = self._read_file(context_id, generation)
            if index is None:
                dim, rows = load()
                if dim <= 0:
                    return None
                index = ContextVectors(dim=dim, generation=generation)
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
        """Apply a committed change if the index is exactly one generation behind; else drop it."""
        with self._lock:
            index = self._indexes.get(context_id)
            if index is None:
                return
            if index.generation != new_generation - 1:
                del self._indexes[context_id]
                return
            for memory_id in removals:
                index.remove(memory_id)
            for memory_id, vector in upserts:
                if vector.shape != (index.dim,):
                    del self._indexes[context_id]
                    return
                index.upsert(memory_id, vector)
            index.generation = new_generation

    def forget(self, context_id: str) -> None:
        """Drop a context's index from memory and disk."""
        with self._lock:
            self._indexes.pop(context_id, None)
            if self.directory is not None:
                for suffix in _CACHE_SUFFIXES:
                    (self.directory / f"{context_id}{suffix}").unlink(missing_ok=True)

    def flush(self) -> None:
        """Write every in-memory index to its cache file (on shutdown)."""
        with self._lock:
            for context_id, index in self._indexes.items():
                self._write_file(context_id, index)

    def _path(self, context_id: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / f"{context_id}.npz"

    def _read_file(self, context_id: str, generation: int) -> ContextVectors | None:
        path = self._path(context_id)
        if path is None or not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as data:
                if int(data["generation"]) != generation:
                    return None
                matrix = np.array(data["matrix"], dtype=np.float32)
                ids = [str(memory_id) for memory_id in data["ids"]]
                dim = int(data["dim"])
            if matrix.shape != (len(ids), dim):
                return None
        except (OSError, ValueError, KeyError, EOFError):
            return None  # a torn or foreign file is just a stale cache
        return ContextVectors(dim=dim, generation=generation, ids=ids, matrix=matrix)

    def _write_file(self, context_id: str, index: ContextVectors) -> None:
        """One file per context, written whole under a name of its own and then renamed: the
        matrix, its ids and its generation can never come from two different writers (several
        processes on one database file write the cache too). A failure only costs a rebuild."""
        path = self._path(context_id)
        if path is None:
            return
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as handle:
                np.savez(
                    handle,
                    matrix=index.matrix[: index.size],
                    ids=np.array(index.ids, dtype=np.str_),
                    generation=np.int64(index.generation),
                    dim=np.int64(index.dim),
                )
            os.replace(tmp, path)
        except OSError:
            log.warning("could not write the vector index cache %s", path, exc_info=True)
            tmp.unlink(missing_ok=True)


_CACHE_SUFFIXES = (".npz", ".npy", ".json")
"""The cache file, and the two files of the format before it (removed with the context)."""
